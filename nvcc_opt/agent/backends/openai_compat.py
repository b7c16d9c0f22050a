"""Any OpenAI-compatible chat server (vllm serve, llama.cpp server, Ollama, hosted providers),
spoken to with the standard library only so the core install needs nothing more.

Tool calls are native: the request carries `tools`, the reply's `tool_calls` come back as ToolCall.
The API key comes from the environment and never appears in a message, repr or log.
A conversation the server says is longer than its context (a 400 naming the context length, as
vLLM, OpenAI and llama.cpp word it) is sent again with one more of its oldest tool results
elided each time (`agent/context.py`, the rule of the in-process backends), until it fits or
nothing more can give way: the server's own count decides, no tokenizer is needed here.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from nvcc_opt.agent.context import elidable, elide
from nvcc_opt.agent.model import ModelError, Reply, ToolCall

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
RETRY_AFTER_CAP_S = 60.0
SERVE_HINT = "vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes"
# How servers say a prompt is longer than the context: vLLM and OpenAI "maximum context length",
# llama.cpp "exceeds the available context size", others "context window" or "too many tokens".
CONTEXT_FULL = re.compile(r"context (length|size|window)|too many tokens|prompt is too long")

_SPEC_OPTIONS: dict[str, Callable[[str], Any]] = {
    "key_env": str,
    "timeout_s": float,
    "temperature": float,
    "max_tokens": int,
}


class _Transient(Exception):
    """A failure worth another attempt (connection refused, 429, 5xx)."""

    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


class _ContextFull(Exception):
    """The server said the conversation does not fit its context."""


class OpenAIModel:
    """One chat-completions endpoint and model name; see `complete`."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retries: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        key_env: str = DEFAULT_KEY_ENV,
        backoff_s: float = 1.0,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = f"openai:{model}@{self.base_url}"
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.retries = retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.key_env = key_env  # named in errors, so the user knows what to set
        self.backoff_s = backoff_s

    def __repr__(self) -> str:
        return f"OpenAIModel({self.name!r}, key={'set' if self._api_key else 'none'})"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """One assistant turn. Retries connection errors, 429 and 5xx; elides the oldest tool
        results while the server says the context is full; raises ModelError."""
        most = len(elidable(messages))
        elided = 0
        while True:
            try:
                reply = self._complete(elide(messages, elided) if elided else messages, tools)
            except _ContextFull as err:
                if elided >= most:
                    raise ModelError(
                        f"{err} (with {elided} of the older tool results elided, every one that"
                        " may give way; a model with a longer context, or a larger --max-model-len"
                        " on the server, is needed)"
                    ) from err
                elided += 1
                continue
            reply.raw["elided_tool_results"] = elided
            return reply

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        body = json.dumps(self._request_body(messages, tools)).encode()
        attempt = 0
        while True:
            try:
                return parse_reply(self._post(body), self.url)
            except _Transient as err:
                if attempt >= self.retries:
                    raise ModelError(f"{err} (gave up after {attempt + 1} attempts)") from err
                time.sleep(err.wait_s if err.wait_s is not None else self.backoff_s * 2**attempt)
                attempt += 1

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:  # some servers reject an empty tools list
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as err:
            raise self._http_error(err) from err
        except urllib.error.URLError as err:
            if isinstance(err.reason, TimeoutError):
                raise self._timeout() from err
            raise _Transient(
                f"no server answered at {self.base_url} ({err.reason}): start it (e.g. "
                f"`{SERVE_HINT}`) or fix the URL in the model spec"
            ) from err
        except TimeoutError as err:
            raise self._timeout() from err
        except ConnectionError as err:  # reset mid-answer: the server died or restarted
            raise _Transient(
                f"the server at {self.base_url} dropped the connection ({err})"
            ) from err

    def _timeout(self) -> ModelError:
        return ModelError(
            f"no answer from {self.url} within {self.timeout_s:g} s: the server may be overloaded "
            "or the model slow; check the server, or raise timeout_s in the spec (?timeout_s=S)"
        )

    def _http_error(self, err: urllib.error.HTTPError) -> Exception:
        detail = _server_message(err)
        said = f"{err.code} from {self.url}: {detail}"
        if err.code == 429 or err.code >= 500:
            return _Transient(said, _retry_after(err))
        if err.code in (401, 403):
            if not self._api_key:
                return ModelError(
                    f"{said}. No API key was sent: set {self.key_env} "
                    "(or name another variable with ?key_env=NAME in the spec)"
                )
            return ModelError(
                f"{said}. The server refused the key: set {self.key_env} to a valid one"
            )
        if err.code == 404:
            return ModelError(
                f"{said}. Check the model name {self.model!r} against GET {self.base_url}/models, "
                "and that the URL ends in /v1"
            )
        if err.code == 400 and CONTEXT_FULL.search(detail.lower()):
            return _ContextFull(said)
        if err.code == 400 and "tool" in detail.lower():
            return ModelError(
                f"{said}. The server may not accept tool calls: start it with `{SERVE_HINT}`"
            )
        return ModelError(said)


