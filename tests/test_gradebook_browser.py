"""The class gradebook and a student's own page, opened in a real headless Chromium as an instructor would:
no console error, every link of the grid opens that student's page, nothing wider than the window (long
lines wrap), and a screenshot of each page. Skips, saying why, where no Chromium is installed
(scripts/chromium.sh installs one; CI runs it)."""

from __future__ import annotations

import pytest

from relaychaos.reports import gradebook, student_page

from . import browser
from .grade_records import class_of_records

pytestmark = pytest.mark.skipif(
    browser.find() is None,
    reason="no Chromium on this machine (chromium, "
    "chromium-browser, google-chrome or RELAYCHAOS_CHROMIUM): run scripts/chromium.sh",
)

SEEN = {
    "links": "Array.from(document.querySelectorAll('table.grid a')).map(a => a.getAttribute('href'))",
    "rows": "document.querySelectorAll('table.grid tr').length",
    "overflow": "document.documentElement.scrollWidth - window.innerWidth",
    "histogram": "document.querySelectorAll('svg rect').length",
    "headers_inside": "(grid => Array.from(grid.querySelectorAll('th.item')).filter(th => "
    "th.firstElementChild && th.firstElementChild.getBoundingClientRect().top >= "
    "grid.getBoundingClientRect().top - 1).length)(document.querySelector('table.grid'))",
}


def a_graded_class(folder):
    """The gradebook of every kind of record, with each student's page where the grid links to it."""
    records = class_of_records()
    gradebook.write(records, folder)
    for r in records:
        assert isinstance(r.folder, str), "every record of the class has its folder"
        (folder / "submissions" / r.folder).mkdir(parents=True)
        (folder / "submissions" / r.folder / "report.html").write_text(student_page.html(r))
    return records


@pytest.mark.process
def test_the_gradebook_opens_in_a_browser_with_a_grid_linking_to_every_students_page(tmp_path):
    records = a_graded_class(tmp_path / "gradebook")
    shot = tmp_path / "gradebook.png"
    page = browser.load((tmp_path / "gradebook" / "gradebook.html").as_uri(), SEEN, screenshot=shot)
    assert page.errors == []
    assert page.values["rows"] == 1 + len(records) and page.values["histogram"] > 0
    links = page.values["links"]
    assert len(set(links)) == len(records) and all((tmp_path / "gradebook" / link).is_file() for link in links)
    assert page.values["overflow"] <= 0, "a line wider than the window: long lines must wrap"
    assert page.values["headers_inside"] == 4, "an item's title runs out of the grid's header (into the histogram)"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.process
def test_a_students_page_opens_in_a_browser_with_its_rubric_and_incidents_and_wraps_long_lines(tmp_path):
    records = a_graded_class(tmp_path / "gradebook")
    bob_record = next(r for r in records if r.submission == "bob")  # two items lost, three incidents
    assert isinstance(bob_record.folder, str)
    bob = tmp_path / "gradebook" / "submissions" / bob_record.folder / "report.html"
    shot = tmp_path / "student.png"
    page = browser.load(
        bob.as_uri(),
        {
            "h1": "document.querySelector('h1').textContent",
            "tables": "document.querySelectorAll('table').length",
            "overflow": SEEN["overflow"],
        },
        screenshot=shot,
    )
    assert page.errors == [] and page.values["h1"].startswith("bob") and page.values["tables"] >= 1
    assert page.values["overflow"] <= 0, "a line wider than the window: long lines must wrap"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
