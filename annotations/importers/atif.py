"""ATIF (Agent Trajectory Interchange Format, Harbor / terminal-bench) trajectories.

Steps have ``source`` system / user / agent; agent steps carry ``message``, ``reasoning_content``,
``tool_calls`` ({tool_call_id, function_name, arguments}) and ``observation.results``
({source_call_id, content}; content that is neither text nor text parts is kept as JSON).
Terminal tools (``bash_command`` with ``command`` or ``keystrokes``) become C1 ``bash`` calls.
Agents that write their actions in the message (Terminus' raw-content mode: a JSON reply with
``commands[].keystrokes``) are read by the shared text-action parser at import. A harness that
parses Terminus' keystroke replies into ``tool_calls`` (Harbor) ran nothing for a keystroke reply
it recorded without them (one its parser rejected: "Previous response had parsing errors"), so
that text is not read as actions, and ``metadata.actions_not_run`` says why.
"""

from __future__ import annotations

import json
from typing import Any

from annotations.importers.base import (
    ImportFormatError,
    assistant,
    bash_call,
    require_list,
    str_or_none,
    text_of,
    tool_call,
    tool_result,
    with_openhands_sandbox,
    workspace_named_in,
)
from annotations.importers.text_actions import TEXT_READ
from core.actions import NOT_RUN_KEY
from core.canonical import DEFAULT_COMMAND_KEYS, DEFAULT_SHELL_TOOLS
from core.text_actions import find_blocks

FORMAT = "atif"
SHELL_FUNCTIONS: frozenset[str] = frozenset({*DEFAULT_SHELL_TOOLS, "bash_command"})
SHELL_ARG_KEYS: tuple[str, ...] = (*DEFAULT_COMMAND_KEYS, "keystrokes")


def looks_like(record: dict) -> bool:
    """``schema_version`` "ATIF-v1.x", or ``steps`` with ``session_id`` / ``agent``."""
    version = record.get("schema_version")
    if isinstance(version, str) and version.upper().startswith("ATIF"):
        return True
    return isinstance(record.get("steps"), list) and (
        "session_id" in record or isinstance(record.get("agent"), dict)
    )


def _convert_call(raw: object, path: str) -> dict:
    if not isinstance(raw, dict):
        raise ImportFormatError(f"{FORMAT}: {path} must be an object", field=path)
    name = raw.get("function_name")
    if not isinstance(name, str) or not name:
        raise ImportFormatError(
            f"{FORMAT}: {path}.function_name must be a non-empty string",
            field=f"{path}.function_name",
        )
    call_id = str_or_none(raw.get("tool_call_id"))
    arguments = raw.get("arguments")
    if arguments is None:
        arguments = {}
    if name in SHELL_FUNCTIONS and isinstance(arguments, dict):
        for key in SHELL_ARG_KEYS:
            value = arguments.get(key)
            if isinstance(value, str):
                # Keystrokes end with "\n" (Enter); the command is what precedes it.
                return bash_call(call_id, value.rstrip("\n"))
    return tool_call(call_id, name, arguments)


def _results(step: dict) -> list[tuple[str | None, str]]:
    observation = step.get("observation")
    if not isinstance(observation, dict):
        return []
    results = observation.get("results")
    if not isinstance(results, list):
        return []
    return [
        (str_or_none(item.get("source_call_id")), _content(item.get("content")))
        for item in results
        if isinstance(item, dict)
    ]


def _content(value: object) -> str:
    """Text, text parts, or (kept as JSON rather than dropped) any other value."""
    text = text_of(value)
    if text or value is None or value == "" or value == []:
        return text
    return json.dumps(value, ensure_ascii=False)


def _extra(value: object) -> dict:
    extra = value.get("extra") if isinstance(value, dict) else None
    return extra if isinstance(extra, dict) else {}


