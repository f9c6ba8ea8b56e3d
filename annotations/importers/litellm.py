"""litellm call logs (``StandardLoggingPayload``, as its callbacks, proxy spend logs and the
``--detailed_debug`` JSON write them): the request's ``messages`` plus the ``response``.

Any other log of one chat-completion call in that layout is read alike: ``messages`` next to a
``response`` that is a chat completion (``choices[0].message``), as OpenHands' LLM completion
logs (``messages``, ``tools``, ``kwargs``, ``response``, ``cost``, ``latency_sec``) are. Read as
plain chat messages, their ``response`` (the model's latest action) was silently dropped.

The final assistant turn lives in ``response.choices[0].message`` (a chat completion, or its
text when the log kept only that), not in ``messages``: it is appended so it is not lost. A
JSONL of calls is one record per call, each the conversation up to that call.
"""

from __future__ import annotations

import json
from typing import Any

from annotations.importers.base import ImportFormatError, passthrough, require_list, str_or_none

FORMAT = "litellm"
MARKERS: tuple[str, ...] = (
    "call_type",
    "standard_built_in_tools_params",
    "model_map_information",
    "hidden_params",
    "response_cost",
    "litellm_call_id",
)


def _completion(response: object) -> dict | None:
    """``response`` when it is a chat completion whose first choice holds a message."""
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return response if isinstance(first, dict) and isinstance(first.get("message"), dict) else None


def looks_like(record: dict) -> bool:
    return (
        isinstance(record.get("messages"), list)
        and "response" in record
        and (any(key in record for key in MARKERS) or _completion(record["response"]) is not None)
    )


def _response_message(response: object) -> dict | None:
    if isinstance(response, str):
        try:
            response = json.loads(response)
        except (ValueError, RecursionError):
            return {"role": "assistant", "content": response} if response.strip() else None
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if isinstance(message.get("tool_calls"), list) and message["tool_calls"]:
        out["tool_calls"] = message["tool_calls"]
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = reasoning
    return out


def convert(record: object) -> dict:
    if not isinstance(record, dict):
        raise ImportFormatError(f"{FORMAT}: expected a logging payload object")
    messages = list(require_list(record.get("messages"), "messages", FORMAT))
    final = _response_message(record.get("response"))
    if final is not None:
        messages.append(final)
    metadata: dict[str, Any] = {"agent": "litellm"}
    for key in ("model", "call_type", "custom_llm_provider", "status", "response_cost", "cost"):
        if record.get(key) not in (None, ""):
            metadata[key] = record[key]
    completion = _completion(record.get("response")) or {}
    if "model" not in metadata and isinstance(completion.get("model"), str):
        metadata["model"] = completion["model"]
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata}
    # The payload's id, else the completion's (one call, one id).
    call_id = str_or_none(record.get("id")) or str_or_none(completion.get("id"))
    if call_id:
        canonical["id"] = call_id
    return passthrough(record, canonical, keys=("task_type", "outcome"))
