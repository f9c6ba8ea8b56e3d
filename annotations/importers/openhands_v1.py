"""OpenHands V1 (software-agent-sdk) event logs: one event per line, or a JSON array of events.

Events carry a ``kind``: ``SystemPromptEvent`` (system prompt, tools), ``MessageEvent``
(``llm_message`` of the user or the agent), ``ActionEvent`` (one tool call: ``tool_call`` holds
the arguments the model sent, ``action`` the parsed action; actions of one model response share
``llm_response_id`` and make one step), ``ObservationEvent`` (the result, paired by
``tool_call_id``; a terminal's output with the exit code the SDK showed the model),
``AgentErrorEvent`` and ``UserRejectObservation`` (a call that did not run), and bookkeeping
(state updates, condensations, pauses), which is skipped. The workspace is the terminal's
``working_dir`` as the first observation reports it.
"""

from __future__ import annotations

import json
from typing import Any

from annotations.importers.base import (
    ImportFormatError,
    assistant,
    str_or_none,
    text_of,
    tool_call,
    tool_result,
)

FORMAT = "openhands-v1"
MESSAGE_KINDS: frozenset[str] = frozenset(
    {
        "SystemPromptEvent",
        "SystemPromptUpdateEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
    }
)
SYSTEM_PROMPT_KINDS: frozenset[str] = frozenset({"SystemPromptEvent", "SystemPromptUpdateEvent"})
OTHER_KINDS: frozenset[str] = frozenset(
    {
        "AgentErrorEvent", "UserRejectObservation", "ConversationStateUpdateEvent",
        "PauseEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
        "LLMCompletionLogEvent", "ConversationErrorEvent", "HookExecutionEvent",
    }
)  # fmt: skip
# Keys of a parsed action that are bookkeeping, not tool input.
ACTION_NOISE: frozenset[str] = frozenset({"kind", "security_risk", "summary"})


def is_event(item: object) -> bool:
    """A V1 event: a known kind, or any kind in the envelope every V1 event has (a string
    ``id`` and a ``source``), so that one event of a kind newer than this importer does not
    make the whole log unreadable."""
    if not isinstance(item, dict):
        return False
    kind = item.get("kind")
    if not isinstance(kind, str):
        return False
    known = kind in MESSAGE_KINDS or kind in OTHER_KINDS
    return known or (isinstance(item.get("id"), str) and isinstance(item.get("source"), str))


def looks_like(items: object) -> bool:
    """A list of V1 events with at least one message, action or observation."""
    if isinstance(items, dict):
        items = items.get("events")
    if not isinstance(items, list) or not items:
        return False
    return all(is_event(i) for i in items) and any(
        isinstance(i, dict) and i.get("kind") in MESSAGE_KINDS for i in items
    )


def _text(value: object) -> str:
    """V1 content is a list of ``TextContent`` / ``ImageContent`` parts (or a string)."""
    if isinstance(value, list):
        return text_of([p for p in value if not isinstance(p, dict) or p.get("type") != "image"])
    return text_of(value)


def _as_the_agent_read_it(observation: dict, content: str) -> str:
    """A terminal observation's output between the ``prefix`` and ``suffix`` its metadata holds,
    as the SDK shows it to the model. The suffix says how the command ended ("[The command
    completed with exit code 1.]", a timeout): the output alone hides a failing command, as
    ``is_error`` stays false for a non-zero exit. An exit code the suffix does not state is
    added in the SDK's words."""
    meta = observation.get("metadata")
    if not isinstance(meta, dict):
        return content
    prefix, suffix = meta.get("prefix"), meta.get("suffix")
    text = (prefix if isinstance(prefix, str) else "") + content
    text += suffix if isinstance(suffix, str) else ""
    code = observation.get("exit_code", meta.get("exit_code"))
    stated = isinstance(suffix, str) and "exit code" in suffix
    if isinstance(code, int) and not isinstance(code, bool) and code != -1 and not stated:
        text += f"\n[Command finished with exit code {code}]"
    return text


def _reasoning(event: dict, message: dict | None = None) -> str:
    source = message if message is not None else event
    reasoning = source.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        return reasoning
    blocks = source.get("thinking_blocks")
    if isinstance(blocks, list):
        return "\n".join(
            b["thinking"]
            for b in blocks
            if isinstance(b, dict) and isinstance(b.get("thinking"), str)
        )
    return ""


