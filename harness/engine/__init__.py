"""The scenario engine: steps as data, scenario files, the recorder, and the runner with its parts
(client, nemesis, observer, final phase). It drives the stack; it never judges (that is the checkers')."""
