"""A scripted OpenAI-compatible server on loopback, for tests that need a real socket.

Each POST to /v1/chat/completions takes the next Step of the script; every request is recorded.
The server lives in a daemon thread and shuts itself down after `lifetime_s`, so a test that hangs
or forgets to stop it cannot keep it alive.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One scripted answer: a JSON body (dict) or raw text (str), after an optional delay."""

    body: dict[str, Any] | str = ""
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def completion(
    text: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A chat-completions response body as vLLM's server writes it."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One native tool call, as it appears in `message.tool_calls`."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler still sleeping out a delay must not block shutdown

    def __init__(self, script: list[Step]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = list(script)
        self.requests: list[Request] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_step(self, request: Request) -> Step:
        with self.lock:
            self.requests.append(request)
            if request.path != "/v1/chat/completions":
                return Step({"error": {"message": f"no route {request.path}"}}, status=404)
            if not self.script:
                return Step({"error": {"message": "script exhausted"}}, status=599)
            return self.script.pop(0)


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def do_POST(self) -> None:  # the name http.server dispatches to
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        step = self.server.next_step(Request(self.path, dict(self.headers), body))
        time.sleep(step.delay_s)
        payload = step.body if isinstance(step.body, str) else json.dumps(step.body)
        with contextlib.suppress(OSError):  # the client may have given up waiting
            self.send_response(step.status)
            self.send_header("Content-Type", "application/json")
            for name, value in step.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload.encode())))
            self.end_headers()
            self.wfile.write(payload.encode())

    def log_message(self, format: str, *args: Any) -> None:  # the base class's signature
        """Quiet: pytest shows the assertions, not an access log."""


@contextlib.contextmanager
def scripted_server(script: list[Step], lifetime_s: float = 30.0) -> Iterator[ScriptedServer]:
    """A running server for the script; stopped on exit, or by itself after `lifetime_s`."""
    server = ScriptedServer(script)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    deadline = threading.Timer(lifetime_s, server.shutdown)
    deadline.daemon = True
    deadline.start()
    try:
        yield server
    finally:
        deadline.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
