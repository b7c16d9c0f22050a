"""The LULESH table (the paper's Table II), read from the JSON `python -m integration.lulesh
table` writes (schema "nvcc-opt-lulesh-table/1", documented in integration/lulesh/table.py):

    {"schema": "nvcc-opt-lulesh-table/1", "gpu": "NVIDIA H200", "problem": {"size": 120, ...},
     "rows": [{"name": "kernel", "unit": "ms", "baseline": 1.92, "optimized": 1.64,
               "speedup": 1.17, "note": ""}, ...], "failures": [...], "notes": [...]}

or a hand-written one without "schema":

    {"gpu": "NVIDIA H200", "size": 120,
     "rows": [{"what": "kernel", "baseline_ms": 1.92, "optimized_ms": 1.64, "speedup": 1.17},
              {"what": "application", "baseline_ms": 3050.0, "optimized_ms": 2960.0}]}

A time may be null (not measured: the row's note says why, e.g. no nsys); other keys are
ignored. A file off its schema is one line naming the file, the line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nvcc_opt.html_report.inputs import InputError
from nvcc_opt.untrusted import UntrustedError, line_of, read_json

INTEGRATION_SCHEMA = "nvcc-opt-lulesh-table/1"
_MS = {"ms": 1.0, "s": 1000.0}


class LuleshRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    what: Literal["kernel", "application"]
    baseline_ms: float | None = Field(default=None, gt=0)
    optimized_ms: float | None = Field(default=None, gt=0)
    speedup: float | None = Field(default=None, gt=0)
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.speedup is not None:
            return self.speedup
        if self.baseline_ms is None or self.optimized_ms is None:
            return None
        return self.baseline_ms / self.optimized_ms


class LuleshTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    rows: list[LuleshRow] = Field(min_length=1)
    gpu: str = ""
    size: int | str = ""
    note: str = ""


class _IntegrationRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: Literal["kernel", "application"]
    unit: Literal["ms", "s"]
    baseline: float | None = Field(default=None, gt=0)
    optimized: float | None = Field(default=None, gt=0)
    speedup: float | None = Field(default=None, gt=0)
    note: str = ""


class _IntegrationTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_: Literal["nvcc-opt-lulesh-table/1"] = Field(alias="schema")
    rows: list[_IntegrationRow] = Field(min_length=1)
    gpu: str = ""
    problem: dict[str, Any] = Field(default_factory=dict)
    model: str = ""
    correct: bool = True
    check_reasons: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def table(self) -> LuleshTable:
        def ms(value: float | None, unit: str) -> float | None:
            return None if value is None else value * _MS[unit]

        rows = [
            LuleshRow(
                what=r.name,
                baseline_ms=ms(r.baseline, r.unit),
                optimized_ms=ms(r.optimized, r.unit),
                speedup=r.speedup,
                note=r.note,
            )
            for r in self.rows
        ]
        size = self.problem.get("size", "")
        differs = "" if self.correct else "OUTPUT DIFFERS: " + "; ".join(self.check_reasons)
        model = f"model: {self.model}" if self.model else ""
        notes = [differs, model, *self.failures, *self.notes]
        return LuleshTable(
            rows=rows,
            gpu=self.gpu,
            size=size if isinstance(size, int | str) else str(size),
            note="; ".join(n for n in notes if n),
        )


def load_lulesh(path: Path) -> LuleshTable:
    try:
        data, text = read_json(path)
    except UntrustedError as exc:
        raise InputError(exc.about(path)) from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    try:
        if isinstance(data, dict) and "schema" in data:
            return _IntegrationTable.model_validate(data).table()
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
