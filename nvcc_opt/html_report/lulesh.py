"""The LULESH table (the paper's Table II), read from the JSON the lulesh integration writes:

    {"gpu": "NVIDIA H200", "size": 120,
     "rows": [{"what": "kernel", "baseline_ms": 1.92, "optimized_ms": 1.64, "speedup": 1.17},
              {"what": "application", "baseline_ms": 3050.0, "optimized_ms": 2960.0}]}

`what` is "kernel" or "application"; times are positive milliseconds; `speedup` is optional
(baseline_ms / optimized_ms when absent); `gpu`, `size` (the problem size, e.g. 120 for 120^3)
and `note` are optional; other keys are ignored. A file off this schema is one line naming the
file, the line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nvcc_opt.html_report.inputs import InputError
from nvcc_opt.untrusted import UntrustedError, line_of, read_json


class LuleshRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    what: Literal["kernel", "application"]
    baseline_ms: float = Field(gt=0)
    optimized_ms: float = Field(gt=0)
    speedup: float | None = Field(default=None, gt=0)

    @property
    def ratio(self) -> float:
        return self.speedup if self.speedup is not None else self.baseline_ms / self.optimized_ms


class LuleshTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    rows: list[LuleshRow] = Field(min_length=1)
    gpu: str = ""
    size: int | str = ""
    note: str = ""


def load_lulesh(path: Path) -> LuleshTable:
    try:
        data, text = read_json(path)
    except UntrustedError as exc:
        raise InputError(exc.about(path)) from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    try:
        return LuleshTable.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(error["loc"])
        field = ".".join(str(p) for p in where) or "the top level"
        line = line_of(text, where) if where else 0
        at = f":{line}" if line else ""
        raise InputError(
            f"{path}{at}: not a LULESH table ({field}: {error['msg']}); see "
            "`nvcc-opt report --help`"
        ) from None
