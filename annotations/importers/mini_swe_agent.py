"""mini-swe-agent trajectories: chat messages whose actions are written as text.

The agent answers with exactly one action block (1.x: a ```bash fence; 2.x text mode: a
```mswea_bash_command fence or an <mswea_bash_command> tag); anything else is a format error
and nothing runs. The next user message holds the output (``<returncode>`` / ``<output>``).
2.x also stores the commands it parsed in each message's ``extra.actions``, which are read
first. Tool-calling models store OpenAI ``tool_calls`` and ``tool`` messages, which pass through.
A turn left without calls for a format error is listed in ``metadata.actions_not_run``.
"""

from __future__ import annotations

from typing import Any

from annotations.importers.base import (
    ImportFormatError,
    assistant,
    bash_call,
    is_patch,
    passthrough,
    require_list,
    str_or_none,
    text_of,
    tool_result,
)
from annotations.importers.text_actions import TEXT_READ
from core.actions import NOT_RUN_KEY
from core.text_actions import find_blocks

FORMAT = "mini-swe-agent"


# mini-swe-agent's own words: its submit sentinel and its 2.x action fence.
MARKERS: tuple[str, ...] = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "mswea_bash_command")


def looks_like_messages(items: list) -> bool:
    """A bare message list (``mini`` without ``--output`` metadata, its test data) that speaks
    mini-swe-agent's protocol: the submit sentinel or the 2.x fence."""
    if not items or not all(isinstance(i, dict) and "role" in i for i in items):
        return False
    return any(
        isinstance(i.get("content"), str) and any(marker in i["content"] for marker in MARKERS)
        for i in items
        if i.get("role") in ("system", "assistant")
    )


def looks_like(record: dict) -> bool:
    """``trajectory_format`` says so; older files: ``info`` (with exit status) + ``messages``."""
    marker = record.get("trajectory_format")
    if isinstance(marker, str) and marker.startswith("mini-swe-agent"):
        return True
    info = record.get("info")
    return (
        isinstance(info, dict)
        and "exit_status" in info
        and isinstance(record.get("messages"), list)
    )


def _text_action(content: str) -> tuple[str, list[str] | None]:
    """(text without the block, [command]) when there is exactly one action block, as mini
    requires; (content, []) with none; (content, None) with several (a format error)."""
    blocks = [b for b in find_blocks(content, "all") if b.kind == "call"]
    if not blocks:
        return content, []
    if len(blocks) != 1 or blocks[0].call is None:
        return content, None
    block = blocks[0]
    arguments = block.call["arguments"]
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if not isinstance(command, str) or block.call["name"] != "bash":
        return content, None
    text = (content[: block.start] + content[block.end :]).strip()
    return text, [command.strip()]


def _extra_actions(raw: dict) -> list[str] | None:
    """mini-swe-agent 2.x stores the commands it parsed in ``extra.actions``."""
    extra = raw.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if not isinstance(actions, list) or not actions:
        return None
    commands = [a.get("command") for a in actions if isinstance(a, dict)]
    if not all(isinstance(c, str) for c in commands):
        return None
    return commands


def _submitted_output(messages: list[dict[str, Any]]) -> str | None:
    """Without ``info`` (a bare message list), the submission is what the submit command
    (the one printing the sentinel) output: the tool result that follows it."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(arguments, str):
                continue
            if MARKERS[0] in arguments and index + 1 < len(messages):
                answer = messages[index + 1]
                if answer.get("role") == "tool" and isinstance(answer.get("content"), str):
                    return answer["content"]
    return None


def convert(record: object) -> dict:
    """Unknown roles (e.g. a final ``exit`` message) are skipped, not fatal."""
    if isinstance(record, list):
        record = {"messages": record}
    if not isinstance(record, dict):
        raise ImportFormatError(f"{FORMAT}: expected an object with 'messages'")
    raw_messages = require_list(record.get("messages"), "messages", FORMAT)
    messages: list[dict[str, Any]] = []
    not_run: list[dict[str, Any]] = []
    pending_call: str | None = None
    for i, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            continue
        role = raw.get("role")
        content = text_of(raw.get("content"))
        reasoning = raw.get("reasoning_content")
        reasoning = reasoning if isinstance(reasoning, str) else ""
        if role == "assistant":
            pending_call = None
            if isinstance(raw.get("tool_calls"), list) and raw["tool_calls"]:
                messages.append(
                    assistant(content, reasoning=reasoning, tool_calls=raw["tool_calls"])
                )
                continue
            commands = _extra_actions(raw)
            text = content
            if commands is None:
                text, commands = _text_action(content)
            if commands is None:
                not_run.append(
                    {
                        "message_index": len(messages),
                        "reason": "several action blocks: a format error, nothing ran",
                    }
                )
            calls = [
                bash_call(f"mini-{i}" if j == 0 else f"mini-{i}-{j}", command)
                for j, command in enumerate(commands or [])
            ]
            pending_call = calls[0]["id"] if calls else None
            message = assistant(text, reasoning=reasoning, tool_calls=calls)
            message[TEXT_READ] = True
            messages.append(message)
        elif role == "tool":
            call_id = str_or_none(raw.get("tool_call_id")) or pending_call
            messages.append(tool_result(call_id, content))
            pending_call = None
        elif role == "user" and pending_call is not None:
            messages.append(tool_result(pending_call, content))
            pending_call = None
        elif role in ("system", "user"):
            messages.append({"role": role, "content": content})
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    metadata: dict[str, Any] = {"agent": "mini-swe-agent"}
    if not_run:
        metadata[NOT_RUN_KEY] = not_run
    if info:
        # The config is the whole agent setup (templates, env); only the model name matters here.
        metadata["source_info"] = {k: v for k, v in info.items() if k != "config"}
        config = info.get("config")
        model = config.get("model") if isinstance(config, dict) else None
        if isinstance(model, dict) and isinstance(model.get("model_name"), str):
            metadata["model"] = model["model_name"]
        if isinstance(info.get("mini_version"), str):
            metadata["agent_version"] = info["mini_version"]
        environment = config.get("environment") if isinstance(config, dict) else None
        cwd = environment.get("cwd") if isinstance(environment, dict) else None
        if isinstance(cwd, str) and cwd.strip():  # a local run's config may say "": none
            metadata["workspace"] = cwd
        if isinstance(info.get("exit_status"), str):
            metadata["exit_status"] = info["exit_status"]
    outcome: dict[str, Any] = {}
    if isinstance(info.get("resolved"), bool):
        outcome["resolved"] = info["resolved"]
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata, "outcome": outcome}
    submission = info.get("submission")
    if not isinstance(submission, str) or not submission:
        submission = _submitted_output(messages)
    if isinstance(submission, str) and is_patch(submission):
        canonical["patch"] = submission
    instance_id = str_or_none(record.get("instance_id"))
    if instance_id:
        canonical["id"] = instance_id
    return passthrough(record, canonical)