def parse_reply(payload: bytes, url: str) -> Reply:
    """A chat-completions response body as a Reply; ModelError when it is not one."""
    try:
        data = json.loads(payload)
        choice = data["choices"][0]
        message = choice["message"]
        calls = tuple(_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or ()))
        text = message.get("content") or ""
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        raise ModelError(
            f"the server at {url} sent something that is not a chat completion "
            f"({type(err).__name__}: {err}): {payload[:300]!r}"
        ) from err
    if not isinstance(text, str):
        raise ModelError(f"the server at {url} sent non-text content: {payload[:300]!r}")
    raw = {"finish_reason": choice.get("finish_reason"), "model": data.get("model")}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        raw["reasoning"] = reasoning
    return Reply(text, calls, prompt_tokens, completion_tokens, raw)


def _tool_call(index: int, call: dict[str, Any]) -> ToolCall:
    function = call["function"]
    name = function["name"]
    arguments = function.get("arguments")
    if not isinstance(name, str):
        raise TypeError(f"tool call {index} has a non-string name")
    if not isinstance(arguments, str):  # Ollama and others send an object; keep the JSON text form
        arguments = json.dumps(arguments if arguments is not None else {})
    return ToolCall(str(call.get("id") or f"call_{index}"), name, arguments)


def _server_message(err: urllib.error.HTTPError) -> str:
    text = err.read().decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:500]
    except (ValueError, AttributeError):
        pass
    return text.strip()[:500] or str(err.reason)


def _retry_after(err: urllib.error.HTTPError) -> float | None:
    value = err.headers.get("Retry-After") if err.headers else None
    try:
        return min(float(value), RETRY_AFTER_CAP_S) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def from_spec(rest: str) -> OpenAIModel:
    """`MODEL@URL[?key_env=NAME&timeout_s=S&temperature=T&max_tokens=N]` (the spec after
    `openai:`); the key is read from the named environment variable (default OPENAI_API_KEY)."""
    model, at, url = rest.partition("@")
    parts = urlsplit(url)
    if not (model and at and parts.scheme in ("http", "https") and parts.netloc):
        raise ValueError(
            f"bad openai spec 'openai:{rest}': write openai:MODEL@URL, "
            "e.g. openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1"
        )
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        convert = _SPEC_OPTIONS.get(key)
        if convert is None:
            raise ValueError(
                f"unknown option {key!r} in openai spec; known: {sorted(_SPEC_OPTIONS)}"
            )
        try:
            options[key] = convert(value)
        except ValueError as err:
            raise ValueError(f"bad value {value!r} for {key!r} in openai spec") from err
    key_env = options.pop("key_env", DEFAULT_KEY_ENV)
    base_url = parts._replace(query="", fragment="").geturl()
    return OpenAIModel(model, base_url, os.environ.get(key_env), key_env=key_env, **options)