def _call(event: dict, index: int) -> dict:
    raw = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
    action = event.get("action") if isinstance(event.get("action"), dict) else {}
    call_id = str_or_none(event.get("tool_call_id") or raw.get("id")) or f"openhands-{index}"
    name = raw.get("name") or event.get("tool_name") or action.get("kind") or "unknown"
    arguments = raw.get("arguments")
    if not isinstance(arguments, str | dict):
        # No record of what the model sent: the parsed action is the closest thing.
        arguments = {k: v for k, v in action.items() if k not in ACTION_NOISE}
    return tool_call(call_id, str(name), arguments)


def convert(record: object) -> dict:
    events = record.get("events") if isinstance(record, dict) else record
    if not isinstance(events, list):
        raise ImportFormatError(f"{FORMAT}: expected a list of events", field="events")
    messages: list[dict[str, Any]] = []
    metadata: dict[str, Any] = {"agent": "openhands"}
    turn: tuple[str, dict] | None = None  # (llm_response_id, assistant message)
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        kind = event.get("kind") if isinstance(event.get("kind"), str) else None
        if kind in SYSTEM_PROMPT_KINDS:
            prompt = event.get("system_prompt")
            messages.append(
                {
                    "role": "system",
                    "content": _text([prompt] if isinstance(prompt, dict) else prompt),
                }
            )
            tools = event.get("tools")
            if isinstance(tools, list):
                metadata["tools"] = [
                    t.get("title") or t.get("name") for t in tools if isinstance(t, dict)
                ]
            turn = None
        elif kind == "MessageEvent":
            message = event.get("llm_message") if isinstance(event.get("llm_message"), dict) else {}
            role = message.get("role") or ("user" if event.get("source") == "user" else "assistant")
            text = _text(message.get("content"))
            if role == "assistant":
                messages.append(assistant(text, reasoning=_reasoning(event, message)))
            else:
                messages.append({"role": "user" if role != "system" else "system", "content": text})
            turn = None
        elif kind == "ActionEvent" or (
            kind not in OTHER_KINDS
            and (isinstance(event.get("action"), dict) or isinstance(event.get("tool_call"), dict))
        ):
            # An event of a kind this importer does not know that carries an action is read
            # as one: its call is then understood, or flagged as not understood.
            call = _call(event, index)
            response_id = str_or_none(event.get("llm_response_id"))
            if turn is not None and response_id is not None and turn[0] == response_id:
                turn[1].setdefault("tool_calls", []).append(call)
                continue
            thought = _text(event.get("thought"))
            message = assistant(thought, reasoning=_reasoning(event), tool_calls=[call])
            messages.append(message)
            turn = (response_id, message) if response_id else None
            llm = event.get("llm_response_model") or event.get("model")
            if isinstance(llm, str):
                metadata.setdefault("model", llm)
        elif kind == "ObservationEvent":
            observation = (
                event.get("observation") if isinstance(event.get("observation"), dict) else {}
            )
            content = _text(observation.get("content")) or text_of(observation.get("output"))
            content = _as_the_agent_read_it(observation, content)
            if observation.get("is_error") is True and not content.startswith("Error"):
                content = f"Error: {content}" if content else "Error"
            meta = observation.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("working_dir"), str):
                metadata.setdefault("workspace", meta["working_dir"])
            messages.append(tool_result(str_or_none(event.get("tool_call_id")), content))
        elif kind in ("AgentErrorEvent", "UserRejectObservation"):
            reason = event.get("error") or event.get("rejection_reason") or kind
            content = f"Error: {text_of(reason) or json.dumps(reason)}"
            call_id = str_or_none(event.get("tool_call_id"))
            if call_id:
                messages.append(tool_result(call_id, content))
            else:
                messages.append({"role": "user", "content": content})
        elif kind not in OTHER_KINDS:
            skipped = metadata.setdefault("events_skipped", {})
            skipped[str(kind)] = skipped.get(str(kind), 0) + 1
    if not messages:
        raise ImportFormatError(f"{FORMAT}: the log holds no message, action or observation")
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata}
    conversation = record.get("id") if isinstance(record, dict) else None
    if str_or_none(conversation):
        canonical["id"] = str_or_none(conversation)
    return canonical
