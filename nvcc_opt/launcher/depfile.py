"""Depfile fix-ups: name the original source instead of the private copy, and list region stamps.

A depfile naming the copy makes Ninja and Make rebuild the object on every build; listing one stamp
per region makes a review decision (which touches the stamp) rebuild exactly that object.
"""

from __future__ import annotations


def escape(path: str) -> str:
    """Make-style escaping as nvcc writes it: spaces, `#` and `$`."""
    return path.replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def fix(text: str, copy: str | None, original: str, stamps: list[str], phony: bool) -> str:
    """Return the depfile text with `copy` renamed to `original` and `stamps` added.

    Stamps join the first rule's prerequisites (one rule per target keeps Ninja's parser happy);
    with -MP they also get empty rules, as nvcc gives every other prerequisite.
    """
    if copy is not None:
        text = text.replace(escape(copy), escape(original))
        if copy != escape(copy):
            text = text.replace(copy, original)
    if not stamps:
        return text
    end = _first_rule_end(text)
    extra = "".join(f" \\\n  {escape(s)}" for s in stamps)
    text = text[:end] + extra + text[end:]
    if phony:
        if not text.endswith("\n"):
            text += "\n"
        text += "".join(f"\n{escape(s)}:\n" for s in stamps)
    return text


def _first_rule_end(text: str) -> int:
    """Index of the newline ending the first rule (a newline not escaped by a backslash)."""
    index = 0
    while True:
        newline = text.find("\n", index)
        if newline < 0:
            return len(text.rstrip())
        backslash = newline - 1
        if backslash >= 0 and text[backslash] == "\r":
            backslash -= 1
        if backslash < 0 or text[backslash] != "\\":
            return newline if text[:newline].strip() else _first_rule_end_after(text, newline + 1)
        index = newline + 1


def _first_rule_end_after(text: str, start: int) -> int:
    rest = _first_rule_end(text[start:])
    return start + rest
