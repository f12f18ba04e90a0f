"""The typed records relaychaos writes and reads: each writes itself as JSON and reads itself back, checked.

    relaychaos.records.results    results.json of a run                  docs/schemas/results.schema.json
    relaychaos.records.grade      grade.json of a graded submission      docs/schemas/grade.schema.json
    relaychaos.records.header     a history's header (its scenario event) docs/schemas/history-header.schema.json
    relaychaos.records.gradebook  gradebook.csv                          docs/schemas/gradebook.schema.json
    relaychaos.records.platforms  Gradescope's and PrairieLearn's results.json (their own schemas beside these)

The field names and the JSON on disk are those the files always had; relaychaos.records.schemas
generates the published schemas from these models (scripts/schemas.py writes them).
"""
