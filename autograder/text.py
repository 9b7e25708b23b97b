"""Text from students made safe to show: one printable line for terminals, CSV files and nbgrader
(``clean_text``), and JSON-like values nbgrader can write (``valid_unicode``)."""

from __future__ import annotations

import re

_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def clean_text(value) -> str:
    """``value`` as one line of printable text, safe for a terminal, a CSV file and nbgrader.

    Bytes of a file name that were not UTF-8 show as ``\\xff``, other lone surrogates as
    ``\\udc80``; tabs and line breaks become spaces; other control characters (ESC, BEL, NUL, ...) and
    invisible direction overrides are removed.
    """
    text = str(value)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _INVISIBLE.sub("", text.replace("\t", " ").replace("\r", " ").replace("\n", " "))


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(value):
    """``value`` (a JSON-like structure) with lone surrogates in its strings replaced by U+FFFD; and whether any were."""
    found = False

    def fix(item):
        nonlocal found
        if isinstance(item, str):
            try:
                item.encode("utf-8")
                return item
            except UnicodeEncodeError:
                found = True
                return _SURROGATE.sub("\ufffd", item)
        if isinstance(item, list):
            return [fix(x) for x in item]
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        return item

    return fix(value), found
