"""`nvcc-opt train grpo`: trl's GRPOTrainer with nvcc-opt's tools in every rollout (the paper's
opt-r1 recipe, section VI-A), rewarded by nvcc-opt's independent final verification.

- Rollouts: `grpo_env` (one environment per rollout, its problem's Toolbox, the row's 4-6 tools).
- Reward: two reward functions, r_perf and r_tools (`rewards`), summed by trl with weight 1, so
  trl logs each. r_perf verifies every rollout's final answer through the pool, all at once.
- Tool calls of all rollouts at once: trl's `_tool_call_loop` calls each rollout's tools one
  rollout after another and appends their results as tool messages, then builds each rollout's
  next input with `_get_tool_suffix_ids`. The tool methods only submit their call to the pool and
  return a placeholder; `ToolPoolGRPOTrainer._get_tool_suffix_ids` (the one override in the loop)
  waits for the placeholders of the rollout it is given and fills them in place. By the time
  it is first called, the calls of every pending rollout of the turn are already running.
- The context, as inference keeps it: each turn writes at most the hf backend's reply tokens
  (`max_new_tokens`), and a rollout goes on while its next prompt (the conversation so far,
  counted as the hf backend counts a prompt) fits the context less those tokens: exactly the
  prompts inference sends whole. Where inference would elide the oldest tool results
  (`nvcc_opt.agent.context`), the rollout ends instead: trl scores a rollout as one token
  sequence, so later turns cannot see a shortened copy of what earlier turns saw. It ends as trl
  ends a rollout past its own limits (that round's tool results dropped, the completion as it
  is: no final answer, r_perf = -2), and the step log counts it (`context_full`) with a note.
- Logged per step in OUT/grpo_steps.jsonl (and to trl's logs): mean reward, r_perf, r_tools, the
  share of rollouts with a valid final answer, tool calls per rollout by tool, tool vs
  generation seconds, rollouts ended where inference would elide.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt.agent.answer import FinalAnswer, find_answer
from nvcc_opt_train.grpo_env import RolloutEnv, Rollouts
from nvcc_opt_train.rewards import Judged, perf_of, r_tools

STEPS_LOG = "grpo_steps.jsonl"


@dataclass
class StepStats:
    """What the reward functions and the generation loop saw since the last step record."""

    r_perf: list[float] = field(default_factory=list)
    r_tools: list[float] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    rollouts: int = 0
    context_full: int = 0  # rollouts ended where inference would elide old tool results
    tool_s: float = 0.0  # seconds spent inside tools, all calls summed
    tool_wait_s: float = 0.0  # seconds the trainer waited for tool results
    generation_s: float = 0.0
    verify_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)  # one per rollout

    def reset(self) -> None:
        self.__dict__.update(StepStats().__dict__)

    def record(self, step: int) -> dict[str, Any]:
        n = max(1, len(self.r_perf))
        rewards = [p + t for p, t in zip(self.r_perf, self.r_tools, strict=False)]
        return {
            "step": step,
            "rollouts": len(self.r_perf),
            "reward_mean": sum(rewards) / n,
            "r_perf_mean": sum(self.r_perf) / n,
            "r_tools_mean": sum(self.r_tools) / n,
            "valid_answer_share": sum(self.valid) / n,
            "tool_calls_per_rollout": {k: v / n for k, v in sorted(self.calls.items())},
            "context_full": self.context_full,
            "tool_s": self.tool_s,
            "tool_wait_s": self.tool_wait_s,
            "generation_s": self.generation_s,
            "verify_s": self.verify_s,
            "notes": self.notes[:20],
            "rollout_details": self.details,
        }


def final_answer(completion: Any) -> FinalAnswer | None:
    """The valid final answer in a rollout's last assistant message, or None."""
    messages = (
        completion
        if isinstance(completion, list)
        else [{"role": "assistant", "content": completion}]
    )
    for message in reversed(messages):
        if message.get("role") == "assistant":
            if message.get("tool_calls"):
                return None  # it stopped while still calling tools
            found = find_answer(str(message.get("content") or ""))
            return found if isinstance(found, FinalAnswer) else None
    return None


