"""A local HTTP server that speaks OpenAI Chat Completions and Anthropic Messages.

Tests point the real SDKs at it (`base_url`) and script it per test: a queue of replies,
and rules that answer when the last message matches. Every request is recorded. Nothing
patches the SDKs: requests and responses cross a real socket in the providers' formats.
"""

from __future__ import annotations

import base64
import itertools
import json
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reasoning: str | None = None
    usage: tuple[int, int] | None = None  # (prompt, completion); estimated when None
    cache: tuple[int, int] | None = None  # Anthropic's (cache read, cache write) input tokens
    status: int = 200
    error: str | None = None  # with a status >= 400
    delay: float = 0.0
    raw_arguments: str | None = None  # sent verbatim as every call's arguments (OpenAI)
    raw_body: str | None = None  # sent verbatim as a 200 answer (a broken proxy)
    raw_content_type: str = "text/html"
    # Streamed answers: text and arguments go out in pieces of this many characters, one
    # event every `chunk_delay` seconds, and the stream is cut after `cut_after` events.
    piece_chars: int = 4
    signature: str | None = None  # Gemini's thoughtSignature on the answer's first part
    chunk_delay: float = 0.0
    cut_after: int | None = None
    gate: threading.Event | None = None  # held until the test sets it (30 s at most)


Answer = Callable[["Recorded"], Reply]


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return (name, arguments)


