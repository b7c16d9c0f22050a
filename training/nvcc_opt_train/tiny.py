"""A tiny student built in-process, for tests and CI: nothing downloaded, seconds on a CPU.

A Llama-style model from a config (two layers, hidden size 64) and a byte-level BPE tokenizer
trained with the `tokenizers` library on the texts given (so the conversations it will learn are
a few tokens each, not bytes), with ChatML's special tokens and a pad token. It is saved as a
student checkpoint is: weights, tokenizer, and the training variant of nvcc-opt's tool template,
so `nvcc-opt train sft` and `hf:PATH` take it as they take a real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TRAINING_TEMPLATE

SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|pad|>")
# A tokenizer of another family (no ChatML tokens), with a template that drops tools: for tests
# of a checkpoint nvcc-opt's ChatML tool template cannot serve.
OTHER_TOKENS = ("<s>", "</s>", "<pad>")
OTHER_TEMPLATE = (
    "{% for m in messages %}{{ '<s>' + m.role + ': ' + m.content + '</s>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<s>assistant: ' }}{% endif %}"
)
VOCAB_SIZE = 2048


def tiny_student(path: Path, texts: list[str], seed: int = 0, chatml: bool = True) -> Path:
    """A tiny model and tokenizer in `path` (made; must not hold a model already); `path`.
    `chatml=False`: a tokenizer without ChatML's tokens and a template without tools."""
    import torch  # type: ignore[import-not-found, unused-ignore]
    import transformers  # type: ignore[import-not-found, unused-ignore]

    tokenizer = _tokenizer(texts) if chatml else _other_tokenizer(texts)
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        # untied: with tied embeddings a model this small learns next-token pairs far slower
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model: Any = transformers.LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _tokenizer(texts: list[str]) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call, unused-ignore]
        tokenizer_object=_bpe(texts, SPECIAL_TOKENS),
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=HERMES_TOOLS_TRAINING_TEMPLATE,
    )


def _other_tokenizer(texts: list[str]) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call, unused-ignore]
        tokenizer_object=_bpe(texts, OTHER_TOKENS),
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        chat_template=OTHER_TEMPLATE,
    )


def _bpe(texts: list[str], special: tuple[str, ...]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return core
