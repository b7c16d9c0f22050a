"""Candidate mode: a private build tree compiles one region's candidate code instead of the store's.

The tools (benchmark_code, compiler_analysis) set NVCC_OPT_CANDIDATE to a JSON file
`{"file": ABS, "region_hash": HEX, "code": TEXT, "compile_args": [...]}` for the builds of a
private tree. The candidate goes through exactly the splice path accepted rewrites take. Unlike a
user's build, candidate mode fails closed: a candidate that does not compile is an error the tool
must see, never silently replaced by the original.
"""

from __future__ import annotations

import os

from nvcc_opt.values import AcceptedRewrite, Value

ENV = "NVCC_OPT_CANDIDATE"
PRIVATE = "NVCC_OPT_PRIVATE_TREE"  # set for every build of a private tree: record nothing
CANDIDATE_ID = 0  # never a store id (those start at 1)


class Candidate(Value):
    __slots__ = ("file", "region_hash", "code", "compile_args")
    file: str
    region_hash: str
    code: str
    compile_args: tuple[str, ...]

    def __init__(self, file: str, region_hash: str, code: str, compile_args: tuple[str, ...]):
        self._set(file=file, region_hash=region_hash, code=code, compile_args=compile_args)

    def as_rewrite(self) -> AcceptedRewrite:
        return AcceptedRewrite(CANDIDATE_ID, self.region_hash, self.code, self.compile_args, None)


class CandidateError(ValueError):
    pass


def load() -> Candidate | None:
    path = os.environ.get(ENV)
    if not path:
        return None
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        args = data.get("compile_args") or []
        if not all(isinstance(a, str) for a in args):
            raise CandidateError("compile_args must be strings")
        return Candidate(
            os.path.realpath(str(data["file"])),
            str(data["region_hash"]),
            str(data["code"]),
            tuple(args),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CandidateError(f"{ENV}={path}: {exc}") from exc


def write(path: str, file: str, region_hash: str, code: str, compile_args: list[str]) -> None:
    """Write a candidate file atomically (for the tools that build private trees)."""
    import json

    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(
            {"file": file, "region_hash": region_hash, "code": code, "compile_args": compile_args},
            handle,
        )
    os.replace(temporary, path)
