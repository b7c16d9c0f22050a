"""The tool-using loop: ask the model, run its tool calls, repeat until an answer or a limit.

Every way of stopping is a `Stop` exception carrying its reason and message; limits are checked
in `_check_limits` only; the trace is saved after every step, whatever happened in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from nvcc_opt.agent.answer import ANSWER_FORMAT, FinalAnswer, find_answer
from nvcc_opt.agent.calls import EXPECTED, parse_calls
from nvcc_opt.agent.model import Model, ModelError, Reply, ToolCall
from nvcc_opt.agent.prompt import render
from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.toolbox.schema import ERROR, Toolbox, is_error

NUDGE = (
    f"Your reply had no tool call and no final answer. Call a tool ({EXPECTED}) or, when you are "
    f"done, reply with the final answer as one JSON object: {ANSWER_FORMAT}"
)


@dataclass
class Limits:
    turns: int = 30  # model calls
    tokens: int = 200_000  # prompt + completion tokens, summed over all model calls
    wall_s: float = 3600.0
    tool_s: float = 3000.0  # time spent inside tools, all tools together
    format_errors: int = 3  # consecutive replies with malformed calls or nothing usable


class Stop(Exception):
    reason = "stop"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason


class Submitted(Stop):
    reason = "final_answer"

    def __init__(self, answer: FinalAnswer) -> None:
        super().__init__("the model submitted a valid final answer")
        self.answer = answer


class NoAnswer(Stop):
    reason = "no_answer"


class LimitExceeded(Stop):
    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message, f"limit:{limit}")


class FormatErrors(Stop):
    reason = "format_errors"


class ModelFailed(Stop):
    reason = "model_error"


class Interrupted(Stop):
    reason = "interrupted"


@dataclass
class Outcome:
    reason: str
    message: str
    answer: FinalAnswer | None
    turns: int
    prompt_tokens: int
    completion_tokens: int
    tool_seconds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["answer"] = self.answer.model_dump() if self.answer else None
        data["tokens"] = self.tokens
        return data


class Agent:
    def __init__(
        self,
        model: Model,
        toolbox: Toolbox,
        tools: list[str],
        limits: Limits,
        trace: TraceWriter,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.toolbox, self.limits, self.trace = model, toolbox, limits, trace
        self.clock = clock
        self.tools = list(tools)
        self.schemas = toolbox.schemas(self.tools)  # ValueError now for an unknown tool name
        self.messages: list[dict[str, Any]] = []
        self.turns = self.prompt_tokens = self.completion_tokens = 0
        self.format_errors = 0
        self.nudged = self.repaired = False
        self.tool_seconds: dict[str, float] = {}
        self.started = 0.0

    def run(self, system: str, user: str) -> Outcome:
        """Converse until the model answers or something stops it; the outcome says which."""
        self.started = self.clock()
        meta = {
            "model": self.model.name,
            "tools": self.tools,
            "tool_schemas": self.schemas,  # as the model saw them: training replays these
            "limits": asdict(self.limits),
        }
        self.trace.add_meta(**meta)
        self._add({"role": "system", "content": system})
        self._add({"role": "user", "content": user})
        try:
            while True:
                try:
                    self._step()
                finally:
                    self.trace.save()
        except Stop as stop:
            outcome = self._outcome(stop)
        except KeyboardInterrupt:
            outcome = self._outcome(Interrupted("interrupted by the user (KeyboardInterrupt)"))
        self.trace.set_outcome(outcome.to_json())
        self.trace.save()
        return outcome

    def _check_limits(self) -> None:
        limits, tokens = self.limits, self.prompt_tokens + self.completion_tokens
        tool_s, wall_s = sum(self.tool_seconds.values()), self.clock() - self.started
        if self.format_errors >= limits.format_errors:
            raise FormatErrors(f"{self.format_errors} replies in a row had no usable tool call")
        if self.turns >= limits.turns:
            raise LimitExceeded("turns", f"reached the limit of {limits.turns} turns")
        if tokens >= limits.tokens:
            raise LimitExceeded("tokens", f"used {tokens} tokens of {limits.tokens}")
        if wall_s >= limits.wall_s:
            raise LimitExceeded("wall", f"ran {wall_s:.1f} s of {limits.wall_s} s")
        if tool_s >= limits.tool_s:
            raise LimitExceeded("tool_time", f"tools ran {tool_s:.1f} s of {limits.tool_s} s")

    def _step(self) -> None:
        self._check_limits()
        step: dict[str, Any] = {"turn": self.turns + 1, "calls": [], "problems": [], "note": None}
        self.trace.add_step(step)
        reply = self._query(step)
        calls, problems = parse_calls(reply, id_prefix=f"t{self.turns}")
        step["problems"] = problems
        self._add(_assistant_message(reply))
        if calls:
            self._execute(calls, step, native=bool(reply.tool_calls))
            if problems:
                self._add({"role": "user", "content": "\n".join(problems)})
            return
        answer = find_answer(reply.text)
        if isinstance(answer, FinalAnswer):
            raise Submitted(answer)
        if isinstance(answer, str):
            self._repair(answer, step)
        elif problems:
            self._format_error("\n".join(problems), step)
        elif not self.nudged:
            self.nudged = True
            self._say(NUDGE, step, "nudge")
        else:
            self._format_error(NUDGE, step)

    def _query(self, step: dict[str, Any]) -> Reply:
        self.turns += 1
        began = self.clock()
        try:
            reply = self.model.complete(list(self.messages), self.schemas)
        except ModelError as exc:
            raise ModelFailed(f"the model failed: {exc}") from exc
        finally:
            step["model_s"] = self.clock() - began
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        step.update(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            text=reply.text,
            raw=reply.raw,
        )
        return reply

    def _execute(self, calls: list[ToolCall], step: dict[str, Any], native: bool) -> None:
        self.format_errors, self.nudged = 0, False
        for call in calls:
            record: dict[str, Any] = {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "source": "native" if native else "text",
                "result": None,
            }
            step["calls"].append(record)
            began = self.clock()
            try:
                result = self._call(call)
            finally:
                record["seconds"] = self.clock() - began
                self.tool_seconds[call.name] = (
                    self.tool_seconds.get(call.name, 0.0) + (record["seconds"])
                )
            record.update(result=result, error=is_error(result))
            self._add({"role": "tool", "tool_call_id": call.id, "content": result})

    def _call(self, call: ToolCall) -> str:
        if call.name not in self.tools:  # the toolbox may hold tools this run does not offer
            return f"{ERROR}there is no tool named {call.name!r}. Tools: {', '.join(self.tools)}."
        return self.toolbox.call(call.name, call.arguments)

    def _repair(self, problem: str, step: dict[str, Any]) -> None:
        if self.repaired:
            raise NoAnswer(f"the final answer was invalid again after one repair: {problem}")
        self.repaired = True
        self._say(render("repair", problem=problem), step, "repair")

    def _format_error(self, problem: str, step: dict[str, Any]) -> None:
        self.format_errors += 1
        self._say(problem, step, "format_error")

    def _say(self, text: str, step: dict[str, Any], note: str) -> None:
        step["note"] = note
        self._add({"role": "user", "content": text})

    def _add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.trace.add_message(message)

    def _outcome(self, stop: Stop) -> Outcome:
        return Outcome(
            reason=stop.reason,
            message=stop.message,
            answer=stop.answer if isinstance(stop, Submitted) else None,
            turns=self.turns,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            tool_seconds=dict(self.tool_seconds),
            wall_s=self.clock() - self.started,
        )


def _assistant_message(reply: Reply) -> dict[str, Any]:
    """Native calls go in `tool_calls`; calls written in text stay in the text, as the model wrote
    them, so a chat template does not render them twice."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return message
