"""Folder names from students: the student id a name stands for (its NFC form), the name as rows show
it (what would be invisible escaped), and why a name cannot be graded under (control, format and
line-break characters, whitespace at either end, bytes that are not UTF-8)."""

from __future__ import annotations

import unicodedata

from ..course.text import clean_text

def student_name(folder_name: str) -> str:
    """The student id a folder name stands for: its NFC form, so that the same name typed on two
    systems (NFC, or NFD as macOS writes it) is one student, not two rows that look the same."""
    return unicodedata.normalize("NFC", folder_name)


def shown_name(name: str) -> str:
    r"""A folder name as rows show it: what would be invisible (control and format characters, line
    and paragraph separators, whitespace at either end) escaped as ``\uXXXX``, so that it never looks
    like another student's name; bytes that are not UTF-8 are left to ``clean_text`` (``\xff``)."""
    def escape(index: int, char: str) -> str:
        hidden = _character_problem(char, index, len(name)) and not 0xD800 <= ord(char) <= 0xDFFF
        return f"\\u{ord(char):04x}" if hidden else char
    return "".join(escape(i, c) for i, c in enumerate(name))


def _character_problem(char: str, index: int, length: int) -> str:
    """What is wrong with ``char`` at ``index`` of a folder name of ``length`` characters (empty when nothing)."""
    category = unicodedata.category(char)
    if category in ("Zl", "Zp") or char in "\n\r\x0b\x0c\x1c\x1d\x1e\x85":
        return "holds a line break"
    if category == "Cc":
        return "holds a control character"
    if category == "Cf":
        return "holds an invisible character"
    if char.isspace() and index in (0, length - 1):
        return "starts with whitespace" if index == 0 else "ends with whitespace"
    return ""


def name_problem(name: str) -> str:
    """Why a student's or an assignment's folder name cannot be graded under (empty when it can):
    bytes that are not UTF-8, control characters, line or paragraph separators, other invisible
    characters, whitespace at either end; the reason names the character."""
    shown = clean_text(shown_name(name))
    if "/" in name or any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return f"the folder name '{shown}' is not plain UTF-8 text (bytes that are not UTF-8): rename it"
    for index, char in enumerate(name):
        problem = _character_problem(char, index, len(name))
        if problem:
            label = unicodedata.name(char, "")
            return f"the folder name '{shown}' {problem} (U+{ord(char):04X}{' ' + label if label else ''}): rename it"
    return ""
