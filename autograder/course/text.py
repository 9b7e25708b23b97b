"""Text from students made safe to show: one printable line for terminals, CSV files and nbgrader
(``clean_text``), and JSON-like values nbgrader can write (``valid_unicode``)."""

from __future__ import annotations

import re

# Unicode's format characters (category Cf: zero-width spaces and joiners, direction marks and
# overrides, the byte-order mark, soft hyphens, tags), as of Unicode 15.1; a test checks that every
# one the running Python knows is here.
FORMAT_CHARACTERS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                     "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
# What ends a line for Python's str.splitlines, a terminal or a spreadsheet: U+2028 and U+2029 (the
# line and paragraph separators, categories Zl and Zp) and NEL among them.
LINE_BREAKS = "\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")
_INVISIBLE = re.compile(f"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f{FORMAT_CHARACTERS}]")


def clean_text(value) -> str:
    """``value`` as one line of printable text, safe for a terminal, a CSV file and nbgrader.

    Bytes of a file name that were not UTF-8 show as ``\\xff``, other lone surrogates as
    ``\\udc80``; tabs and line breaks (U+2028 and U+2029 included) become spaces; other control
    characters (ESC, BEL, NUL, ...) and invisible format characters (zero-width spaces, direction
    overrides) are removed.
    """
    text = str(value)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _INVISIBLE.sub("", _LINE_BREAK.sub(" ", text))


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
