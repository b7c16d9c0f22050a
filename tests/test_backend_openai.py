"""The openai backend over a real loopback socket against a scripted server; spec parsing."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.agent import backends
from nvcc_opt.agent.backends.openai_compat import OpenAIModel
from nvcc_opt.agent.model import ModelError, Reply, ToolCall
from tests.openai_server import Step, call, completion, scripted_server

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "file_viewer",
            "description": "Show a numbered window of a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You optimize CUDA kernels."},
    {"role": "user", "content": "Look at kernel.cu."},
]


@pytest.fixture(autouse=True)
def _no_proxy_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback requests must not go through a proxy the environment names; no stray key."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def model(base_url: str, **options: Any) -> OpenAIModel:
    options.setdefault("timeout_s", 2.0)
    options.setdefault("backoff_s", 0.01)
    return OpenAIModel("scripted", base_url, **options)


def test_tool_call_round_trip_sends_messages_and_tools() -> None:
    answer = completion(tool_calls=[call("c1", "file_viewer", '{"path": "kernel.cu"}')])
    with scripted_server([Step(answer)]) as server:
        reply = model(server.base_url, temperature=0.0, max_tokens=64).complete(MESSAGES, TOOLS)
    assert reply.tool_calls == (ToolCall("c1", "file_viewer", '{"path": "kernel.cu"}'),)
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("", 11, 7)
    assert reply.raw["finish_reason"] == "tool_calls"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "scripted",
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": 0.0,
        "max_tokens": 64,
    }
    assert "Authorization" not in request.headers


def test_text_answer_without_tools_sends_no_tools() -> None:
    with scripted_server([Step(completion('{"done": true}'))]) as server:
        reply = model(server.base_url).complete(MESSAGES, [])
    assert reply == Reply('{"done": true}', (), 11, 7, reply.raw)
    assert "tools" not in server.requests[0].body
    assert "tool_choice" not in server.requests[0].body


def test_malformed_arguments_pass_through_for_the_loop_to_answer() -> None:
    calls = [call("c1", "file_viewer", "{path: kernel.cu"), {"function": {"name": "search"}}]
    with scripted_server([Step(completion(tool_calls=calls))]) as server:
        reply = model(server.base_url).complete(MESSAGES, TOOLS)
    assert reply.tool_calls == (
        ToolCall("c1", "file_viewer", "{path: kernel.cu"),
        ToolCall("call_1", "search", "{}"),
    )


def test_object_arguments_become_json_text() -> None:
    calls = [{"id": "c1", "function": {"name": "search", "arguments": {"pattern": "x"}}}]
    with scripted_server([Step(completion(tool_calls=calls))]) as server:
        reply = model(server.base_url).complete(MESSAGES, TOOLS)
    assert json.loads(reply.tool_calls[0].arguments) == {"pattern": "x"}


@pytest.mark.parametrize(
    "body",
    ["<html>oops</html>", {"choices": []}, {"choices": [{"message": {"tool_calls": [{}]}}]}],
    ids=["not-json", "no-choices", "call-without-function"],
)
def test_malformed_response_is_a_model_error(body: dict[str, Any] | str) -> None:
    with scripted_server([Step(body)]) as server, pytest.raises(ModelError) as err:
        model(server.base_url).complete(MESSAGES, TOOLS)
    assert "not a chat completion" in str(err.value)
    assert len(server.requests) == 1  # a bad answer is not retried


def test_server_error_then_success_retries() -> None:
    script = [Step({"error": {"message": "busy"}}, status=500), Step(completion("ok"))]
    with scripted_server(script) as server:
        reply = model(server.base_url).complete(MESSAGES, TOOLS)
    assert reply.text == "ok"
    assert len(server.requests) == 2


def test_rate_limit_honours_retry_after() -> None:
    script = [Step("slow down", status=429, headers={"Retry-After": "0.2"}), Step(completion("ok"))]
    with scripted_server(script) as server:
        start = time.monotonic()
        assert model(server.base_url).complete(MESSAGES, TOOLS).text == "ok"
    assert time.monotonic() - start >= 0.2


def test_server_errors_exhaust_retries() -> None:
    script = [Step({"error": {"message": "engine dead"}}, status=503)] * 3
    with scripted_server(script) as server, pytest.raises(ModelError) as err:
        model(server.base_url, retries=2).complete(MESSAGES, TOOLS)
    assert "503" in str(err.value) and "engine dead" in str(err.value)
    assert "3 attempts" in str(err.value)
    assert len(server.requests) == 3


def test_unauthorized_names_the_key_variable_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    with scripted_server([Step({"error": {"message": "bad key"}}, status=401)]) as server:
        chosen = backends.load(f"openai:scripted@{server.base_url}?key_env=MY_KEY")
        with pytest.raises(ModelError) as err:
            chosen.complete(MESSAGES, TOOLS)
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret-123"
    assert "MY_KEY" in str(err.value) and "401" in str(err.value)
    assert "sk-secret-123" not in str(err.value) + repr(chosen) + chosen.name


def test_unauthorized_without_a_key_says_to_set_one() -> None:
    with scripted_server([Step("", status=401)]) as server, pytest.raises(ModelError) as err:
        model(server.base_url).complete(MESSAGES, TOOLS)
    assert "No API key was sent: set OPENAI_API_KEY" in str(err.value)


def test_unknown_model_points_at_the_models_list() -> None:
    body = {"error": {"message": "The model `scripted` does not exist."}}
    with scripted_server([Step(body, status=404)]) as server, pytest.raises(ModelError) as err:
        model(server.base_url).complete(MESSAGES, TOOLS)
    assert "does not exist" in str(err.value)
    assert f"GET {server.base_url}/models" in str(err.value)


def test_url_without_v1_points_at_the_path() -> None:
    with scripted_server([]) as server, pytest.raises(ModelError) as err:
        model(server.base_url.removesuffix("/v1")).complete(MESSAGES, TOOLS)
    assert "404" in str(err.value) and "the URL ends in /v1" in str(err.value)
    assert server.requests[0].path == "/chat/completions"


def test_tool_choice_refused_suggests_server_flags() -> None:
    body = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice'}}
    with scripted_server([Step(body, status=400)]) as server, pytest.raises(ModelError) as err:
        model(server.base_url).complete(MESSAGES, TOOLS)
    assert "--tool-call-parser" in str(err.value)


def test_connection_refused_names_the_url() -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelError) as err:
        model(url, retries=1).complete(MESSAGES, TOOLS)
    assert f"no server answered at {url}" in str(err.value)
    assert "2 attempts" in str(err.value)


def test_slow_server_times_out() -> None:
    with scripted_server([Step(completion("late"), delay_s=1.0)]) as server:
        start = time.monotonic()
        with pytest.raises(ModelError) as err:
            model(server.base_url, timeout_s=0.2).complete(MESSAGES, TOOLS)
    assert time.monotonic() - start < 0.9
    assert "within 0.2 s" in str(err.value)
    assert len(server.requests) == 1  # a timeout is not retried: it would multiply the wait


def test_spec_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    spec = "openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1/?timeout_s=9&max_tokens=5"
    loaded = backends.load(spec)
    assert isinstance(loaded, OpenAIModel)
    assert (loaded.model, loaded.base_url, loaded.timeout_s) == (
        "Qwen/Qwen2.5-7B",
        "http://127.0.0.1:8000/v1",
        9.0,
    )
    assert (loaded.max_tokens, loaded.key_env, loaded.name) == (
        5,
        "OPENAI_API_KEY",
        "openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1",
    )
    assert repr(loaded) == "OpenAIModel('openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1', key=set)"


@pytest.mark.parametrize(
    "spec",
    ["gpt", "openai:gpt", "openai:@http://h/v1", "openai:m@ftp://h", "openai:m@http://h/v1?x=1"],
)
def test_bad_specs_are_value_errors(spec: str) -> None:
    with pytest.raises(ValueError, match="openai:MODEL@URL|unknown option"):
        backends.load(spec)


def test_unknown_backend_lists_the_forms() -> None:
    with pytest.raises(ValueError) as err:
        backends.load("llama:foo")
    for form in ("openai:MODEL@URL", "vllm:PATH", "hf:PATH[#FILE.gguf]", "smollm2"):
        assert form in str(err.value)


def test_backend_not_built_or_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(backends.BACKENDS, "later", "nvcc_opt.agent.backends.nope:from_spec")
    with pytest.raises(ModelError, match="not available in this version"):
        backends.load("later:x")
    (tmp_path / "needs_dep.py").write_text("import no_such_package_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(backends.BACKENDS, "needs", "needs_dep:from_spec")
    with pytest.raises(ModelError, match="needs the Python package 'no_such_package_xyz'"):
        backends.load("needs")


def _long_conversation() -> list[dict[str, Any]]:
    calls = [
        m
        for n in range(3)
        for m in (
            {"role": "assistant", "content": "", "tool_calls": [call(f"c{n}", "file_viewer", {})]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": str(n) * 2000},
        )
    ]
    return [*MESSAGES, *calls]


FULL = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, you requested "
        "9361 tokens (8337 in the messages, 1024 in the completion)."
    }
}


def test_a_full_context_is_sent_again_with_the_oldest_results_elided() -> None:
    script = [Step(FULL, status=400), Step(FULL, status=400), Step(completion("done"))]
    with scripted_server(script) as server:
        reply = model(server.base_url).complete(_long_conversation(), TOOLS)
    assert reply.text == "done" and reply.raw["elided_tool_results"] == 2
    sent = [
        [m["content"] for m in r.body["messages"] if m["role"] == "tool"] for r in server.requests
    ]
    assert [sum(c.startswith("[this tool result") for c in s) for s in sent] == [0, 1, 2]
    assert sent[2][2] == "2" * 2000  # the newest turn's result stays whole


def test_a_context_that_never_fits_says_what_was_tried() -> None:
    with scripted_server([Step(FULL, status=400)] * 3) as server, pytest.raises(ModelError) as err:
        model(server.base_url).complete(_long_conversation(), TOOLS)
    assert "maximum context length is 8192" in str(err.value)
    assert "with 2 of the older tool results elided" in str(err.value)
    assert len(server.requests) == 3
