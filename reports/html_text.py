"""Text made safe to place in HTML: the one escaper of every page the reports write."""

import html


def escaped(text: object) -> str:
    """`text` (any value, as str) with &, <, >, " and ' escaped: safe in element content and quoted attributes."""
    return html.escape(str(text), quote=True)
