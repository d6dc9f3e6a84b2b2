"""``OpenAIStub``: an OpenAI-compatible chat server for tests, on a free port of 127.0.0.1.

Standard library only (``http.server`` in a thread). It answers ``POST /v1/chat/completions``
from a script, records every request body (and its headers), and can fail the ways real
servers do::

    with OpenAIStub("2, 0, 1") as stub:                       # every call answers "2, 0, 1"
        settings = load_settings({"RAGSPINE_LLM": stub.url, "RAGSPINE_LLM_MODEL": "stub"})
        ...
        assert stub.requests[0]["temperature"] == 0

    stub.script(Status(500), Status(429, retry_after=0), "ok")  # then: the default answer

A scripted reply is a text (a chat completion with that content), a callable of the request
body returning one, :class:`Status` (an HTTP error), :class:`Slow` (a reply after a delay) or
:class:`Raw` (any body, e.g. malformed JSON).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

__all__ = ["OpenAIStub", "Raw", "Slow", "Status"]


@dataclass(frozen=True)
class Status:
    """Answer HTTP ``code`` with an OpenAI-style error body (and ``Retry-After`` when given)."""

    code: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Slow:
    """Answer ``reply`` after ``seconds``."""

    seconds: float
    reply: Any = "slow"


@dataclass(frozen=True)
class Raw:
    """Answer ``body`` as is (status 200)."""

    body: bytes
    content_type: str = "application/json"


Reply = Union[str, Status, Slow, Raw, Callable[[dict[str, Any]], Any]]


class OpenAIStub:
    """See the module docstring. ``answer``: the reply when the script is empty."""

    def __init__(self, answer: Reply = "") -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []  # every request body, in order
        self.headers: list[dict[str, str]] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                stub._handle(self)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="openai-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT/v1``): ``RAGSPINE_LLM``'s value."""
        assert self._server is not None, "start the stub first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- script and records -----------------------------------------------------------------------
    def script(self, *replies: Reply) -> OpenAIStub:
        """Answer the next calls with ``replies``, in order (then the default ``answer``)."""
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def prompts(self) -> list[str]:
        """Every request's message contents joined into one text, in order."""
        return ["\n".join(str(m.get("content", "")) for m in body.get("messages", [])) for body in self.requests]

    @property
    def calls(self) -> int:
        return len(self.requests)

    # -- the handler ------------------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        if handler.path.rstrip("/") != "/v1/chat/completions":
            self._send(handler, 404, json.dumps({"error": {"message": f"no route {handler.path}"}}).encode())
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(handler, 400, b'{"error": {"message": "the body is not JSON"}}')
            return
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            reply = self._script.popleft() if self._script else self.answer
        self._reply(handler, body, reply)

    def _reply(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply) -> None:
        if isinstance(reply, Slow):
            time.sleep(reply.seconds)
            reply = reply.reply
        if callable(reply) and not isinstance(reply, (Status, Raw)):
            reply = reply(body)
        if isinstance(reply, Status):
            payload = json.dumps({"error": {"message": f"stub error {reply.code}", "type": "stub", "code": reply.code}}).encode()
            extra = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
            self._send(handler, reply.code, payload, headers=extra)
        elif isinstance(reply, Raw):
            self._send(handler, 200, reply.body, content_type=reply.content_type)
        else:
            self._send(handler, 200, json.dumps(_completion(body, str(reply))).encode())

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: bytes, *, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


def _completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": str(body.get("model", "")),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
