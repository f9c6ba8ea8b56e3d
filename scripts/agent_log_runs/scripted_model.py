"""A scripted stand-in for a model API, so real agents can be run here and write real logs.

It speaks just enough of three wire formats: the OpenAI Responses API with SSE (Codex CLI), the
Anthropic Messages API with SSE (Claude Code) and OpenAI chat completions, plain or streamed
(litellm, as mini-swe-agent and the OpenHands SDK call it). It does not read the prompt: the
reply to a request is the episode's next turn, found by counting the tool results (or, for
text-mode agents, the assistant turns) the request already holds, so a retried request gets
the same turn again. A request that is not the agent's main loop (Claude Code's title or
topic calls, which carry no tools) gets a short text.

Usage: python scripted_model.py EPISODE PORT [REQUEST_LOG]
(EPISODE is ``codex``, ``claude``, ``mini`` or ``openhands``; see episodes.py.)
Not part of the service and not run by CI.
"""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import episodes

Turn = dict[str, Any]
EPISODE: list[Turn] = []
REQUEST_LOG: Path | None = None
COUNTER = {"n": 0}


def turn_at(results_seen: int) -> Turn:
    """The turn that follows ``results_seen`` tool results (turns may hold parallel calls)."""
    done = 0
    for turn in EPISODE:
        if done == results_seen:
            return turn
        done += len(turn["calls"])
    if done == results_seen:
        return EPISODE[-1] if not EPISODE[-1]["calls"] else {"text": "Done.", "calls": []}
    return {"text": "Done.", "calls": []}


def next_id(prefix: str) -> str:
    COUNTER["n"] += 1
    return f"{prefix}_{COUNTER['n']:04d}"


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        body = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {body}\n\n")
    return "".join(out).encode()


# --- OpenAI Responses API (Codex CLI) -------------------------------------------------------


def responses_reply(body: dict[str, Any]) -> bytes:
    kinds = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
    seen = sum(1 for item in body.get("input", []) if item.get("type") in kinds)
    turn = turn_at(seen)
    items: list[dict[str, Any]] = []
    if turn.get("reasoning"):
        items.append(
            {
                "type": "reasoning",
                "id": next_id("rs"),
                "summary": [{"type": "summary_text", "text": turn["reasoning"]}],
            }
        )
    if turn.get("text"):
        items.append(
            {
                "type": "message",
                "id": next_id("msg"),
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}],
            }
        )
    for call in turn["calls"]:
        call_id = next_id("call")
        if call["tool"] == "apply_patch":
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": next_id("ctc"),
                    "status": "completed",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": call["patch"],
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": next_id("fc"),
                    "status": "completed",
                    "call_id": call_id,
                    "name": call["tool"],
                    "arguments": json.dumps(call["args"]),
                }
            )
    response_id = next_id("resp")
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("response.created", {"type": "response.created", "response": {"id": response_id}})
    ]
    for index, item in enumerate(items):
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 10},
        "total_tokens": 1050,
    }
    events.append(
        (
            "response.completed",
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        )
    )
    return sse(events)


# --- Anthropic Messages API (Claude Code) ---------------------------------------------------


def anthropic_blocks(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    tools = {tool.get("name") for tool in body.get("tools") or []}
    if "Bash" not in tools:
        return [{"type": "text", "text": "Fix the mean of an empty list"}], "end_turn"
    seen = 0
    for message in body.get("messages", []):
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            seen += sum(1 for b in message["content"] if b.get("type") == "tool_result")
    turn = turn_at(seen)
    blocks: list[dict[str, Any]] = []
    if turn.get("reasoning"):
        blocks.append({"type": "thinking", "thinking": turn["reasoning"], "signature": "c2lnbmVk"})
    if turn.get("text"):
        blocks.append({"type": "text", "text": turn["text"]})
    for call in turn["calls"]:
        blocks.append(
            {
                "type": "tool_use",
                "id": next_id("toolu"),
                "name": call["tool"],
                "input": call["args"],
            }
        )
    return blocks, "tool_use" if turn["calls"] else "end_turn"


def anthropic_reply(body: dict[str, Any]) -> tuple[bytes, str]:
    blocks, stop = anthropic_blocks(body)
    message_id = next_id("msg")
    usage = {
        "input_tokens": 1000,
        "output_tokens": 50,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    if not body.get("stream"):
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return json.dumps(message).encode(), "application/json"
    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif block["type"] == "text":
            head = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events), "text/event-stream"


# --- OpenAI chat completions (litellm: mini-swe-agent, OpenHands SDK) ------------------------


def chat_message(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages", [])
    if body.get("tools"):
        seen = sum(1 for m in messages if m.get("role") == "tool")
    else:  # text mode: one action per assistant turn
        seen = sum(1 for m in messages if m.get("role") == "assistant")
    turn = turn_at(seen)
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("text") or None}
    if body.get("tools") and turn["calls"]:
        message["tool_calls"] = [
            {
                "id": next_id("call"),
                "type": "function",
                "function": {"name": call["tool"], "arguments": json.dumps(call["args"])},
            }
            for call in turn["calls"]
        ]
    return message


def chat_reply(body: dict[str, Any]) -> tuple[bytes, str]:
    message = chat_message(body)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    completion_id = next_id("chatcmpl")
    usage = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}
    if not body.get("stream"):
        completion = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return json.dumps(completion).encode(), "application/json"
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(message["tool_calls"])]
    chunk = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model"),
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (
            None,
            {
                **chunk,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        ),
        (None, "[DONE]"),
    ]
    return sse(events), "text/event-stream"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(
                200,
                json.dumps({"object": "list", "data": [], "models": []}).encode(),
                "application/json",
            )
            return
        self._send(404, b'{"error": "not found"}', "application/json")

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        if REQUEST_LOG:
            with REQUEST_LOG.open("a") as log:
                log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/responses"):
            self._send(200, responses_reply(body), "text/event-stream")
        elif path.endswith("/messages/count_tokens"):
            self._send(200, b'{"input_tokens": 1000}', "application/json")
        elif path.endswith("/messages"):
            self._send(200, *anthropic_reply(body))
        elif path.endswith("/chat/completions"):
            self._send(200, *chat_reply(body))
        else:
            self._send(404, b'{"error": "not found"}', "application/json")


def main() -> None:
    global EPISODE, REQUEST_LOG
    EPISODE = episodes.EPISODES[sys.argv[1]]
    if len(sys.argv) > 3:
        REQUEST_LOG = Path(sys.argv[3])
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