def _workspace(record: dict, steps: list) -> tuple[str | None, str | None]:
    """Where the agent worked: the trajectory's ``extra``, the agent's (Harbor writes Codex'
    ``cwd`` there), the first agent step's (Harbor's Claude Code steps carry the session's
    ``cwd``), else the directory the task's text names."""
    agent_steps = [s for s in steps if isinstance(s, dict) and s.get("source") == "agent"]
    for extra in (_extra(record), _extra(record.get("agent")), *map(_extra, agent_steps[:1])):
        for key in ("workspace", "cwd", "working_dir"):
            if isinstance(extra.get(key), str) and extra[key]:
                return extra[key], None
    task = next(
        (s.get("message") for s in steps if isinstance(s, dict) and s.get("source") == "user"),
        None,
    )
    named = workspace_named_in(text_of(task))
    return (named, "the task's text") if named else (None, None)


def convert(record: object) -> dict:
    """Unknown step sources are skipped; ``final_metrics`` and ``notes`` go to metadata."""
    if not isinstance(record, dict):
        raise ImportFormatError(f"{FORMAT}: expected an object with 'steps'")
    steps = require_list(record.get("steps"), "steps", FORMAT)
    # Whether the harness turns keystroke replies into calls (then one left without any ran
    # nothing), or the agent's message is its action (raw content: the text ran).
    parses_keystrokes = any(
        isinstance(call, dict)
        and isinstance(call.get("arguments"), dict)
        and "keystrokes" in call["arguments"]
        for s in steps
        if isinstance(s, dict) and isinstance(s.get("tool_calls"), list)
        for call in s["tool_calls"]
    )
    messages: list[dict[str, Any]] = []
    not_run: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        path = f"steps[{i}]"
        if not isinstance(step, dict):
            raise ImportFormatError(f"{FORMAT}: {path} must be an object", field=path)
        source = step.get("source")
        text = text_of(step.get("message"))
        if source in ("system", "user"):
            messages.append({"role": source, "content": text})
            # System steps may carry observations (v1.2+), e.g. a subagent's result.
            messages.extend({"role": "user", "content": c} for _, c in _results(step) if c)
            continue
        if source != "agent":
            continue
        raw_calls = step.get("tool_calls")
        calls = [
            _convert_call(raw, f"{path}.tool_calls[{j}]")
            for j, raw in enumerate(raw_calls if isinstance(raw_calls, list) else [])
        ]
        reasoning = step.get("reasoning_content")
        message = assistant(
            text, reasoning=reasoning if isinstance(reasoning, str) else "", tool_calls=calls
        )
        if parses_keystrokes and not calls and find_blocks(text, "terminus"):
            message[TEXT_READ] = True
            not_run.append(
                {
                    "message_index": len(messages),
                    "reason": "the harness recorded no tool call for this reply: nothing ran",
                }
            )
        messages.append(message)
        for call_id, content in _results(step):
            if calls:
                messages.append(tool_result(call_id, content))
            elif content:
                # Observations of a call-less step (raw-content agents) are plain feedback.
                messages.append({"role": "user", "content": content})
    metadata: dict[str, Any] = {NOT_RUN_KEY: not_run} if not_run else {}
    agent = record.get("agent")
    if isinstance(agent, dict):
        if isinstance(agent.get("name"), str):
            metadata["agent"] = agent["name"]
        if isinstance(agent.get("version"), str):
            metadata["agent_version"] = agent["version"]
        if isinstance(agent.get("model_name"), str):
            metadata["model"] = agent["model_name"]
    if "model" not in metadata:
        # Older files name the model per step only.
        models = [s.get("model_name") for s in steps if isinstance(s, dict)]
        model = next((m for m in models if isinstance(m, str) and m), None)
        if model:
            metadata["model"] = model
    source_info = {
        key: record[key]
        for key in ("schema_version", "final_metrics", "notes", "extra")
        if key in record
    }
    if source_info:
        metadata["source_info"] = source_info
    workspace, workspace_from = _workspace(record, steps)
    if workspace:
        # Harbor's ATIF of an OpenHands run: the same sandbox as OpenHands' own log.
        openhands = metadata.get("agent") == "openhands"
        metadata["workspace"] = with_openhands_sandbox(workspace) if openhands else workspace
        if workspace_from:
            metadata["workspace_from"] = workspace_from
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata}
    session_id = str_or_none(record.get("session_id"))
    if session_id:
        canonical["id"] = session_id
    return canonical