def reward_functions(stats: StepStats, executor: Executor) -> list[Callable[..., list[float]]]:
    """r_perf and r_tools as trl reward functions (named so trl logs them by these names)."""

    def r_perf(completions: list[Any], environments: list[RolloutEnv], **_: Any) -> list[float]:
        began = time.monotonic()
        answers = [final_answer(c) for c in completions]
        futures = [
            executor.submit(env._judge, a) for env, a in zip(environments, answers, strict=True)
        ]
        found: list[Judged | None] = []
        for env, future in zip(environments, futures, strict=True):
            try:
                found.append(future.result())
            except Exception as exc:  # the verification itself failed: never a reward
                env.state.note = f"verification failed: {type(exc).__name__}: {exc}"
                found.append(Judged(False, 1.0, 1.0))
        stats.verify_s += time.monotonic() - began
        values = [perf_of(j) for j in found]
        stats.r_perf += values
        stats.valid += [a is not None for a in answers]
        stats.notes += [f"{e.state.problem}: {e.state.note}" for e in environments if e.state.note]
        return values

    def r_tools_(completions: list[Any], environments: list[RolloutEnv], **_: Any) -> list[float]:
        values = []
        first = len(stats.r_tools)
        for i, env in enumerate(environments):
            counts = env._tool_counts()
            stats.calls += counts
            stats.tool_s += sum(s for _, s in env.state.calls)
            values.append(r_tools(counts, env.offered))
            stats.details.append({
                "problem": env.state.problem,
                "r_perf": stats.r_perf[first + i] if first + i < len(stats.r_perf) else None,
                "r_tools": values[-1],
                "valid_answer": stats.valid[first + i] if first + i < len(stats.valid) else None,
                "offered": len(env.offered),
                "calls": dict(counts),
                "context_full": env.state.context_full,
            })  # fmt: skip
        stats.r_tools += values
        return values

    r_tools_.__name__ = "r_tools"
    return [r_perf, r_tools_]


def trainer_class() -> type[Any]:
    """GRPOTrainer with tool calls through the pool and the step log (imports trl)."""
    from trl import GRPOTrainer  # type: ignore[attr-defined, import-not-found, unused-ignore]

    class ToolPoolGRPOTrainer(GRPOTrainer):  # type: ignore[misc, unused-ignore]
        rollouts: Rollouts
        stats: StepStats
        steps_log: Path
        scripted: Callable[..., Any] | None = None
        # the longest prompt inference sends whole (context less the reply tokens), and how it
        # counts a prompt (messages, tools); None: no limit but trl's own
        prompt_room: int | None = None
        prompt_tokens: Callable[[list[dict[str, Any]], list[Any]], int] | None = None
        _conversations: list[list[dict[str, Any]]] | None = None

        def _get_tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> Any:
            self.stats.tool_wait_s += self.rollouts.resolve(tool_messages)
            suffix = super()._get_tool_suffix_ids(tool_messages)  # type: ignore[no-untyped-call]
            if self._past_context(tool_messages):
                # trl ends a rollout whose next input passes max_completion_length: that round's
                # tool results are dropped, its completion kept as it is. A suffix past that
                # limit sends this rollout down the same path (the suffix is dropped with it).
                past = int(self.max_completion_length or 0) + 1
                return [*suffix, *[suffix[-1] if suffix else 0] * past]
            return suffix

        def _past_context(self, tool_messages: list[dict[str, Any]]) -> bool:
            """Whether the rollout these tool results belong to has outgrown the prompts
            inference sends whole; if so, its environment says so (for the step log)."""
            talks, count, room = self._conversations, self.prompt_tokens, self.prompt_room
            if talks is None or count is None or room is None or not tool_messages:
                return False
            index = next(
                (i for i, talk in enumerate(talks) if any(m is tool_messages[-1] for m in talk)),
                None,
            )
            if index is None:
                return False
            names: Any = self._batch_environments  # each rollout's environment (tool subset)
            tokens = count(talks[index], self._env_tools[names[index]])
            if tokens <= room:
                return False
            envs: Any = self.environments
            env = envs[index]
            env.state.context_full = True
            env.state.note = (
                f"context full: the next prompt is {tokens} tokens, more than the {room} inference "
                "sends without eliding old tool results; the rollout ends there"
            )
            self.stats.context_full += 1
            return True

        def _tool_call_loop(self, *args: Any, **kwargs: Any) -> Any:
            # trl's first argument: each rollout's conversation so far, which it extends in place
            # with the assistant's calls and their results
            self._conversations = args[0] if args else kwargs.get("prompts")
            try:
                return super()._tool_call_loop(*args, **kwargs)  # type: ignore[no-untyped-call]
            finally:
                self._conversations = None
                self.rollouts.drain()

        def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                if self.scripted is not None:  # tests: a deterministic model at the model edge
                    return self.scripted(*args, **kwargs)
                return super()._generate_single_turn(*args, **kwargs)  # type: ignore[no-untyped-call]
            finally:
                self.stats.generation_s += time.monotonic() - began

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> Any:
            self.stats.reset()
            output = super()._generate_and_score_completions(inputs)
            record = self.stats.record(self.state.global_step + 1)
            if self.accelerator.is_main_process:
                with self.steps_log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")
            mode = "train" if getattr(self.model, "training", True) else "eval"
            for key in ("valid_answer_share", "tool_s", "tool_wait_s", "generation_s", "verify_s"):
                self._metrics[mode][f"nvcc_opt/{key}"].append(float(record[key]))
            for tool, per in record["tool_calls_per_rollout"].items():
                self._metrics[mode][f"nvcc_opt/calls/{tool}"].append(float(per))
            return output

    return ToolPoolGRPOTrainer