@dataclass
class Recorded:
    provider: str  # "openai" | "anthropic"
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    def last_text(self) -> str:
        """The text of the last message, whatever the wire format."""
        if self.provider == "gemini":
            parts = self.body["contents"][-1]["parts"]
            return "".join(
                p.get("text", "") or json.dumps(p.get("functionResponse", "")) for p in parts
            )
        content = self.body["messages"][-1]["content"]
        if isinstance(content, str):
            return content
        return "".join(
            b.get("text", "") or str(b.get("content", "")) for b in content if isinstance(b, dict)
        )

    def system_text(self) -> str:
        """The system prompt, wherever the provider's wire form puts it."""
        if self.provider == "gemini":
            parts = (self.body.get("systemInstruction") or {}).get("parts") or []
            return "".join(p.get("text", "") for p in parts)
        if self.provider in ("anthropic", "bedrock"):
            system = self.body.get("system") or []
            return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
        first = self.body["messages"][0]
        return str(first["content"]) if first.get("role") == "system" else ""

    @property
    def tool_names(self) -> list[str]:
        if self.provider == "bedrock":
            return [t["toolSpec"]["name"] for t in (self.body.get("toolConfig") or {})["tools"]]
        if self.provider == "gemini":
            return [
                f["name"]
                for t in self.body.get("tools") or ()
                for f in t.get("functionDeclarations") or ()
            ]
        tools = self.body.get("tools") or []
        return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.models: list[str] = ["gpt-fake-mini", "gpt-fake-large"]
        self.embedding_requests: list[dict[str, Any]] = []
        # OpenAI embeddings: answered once this is set (a slow provider while it is not),
        # and with a 500 while `embedding_failures` is above zero (a failing one).
        self.embedding_gate = threading.Event()
        self.embedding_gate.set()
        self.embedding_failures = 0
        # Another compatible server's embeddings answer, made from the request's body.
        self.embedding_answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.gates_timed_out = 0  # replies whose gate was not set within 30 s
        self.listings: list[str] = []  # the keys model lists were asked with (GET /models)
        self.bedrock_profiles = ["us.anthropic.claude-sonnet-4-20250514-v1:0"]
        # With a barrier, a model list is answered only once its parties all asked (at once).
        self.list_barrier: threading.Barrier | None = None
        self._queue: deque[Reply] = deque()
        self._rules: list[tuple[Callable[[Recorded], bool], Reply | Answer]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0), _handler(self), bind_and_activate=False
        )
        self._server.request_queue_size = 128  # many steps call at once in concurrency tests
        self._server.server_bind()
        self._server.server_activate()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- scripting --------------------------------------------------------------------

    def reply(self, text: str = "", *calls: tuple[str, dict[str, Any]], **extra: Any) -> FakeLLM:
        self._queue.append(Reply(text=text, tool_calls=list(calls), **extra))
        return self

    def fail(self, status: int, message: str = "scripted failure", times: int = 1) -> FakeLLM:
        for _ in range(times):
            self._queue.append(Reply(status=status, error=message))
        return self

    def when(self, predicate: Callable[[Recorded], bool], reply: Reply | Answer) -> FakeLLM:
        """Answer matching requests with `reply`, or with what `reply(request)` returns."""
        self._rules.append((predicate, reply))
        return self

    def clear(self) -> None:
        """Drop the scripted replies not used yet."""
        with self._lock:
            self._queue.clear()

    def reset(self) -> None:
        """Back to a fresh server: no replies, no rules, nothing recorded."""
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self.requests.clear()
            self.gates_timed_out = 0
            self.listings.clear()

    @property
    def pending(self) -> int:
        return len(self._queue)

    # -- lifecycle --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- answering --------------------------------------------------------------------

    def _answer(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self._queue:
                return self._queue.popleft()
            for predicate, reply in self._rules:
                if predicate(recorded):
                    return reply(recorded) if callable(reply) else reply
        return Reply(status=500, error="the fake LLM has no scripted reply left")

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"


def _estimate(body: dict[str, Any], reply: Reply) -> tuple[int, int]:
    if reply.usage:
        return reply.usage
    return len(json.dumps(body)) // 4, max(1, len(reply.text + json.dumps(reply.tool_calls)) // 4)


def openai_body(fake: FakeLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt, completion = _estimate(body, reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": fake.next_id("call_"),
                "type": "function",
                "function": {"name": name, "arguments": reply.raw_arguments or json.dumps(args)},
            }
            for name, args in reply.tool_calls
        ]
    return {
        "id": fake.next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def anthropic_body(fake: FakeLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt, completion = _estimate(body, reply)
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append(
            {
                "type": "thinking",
                "thinking": reply.reasoning,
                "signature": f"sig-{len(reply.reasoning)}",
            }
        )
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for name, args in reply.tool_calls:
        content.append(
            {"type": "tool_use", "id": fake.next_id("toolu_01"), "name": name, "input": args}
        )
    return {
        "id": fake.next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            **(
                {
                    "cache_read_input_tokens": reply.cache[0],
                    "cache_creation_input_tokens": reply.cache[1],
                }
                if reply.cache
                else {}
            ),
        },
    }


def gemini_body(fake: FakeLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt, completion = _estimate(body, reply)
    parts: list[dict[str, Any]] = []
    if reply.reasoning:
        parts.append({"text": reply.reasoning, "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in reply.tool_calls]
    if reply.signature:  # on the first call, else the first part
        first = next((p for p in parts if "functionCall" in p), parts[0] if parts else None)
        if first is not None:
            first["thoughtSignature"] = reply.signature
    thoughts = len(reply.reasoning or "") // 4
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + completion + thoughts,
        },
        "modelVersion": "gemini-fake-001",
        "responseId": fake.next_id("gm"),
    }


def gemini_stream(full: dict[str, Any], size: int = 4) -> Iterator[dict[str, Any]]:
    """Text and thoughts in pieces, each call whole, usage and the finish on the last."""
    head = {"modelVersion": full["modelVersion"], "responseId": full["responseId"]}
    parts = full["candidates"][0]["content"]["parts"]
    for part in parts:
        if "text" in part:
            for n, piece in enumerate(pieces(part["text"], size)):
                one = {**part, "text": piece}
                if n and "thoughtSignature" in one:
                    del one["thoughtSignature"]
                yield head | {
                    "candidates": [{"content": {"role": "model", "parts": [one]}, "index": 0}]
                }
        else:
            yield head | {
                "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]
            }
    yield head | {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": full["usageMetadata"],
    }


def gemini_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """batchEmbedContents' answer: one hashed vector a request, in order."""
    from cairn.embeddings.base import HashEmbedder

    out = []
    for request in body.get("requests") or ():
        text = "".join(p.get("text", "") for p in request["content"]["parts"])
        dim = int(request.get("outputDimensionality") or 3072)
        out.append({"values": HashEmbedder(dim).embed([text])[0]})
    return {"embeddings": out}


def bedrock_body(fake: FakeLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """Bedrock Converse's answer (boto3's `converse` output, as it travels)."""
    prompt, completion = _estimate(body, reply)
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append(
            {
                "reasoningContent": {
                    "reasoningText": {
                        "text": reply.reasoning,
                        "signature": f"sig-{len(reply.reasoning)}",
                    }
                }
            }
        )
    if reply.text:
        content.append({"text": reply.text})
    for name, args in reply.tool_calls:
        content.append(
            {"toolUse": {"toolUseId": fake.next_id("tooluse_"), "name": name, "input": args}}
        )
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if reply.tool_calls else "end_turn",
        "usage": {
            "inputTokens": prompt,
            "outputTokens": completion,
            "totalTokens": prompt + completion,
        },
        "metrics": {"latencyMs": 1},
    }


def eventstream_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One frame of AWS's binary event stream (what ConverseStream answers with): prelude
    (total and headers length, their CRC32), string headers, JSON payload, CRC32 of all."""
    import struct
    import zlib

    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_stream(full: dict[str, Any], size: int = 4) -> Iterator[tuple[str, dict[str, Any]]]:
    """ConverseStream's events for a Converse answer: text, reasoning and tool input in
    pieces, usage in the closing metadata."""
    yield "messageStart", {"role": "assistant"}
    for i, block in enumerate(full["output"]["message"]["content"]):
        if "toolUse" in block:
            use = block["toolUse"]
            yield (
                "contentBlockStart",
                {
                    "contentBlockIndex": i,
                    "start": {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}},
                },
            )
            for piece in pieces(json.dumps(use["input"]), size):
                yield (
                    "contentBlockDelta",
                    {"contentBlockIndex": i, "delta": {"toolUse": {"input": piece}}},
                )
        elif "text" in block:
            for piece in pieces(block["text"], size):
                yield "contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": piece}}
        else:
            said = block["reasoningContent"]["reasoningText"]
            for piece in pieces(said["text"], size):
                thought = {"reasoningContent": {"text": piece}}
                yield "contentBlockDelta", {"contentBlockIndex": i, "delta": thought}
            yield (
                "contentBlockDelta",
                {
                    "contentBlockIndex": i,
                    "delta": {"reasoningContent": {"signature": said["signature"]}},
                },
            )
        yield "contentBlockStop", {"contentBlockIndex": i}
    yield "messageStop", {"stopReason": full["stopReason"]}
    yield "metadata", {"usage": full["usage"], "metrics": full["metrics"]}


# Bedrock's error codes by status, as botocore reads them from `x-amzn-ErrorType`.
BEDROCK_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def bedrock_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """Titan's answer (one text) or Cohere's (a list, by embedding type), hashed vectors."""
    from cairn.embeddings.base import HashEmbedder

    if "texts" in body:
        vectors = HashEmbedder(1024).embed(body["texts"])
        return {"embeddings": {"float": vectors}, "texts": body["texts"]}
    vector = HashEmbedder(int(body.get("dimensions") or 1536)).embed([body["inputText"]])[0]
    return {"embedding": vector, "inputTextTokenCount": len(body["inputText"].split())}


def embeddings_body(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's embeddings answer, with deterministic vectors (word hashing, unit length)."""
    from cairn.embeddings.base import HashEmbedder

    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    vectors: list[Any] = HashEmbedder(int(body.get("dimensions") or 1536)).embed(texts)
    if body.get("encoding_format") == "base64":
        # As OpenAI answers what its SDK asks by default: each vector's float32s, little
        # endian, in base64 (a list of floats made the SDK build a value per number).
        vectors = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
    return {
        "object": "list",
        "model": body.get("model", "fake"),
        "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ],
        "usage": {
            "prompt_tokens": sum(len(t) // 4 for t in texts),
            "total_tokens": sum(len(t) // 4 for t in texts),
        },
    }


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_stream(full: dict[str, Any], size: int = 4) -> Iterator[dict[str, Any]]:
    message = full["choices"][0]["message"]
    base = {k: full[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("reasoning_content"):
        for piece in pieces(message["reasoning_content"], size):
            yield chunk({"reasoning_content": piece})
    if message["content"]:
        for piece in pieces(message["content"], size):
            yield chunk({"content": piece})
    for i, tool_call in enumerate(message.get("tool_calls") or ()):
        function = tool_call["function"]
        head = {"index": i, "id": tool_call["id"], "type": "function"}
        yield chunk({"tool_calls": [head | {"function": {"name": function["name"]}}]})
        for piece in pieces(function["arguments"], size):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, full["choices"][0]["finish_reason"])
    yield base | {"choices": [], "usage": full["usage"]}


def anthropic_stream(full: dict[str, Any], size: int = 4) -> Iterator[tuple[str, dict[str, Any]]]:
    start = dict(full, content=[], stop_reason=None)
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(full["content"]):
        kind = block["type"]
        empty = {
            "text": {"type": "text", "text": ""},
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {**block, "input": {}},
        }[kind]
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": i, "content_block": empty},
        )
        deltas = {
            "text": [
                {"type": "text_delta", "text": p} for p in pieces(block.get("text", ""), size)
            ],
            "thinking": [
                *(
                    {"type": "thinking_delta", "thinking": p}
                    for p in pieces(block.get("thinking", ""), size)
                ),
                {"type": "signature_delta", "signature": block.get("signature")},
            ],
            "tool_use": [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(json.dumps(block.get("input")), size)
            ],
        }[kind]
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": full["usage"]["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


# Complexity: one fake server speaking four providers' wire protocols (routes, streams).
def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:  # noqa: C901
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # two writes per response would wait on delayed ACKs

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            keys = (
                f"{self.headers.get('Authorization')} {self.headers.get('x-api-key')} "
                f"{self.headers.get('x-goog-api-key')}"
            )
            if self.path.split("?")[0] == "/inference-profiles":  # Bedrock's control plane
                fake.listings.append(keys)
                if "REJECTED" in keys:  # an access key id AWS does not know
                    error = {"x-amzn-ErrorType": "UnrecognizedClientException:http://internal"}
                    self._send_json(403, {"message": "The security token is invalid"}, error)
                    return
                self._send_json(
                    200,
                    {
                        "inferenceProfileSummaries": [
                            {
                                "inferenceProfileArn": f"arn:aws:bedrock:us-west-2:123456789012:"
                                f"inference-profile/{profile}",
                                "inferenceProfileId": profile,
                                "inferenceProfileName": profile,
                                "status": "ACTIVE",
                                "type": "SYSTEM_DEFINED",
                                "models": [],
                            }
                            for profile in fake.bedrock_profiles
                        ]
                    },
                )
                return
            if "rejected" in keys:  # a key the provider does not know
                self._send_json(
                    401,
                    {
                        "error": {
                            "type": "authentication_error",
                            "code": 401,
                            "message": "Incorrect API key provided",
                        }
                    },
                )
                return
            # OpenAI's, Anthropic's and Gemini's model lists, for GET /v1/models/ of the API
            fake.listings.append(keys)
            if fake.list_barrier is not None:
                try:
                    fake.list_barrier.wait()
                except threading.BrokenBarrierError:
                    self._send_json(500, {"error": {"message": "asked one after another"}})
                    return
            if self.headers.get("x-goog-api-key"):  # Gemini's SDK asks /v1/models too
                self._send_json(
                    200,
                    {
                        "models": [
                            {
                                "name": "models/gemini-fake-flash",
                                "displayName": "Gemini Fake Flash",
                                "inputTokenLimit": 1048576,
                                "supportedGenerationMethods": ["generateContent", "countTokens"],
                            },
                            {
                                "name": "models/gemini-embedding-001",
                                "inputTokenLimit": 2048,
                                "supportedGenerationMethods": ["embedContent"],
                            },
                        ]
                    },
                )
            elif self.path.rstrip("/").endswith("/models"):
                models = [
                    {
                        "id": m,
                        "object": "model",
                        "created": 0,
                        "owned_by": "fake",
                        "type": "model",
                        "display_name": m,
                        "created_at": "2026-01-01T00:00:00Z",
                    }
                    for m in fake.models
                ]
                self._send_json(
                    200,
                    {
                        "object": "list",
                        "data": models,
                        "has_more": False,
                        "first_id": None,
                        "last_id": None,
                    },
                )
            else:
                self._send_json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/").endswith("/embeddings"):
                fake.embedding_requests.append(body)
                fake.embedding_gate.wait(60)
                if fake.embedding_failures > 0:
                    fake.embedding_failures -= 1
                    self._send_json(500, {"error": {"message": "embeddings are down"}})
                    return
                answer = fake.embedding_answer or embeddings_body
                self._send_json(200, answer(body))
                return
            if self.path.rstrip("/").endswith("/invoke"):  # Bedrock's embedding models
                fake.embedding_requests.append({"path": self.path, **body})
                self._send_json(200, bedrock_embeddings(body))
                return
            if ":batchEmbedContents" in self.path:  # Gemini's embedding models
                fake.embedding_requests.append({"path": self.path, **body})
                self._send_json(200, gemini_embeddings(body))
                return
            path = self.path.split("?")[0].rstrip("/")
            provider = (
                "anthropic"
                if path.endswith("/messages")
                else "bedrock"
                if path.endswith(("/converse", "/converse-stream"))
                else "gemini"
                if "GenerateContent" in path or ":generateContent" in path
                else "openai"
            )
            recorded = Recorded(provider, self.path, body, dict(self.headers.items()))
            reply = fake._answer(recorded)
            if reply.gate is not None and not reply.gate.wait(30):
                fake.gates_timed_out += 1
            if reply.delay:
                threading.Event().wait(reply.delay)
            if reply.status >= 400 and provider == "bedrock":
                code = BEDROCK_ERRORS.get(reply.status, "InternalServerException")
                error_type = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/"}
                self._send_json(reply.status, {"message": reply.error or "error"}, error_type)
                return
            if reply.status >= 400 and provider == "gemini":
                status = {
                    429: "RESOURCE_EXHAUSTED",
                    403: "PERMISSION_DENIED",
                    400: "INVALID_ARGUMENT",
                }.get(reply.status, "INTERNAL")
                self._send_json(
                    reply.status,
                    {
                        "error": {
                            "code": reply.status,
                            "message": reply.error or "error",
                            "status": status,
                        }
                    },
                )
                return
            if reply.status >= 400:
                detail = {"type": "api_error", "message": reply.error or "error"}
                error = {"type": "error", "error": detail}
                self._send_json(reply.status, error)
                return
            if reply.raw_body is not None:
                data = reply.raw_body.encode()
                self.send_response(200)
                self.send_header("Content-Type", reply.raw_content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            maker = {
                "anthropic": anthropic_body,
                "bedrock": bedrock_body,
                "gemini": gemini_body,
            }.get(provider, openai_body)
            full = maker(fake, body, reply)
            if path.endswith("/converse-stream"):
                self._eventstream(full, reply)
            elif body.get("stream") or ":streamGenerateContent" in path:
                self._stream(provider, full, reply)
            else:
                self._send_json(200, full)

        def _send_json(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _eventstream(self, full: dict[str, Any], reply: Reply) -> None:
            """Bedrock's ConverseStream: binary event-stream frames, chunked, paced."""
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n, (kind, payload) in enumerate(bedrock_stream(full, reply.piece_chars)):
                if reply.cut_after is not None and n >= reply.cut_after:
                    self.close_connection = True
                    return
                if n and reply.chunk_delay:
                    threading.Event().wait(reply.chunk_delay)
                frame = eventstream_frame(kind, payload)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def _stream(self, provider: str, full: dict[str, Any], reply: Reply) -> None:
            """Event by event, each written as it is made (no length: the connection closes
            at the end), `reply.chunk_delay` apart: a model that streams at a set pace."""
            events: list[str] = []
            if provider == "anthropic":
                for event, data in anthropic_stream(full, reply.piece_chars):
                    events.append(f"event: {event}\ndata: {json.dumps(data)}\n\n")
            elif provider == "gemini":
                events += [
                    f"data: {json.dumps(chunk)}\r\n\r\n"
                    for chunk in gemini_stream(full, reply.piece_chars)
                ]
            else:
                events += [
                    f"data: {json.dumps(chunk)}\n\n"
                    for chunk in openai_stream(full, reply.piece_chars)
                ]
                events.append("data: [DONE]\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for n, event in enumerate(events):
                if reply.cut_after is not None and n >= reply.cut_after:
                    return  # the connection drops mid-stream
                if n and reply.chunk_delay:
                    threading.Event().wait(reply.chunk_delay)
                self.wfile.write(event.encode())
                self.wfile.flush()

    return Handler
