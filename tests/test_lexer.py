"""The tokenizer and the choice of preprocessor branches whose braces count."""

from __future__ import annotations

import pytest

from nvcc_opt.regions.lexer import (
    COMMENT,
    DIRECTIVE,
    PUNCT,
    STRING,
    UNTERMINATED,
    WORD,
    Token,
    read_branches,
    tokenize,
)


def _texts(source: bytes) -> list[bytes]:
    return [source[s:e] for _, s, e in tokenize(source)]


def test_tokens_cover_literals_whole() -> None:
    source = b'a = R"d(x)" y)d" + u8"z" + \'\\\'\';'
    texts = _texts(source)
    assert texts == [b"a", b"=", b'R"d(x)" y)d"', b"+", b"u8", b'"z"', b"+", b"'\\''", b";"]


def test_kinds() -> None:
    source = b'#define A(x) \\\n  { x; } // c\nint b = 1\'000; /* { */ "}"'
    kinds = [kind for kind, _, _ in tokenize(source)]
    assert kinds == [DIRECTIVE, WORD, WORD, PUNCT, WORD, PUNCT, COMMENT, STRING]
    assert _texts(source)[0] == b"#define A(x) \\\n  { x; } // c"


def test_hash_after_code_is_not_a_directive() -> None:
    assert _texts(b"a # b\n  # if 0\n") == [b"a", b"#", b"b", b"# if 0"]


@pytest.mark.parametrize("source", [b"int a; /* open", b'auto s = R"x(open', b"/* a */ /*"])
def test_unterminated_runs_to_the_end(source: bytes) -> None:
    kind, _, end = tokenize(source)[-1]
    assert (kind, end) == (UNTERMINATED, len(source))


def _words(source: bytes) -> tuple[str, str]:
    """The identifiers read and skipped by `read_branches`, each joined into one string."""
    read, skipped = read_branches(source, tokenize(source))
    return _joined(source, read), _joined(source, skipped)


def _joined(source: bytes, tokens: list[Token]) -> str:
    return " ".join(source[s:e].decode() for kind, s, e in tokens if kind == WORD)


BRANCH_CASES = {
    "balanced branches are all read": (
        b"#ifdef X\na\n#elif Y\nb;\n#else\nc {}\n#endif\nd\n",
        ("a b c d", ""),
    ),
    "an unbalanced branch skips the rest": (
        b"#ifdef X\na {\n#elif Y\nb {\n#else\nc {\n#endif\nd }\n",
        ("a d", "b c"),
    ),
    "an unbalanced second branch skips the third": (
        b"#ifdef X\na\n#elif Y\nb {\n#else\nc {\n#endif\n}\n",
        ("a b", "c"),
    ),
    "a closing brace unbalances too": (
        b"{\n#ifdef X\na }\n#else\nb }\n#endif\n",
        ("a", "b"),
    ),
    "nested conditionals": (
        b"#if X\n#ifdef Y\na {\n#else\nb {\n#endif\n#else\nc {\n#endif\nd }\n",
        ("a d", "b c"),
    ),
    "a conditional inside a skipped branch is skipped": (
        b"#if X\na {\n#else\n#if Y\nb\n#else\nc\n#endif\n#endif\n}\n",
        ("a", "b c"),
    ),
    "if 0 takes the else branch": (
        b"#if 0\na {\n#else\nb {\n#endif\n}\n",
        ("b", ""),
    ),
    "if 0 then elif 0 then elif": (
        b"#if 0\na\n#elif 0\nb\n#elif X\nc\n#else\nd\n#endif\n",
        ("c d", ""),
    ),
    "everything inside if 0 is off": (
        b"#if 0\n#ifdef X\na\n#else\nb\n#endif\n#endif\nc\n",
        ("c", ""),
    ),
    "if 1 switches the others off": (
        b"#if 1\na\n#elif X\nb\n#else\nc }\n#endif\n",
        ("a", ""),
    ),
    "spaces and comments around the condition": (
        b"# if /* on? */ 0 // no\na\n#  else\nb\n#endif\n",
        ("b", ""),
    ),
    "a condition of several tokens is not constant": (
        b"#if 0 || X\na\n#endif\n#if (0)\nb\n#endif\n",
        ("a b", ""),
    ),
    "stray else and endif change nothing": (
        b"#else\na\n#endif\nb\n",
        ("a b", ""),
    ),
    "an unterminated if 0 runs to the end": (
        b"a\n#if 0\nb\n",
        ("a", ""),
    ),
    "directives in strings, comments and defines are not conditionals": (
        b'#define X \\\n#if 0\nR"(\n#if 0\n)" /*\n#if 0\n*/ a\n',
        ("a", ""),
    ),
}


@pytest.mark.parametrize(
    ("source", "expected"), list(BRANCH_CASES.values()), ids=list(BRANCH_CASES)
)
def test_read_branches(source: bytes, expected: tuple[str, str]) -> None:
    assert _words(source) == expected


def test_directives_of_read_text_are_kept() -> None:
    source = b"#include <a.h>\n#if X\nx\n#endif\n"
    read, _ = read_branches(source, tokenize(source))
    assert [source[s:e] for _, s, e in read] == [b"#include <a.h>", b"#if X", b"x", b"#endif"]
