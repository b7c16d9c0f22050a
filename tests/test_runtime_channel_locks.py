"""The channel never calls into CUPTI while it holds its own lock where CUPTI may call it back in
the same thread: cuptiActivityFlushAll hands the buffers to buffer_completed, which takes the lock
(a non-recursive mutex). CI has no GPU to run the channel, so this reads its source: a
`std::lock_guard` is live from its line to the end of its brace scope."""

from __future__ import annotations

import re
from pathlib import Path

CHANNEL = Path(__file__).resolve().parent.parent / "nvcc_opt" / "runtime" / "channel.cpp"
CALLS_BACK = re.compile(r"\bcuptiActivityFlushAll\s*\(")
LOCK = re.compile(r"std::lock_guard<std::mutex>\s+\w+\s*\(\s*g_lock\s*\)")


def calls_under_lock(source: str) -> list[int]:
    """Line numbers of calls that may call back while a lock_guard of g_lock is live."""
    found, depth, held = [], 0, []  # held: the brace depth of each live guard
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("//", 1)[0]
        for token in re.finditer(r"[{}]|" + LOCK.pattern + "|" + CALLS_BACK.pattern, code):
            text = token.group(0)
            if text == "{":
                depth += 1
            elif text == "}":
                depth -= 1
                held = [d for d in held if d <= depth]
            elif LOCK.fullmatch(text):
                held.append(depth)
            elif held:
                found.append(number)
    return found


def test_no_flush_while_the_channel_holds_its_lock() -> None:
    assert calls_under_lock(CHANNEL.read_text(encoding="utf-8")) == []


def test_the_reader_finds_a_flush_under_the_lock() -> None:
    held = """\
void on_callback() {
    std::lock_guard<std::mutex> hold(g_lock);
    if (destroyed) {
        cuptiActivityFlushAll(1);
    }
}
void at_exit() {
    {
        std::lock_guard<std::mutex> hold(g_lock);
        end_call();
    }
    cuptiActivityFlushAll(1);
}
"""
    assert calls_under_lock(held) == [4]
