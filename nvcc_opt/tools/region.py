"""One region under optimization: where it is, its text, and what counts as editing it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.records import RegionSpan
from nvcc_opt.regions.scan import region_text, scan


class RegionNotFound(LookupError):
    pass


@dataclass(frozen=True)
class Region:
    file: Path  # absolute, real
    span: RegionSpan
    text: str  # the region's text now
    file_text: str  # the whole file, for guards that look at the rest of it

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def text_hash(self) -> str:
        return self.span.text_hash

    @classmethod
    def find(cls, file: Path, name_or_hash: str) -> Region:
        path = Path(file).resolve()
        try:
            source = path.read_bytes()
        except OSError as exc:
            raise RegionNotFound(f"cannot read {path}: {exc.strerror}") from exc
        spans = scan(source).regions
        match = [s for s in spans if s.name == name_or_hash] or [
            s for s in spans if len(name_or_hash) >= 8 and s.text_hash.startswith(name_or_hash)
        ]
        if len(match) != 1:
            known = ", ".join(s.name for s in spans) or "none"
            raise RegionNotFound(f"no single region {name_or_hash!r} in {path} (regions: {known})")
        return cls(path, match[0], region_text(source, match[0]), source.decode("utf-8", "replace"))
