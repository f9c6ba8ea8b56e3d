"""Codex CLI rollouts (``~/.codex/sessions/.../rollout-*.jsonl``); one file is one trajectory.

Lines are ``{"timestamp", "type", "payload"}`` with ``type`` ``session_meta`` (id, cwd, CLI
version, git), ``turn_context`` (model, cwd, sandbox), ``response_item`` (Responses API items:
messages, ``reasoning``, ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` and
their outputs paired by ``call_id``) and ``event_msg`` (UI events that repeat the items; not
read). Rollouts before the ``payload`` envelope hold a first line with ``id`` and
``instructions``, then bare items and ``{"record_type": "state"}`` lines. ``codex exec --json``
streams (``thread.started``, ``item.completed`` ...) are read too; they name a command by the
shell line Codex ran (``/bin/bash -lc 'ls -la'``), read as the argv it quotes.

Shell calls keep their tool name (``shell``, ``shell_command``, ``exec_command``,
``local_shell``); an argv such as ``["bash", "-lc", "ls"]`` becomes the command ``ls`` (the
argv is kept beside it). ``apply_patch`` keeps its patch text under ``input``, also when the
model sent it through the shell tool (``["apply_patch", patch]``, or a ``bash -lc`` heredoc to
``apply_patch``), which Codex intercepts and applies itself: a file edit, not a shell command.
Rollouts whose lines name no ``cwd`` (before ``turn_context`` had one) give the workspace in
the ``<environment_context>`` message's ``<cwd>``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from annotations.importers.base import (
    ImportFormatError,
    assistant,
    str_or_none,
    text_of,
    tool_call,
    tool_result,
)

FORMAT = "codex"
ENVELOPES: frozenset[str] = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
ITEM_TYPES: frozenset[str] = frozenset(
    {
        "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
        "custom_tool_call_output", "local_shell_call", "local_shell_call_output",
        "web_search_call",
    }
)  # fmt: skip
EXEC_EVENTS: frozenset[str] = frozenset(
    {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
     "item.updated", "item.completed", "error"}
)  # fmt: skip
SHELLS: frozenset[str] = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"})


def _type(item: object) -> str | None:
    """An item's ``type`` when it is a string (anything else, lists included, is no type)."""
    kind = item.get("type") if isinstance(item, dict) else None
    return kind if isinstance(kind, str) else None


def is_line(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    kind = _type(item)
    if kind in ENVELOPES:
        return isinstance(item.get("payload"), dict)
    if kind in EXEC_EVENTS:
        return True
    return "record_type" in item


def _legacy_head(item: object) -> bool:
    return (
        isinstance(item, dict)
        and "type" not in item
        and "id" in item
        and ("instructions" in item or "git" in item)
    )


def looks_like(items: object) -> bool:
    """Rollout lines (any generation) or a ``codex exec --json`` stream."""
    if not isinstance(items, list) or not items:
        return False
    if any(_type(i) in ENVELOPES for i in items):
        # A rollout line of a type newer than this importer has the same envelope (a type
        # and a payload object): it is skipped, not a reason to reject the whole rollout.
        return all(
            is_line(i) or (isinstance(i, dict) and isinstance(i.get("payload"), dict))
            for i in items
        )
    if any(_type(i) in EXEC_EVENTS for i in items):
        return all(_type(i) in EXEC_EVENTS for i in items)
    if _legacy_head(items[0]):
        return all(is_line(i) or _type(i) in ITEM_TYPES for i in items[1:])
    return False


def unwrap_argv(argv: list) -> str:
    """``["bash", "-lc", script]`` is ``script``; any other argv is joined with shlex."""
    words = [w if isinstance(w, str) else json.dumps(w) for w in argv]
    if len(words) == 3 and words[0] in SHELLS and words[1] in ("-c", "-lc", "-ic"):
        return words[2]
    return shlex.join(words)


# Codex' own patch tool, as the model may call it through the shell tool.
APPLY_PATCH_NAMES: frozenset[str] = frozenset({"apply_patch", "applypatch"})
_HEREDOC_PATCH_RE = re.compile(
    r"\A\s*(?:cd \S+ && )?(?:apply_patch|applypatch) <<\s*['\"]?(\w+)['\"]?\n(.*\n)\1\s*\Z",
    re.DOTALL,
)


def _patch_of(argv: list) -> str | None:
    """The patch when the argv is Codex' ``apply_patch`` rather than a program to run."""
    if not argv or not isinstance(argv[0], str):
        return None  # a program name that is not text names no patch tool
    if len(argv) == 2 and argv[0] in APPLY_PATCH_NAMES and isinstance(argv[1], str):
        return argv[1]
    if (
        len(argv) == 3
        and argv[0] in SHELLS
        and argv[1] in ("-c", "-lc")
        and isinstance(argv[2], str)
    ):
        match = _HEREDOC_PATCH_RE.match(argv[2])
        if match:
            return match.group(2)
    return None


def _shell_call(call_id: str | None, name: str, arguments: dict) -> dict:
    """A shell call; the ``apply_patch`` call it stands for when its argv is Codex' patch tool."""
    command = arguments.get("command")
    if isinstance(command, list) and command:
        patch = _patch_of(command)
        if patch is not None:
            return tool_call(call_id, "apply_patch", {"input": patch, "argv": command})
        arguments = {**arguments, "command": unwrap_argv(command), "argv": command}
    return tool_call(call_id, name, arguments)


_ENV_CWD_RE = re.compile(r"<environment_context>.*?<cwd>([^<\n]+)</cwd>", re.DOTALL)


def _decode(text: object) -> object:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _output_text(output: object) -> str:
    """Outputs are text, or a JSON envelope ``{"output": ..., "metadata": {"exit_code"}}``."""
    decoded = _decode(output)
    if isinstance(decoded, dict) and "output" in decoded:
        text = text_of(decoded.get("output")) or str(decoded.get("output") or "")
        metadata = decoded.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        if isinstance(code, int) and code != 0:
            return f"Exit code: {code}\n{text}"
        return text
    if isinstance(output, str):
        return output
    return text_of(output)


class _Builder:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.answered = False  # the current turn's calls already have outputs

    def _turn(self, *, for_text: bool = False, for_reasoning: bool = False) -> dict[str, Any]:
        current = self.current
        fresh = (
            current is None
            or self.answered
            or (for_text and (current.get("tool_calls") or current.get("content")))
            or (for_reasoning and (current.get("tool_calls") or current.get("content")))
        )
        if fresh:
            current = assistant("")
            self.messages.append(current)
            self.current, self.answered = current, False
        assert current is not None
        return current

    def text(self, text: str) -> None:
        self._turn(for_text=True)["content"] = text

    def reasoning(self, text: str) -> None:
        turn = self._turn(for_reasoning=True)
        previous = turn.get("reasoning_content")
        turn["reasoning_content"] = f"{previous}\n{text}" if previous else text

    def call(self, call: dict) -> None:
        self._turn().setdefault("tool_calls", []).append(call)

    def output(self, call_id: str | None, content: str) -> None:
        self.messages.append(tool_result(call_id, content))
        self.answered = True

    def other(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})
        self.current = None


def _item(builder: _Builder, item: dict) -> None:
    kind = _type(item)
    call_id = str_or_none(item.get("call_id") or item.get("id"))
    if kind == "message":
        role = item.get("role")
        content = text_of(item.get("content"))
        if role == "assistant":
            builder.text(content)
        elif role in ("user", "developer", "system"):
            builder.other("user" if role == "user" else "system", content)
    elif kind == "reasoning":
        summary = item.get("summary")
        texts = [text_of([part]) for part in summary] if isinstance(summary, list) else []
        content = item.get("content")
        if isinstance(content, list):
            texts.extend(text_of([part]) for part in content)
        text = "\n".join(t for t in texts if t)
        if text:
            builder.reasoning(text)
    elif kind == "function_call":
        name = item.get("name")
        arguments = _decode(item.get("arguments"))
        name = name if isinstance(name, str) else "unknown"
        if isinstance(arguments, dict):
            builder.call(_shell_call(call_id, name, arguments))
        else:
            builder.call(tool_call(call_id, name, {} if arguments is None else arguments))
    elif kind == "custom_tool_call":
        name = item.get("name")
        builder.call(
            tool_call(
                call_id, name if isinstance(name, str) else "unknown", {"input": item.get("input")}
            )
        )
    elif kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        builder.call(_shell_call(call_id, "local_shell", dict(action)))
    elif kind == "web_search_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        builder.call(tool_call(call_id, "web_search_call", action))
    elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        builder.output(call_id, _output_text(item.get("output")))


def _exec_command_call(call_id: str | None, command: object) -> dict:
    """``codex exec --json`` names a command by the shell line Codex ran, its argv quoted
    (``/bin/bash -lc 'ls -la'``): read as that argv, the command is the script inside, as in
    the rollout, and the argv is kept beside it. A line that is no such argv stays as it is."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:  # unbalanced quotes: not a quoted argv
            words = []
        if len(words) == 3 and words[0] in SHELLS and words[1] in ("-c", "-lc", "-ic"):
            return _shell_call(call_id, "shell", {"command": words})
    return tool_call(call_id, "shell", {"command": command})


def _exec_event(builder: _Builder, event: dict) -> None:
    """``codex exec --json``: items carry the command (and its output) or the files changed."""
    if event.get("type") != "item.completed" or not isinstance(event.get("item"), dict):
        return
    item = event["item"]
    kind = _type(item) or (
        item.get("item_type") if isinstance(item.get("item_type"), str) else None
    )
    call_id = str_or_none(item.get("id"))
    if kind in ("agent_message", "assistant_message"):
        builder.text(text_of(item.get("text")))
    elif kind == "reasoning":
        builder.reasoning(text_of(item.get("text")))
    elif kind == "command_execution":
        builder.call(_exec_command_call(call_id, item.get("command")))
        output = text_of(item.get("aggregated_output"))
        code = item.get("exit_code")
        builder.output(call_id, f"Exit code: {code}\n{output}" if code not in (0, None) else output)
    elif kind == "file_change":
        builder.call(tool_call(call_id, "apply_patch", {"changes": item.get("changes")}))
        builder.output(call_id, str(item.get("status") or ""))


def convert(record: object) -> dict:
    if not isinstance(record, list):
        raise ImportFormatError(f"{FORMAT}: expected the lines of a Codex rollout")
    builder = _Builder()
    metadata: dict[str, Any] = {"agent": "codex"}
    session_id: str | None = None
    for index, line in enumerate(record):
        if not isinstance(line, dict):
            continue
        kind = _type(line)
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else None
        if index == 0 and _legacy_head(line):
            payload, kind = line, "session_meta"
        if kind == "session_meta" and payload is not None:
            session_id = session_id or str_or_none(payload.get("id"))
            for key, target in (("cwd", "workspace"), ("cli_version", "agent_version")):
                if isinstance(payload.get(key), str) and target not in metadata:
                    metadata[target] = payload[key]
            for key in ("originator", "source", "model_provider", "git"):
                if payload.get(key) and key not in metadata:
                    metadata[key] = payload[key]
        elif kind == "turn_context" and payload is not None:
            if isinstance(payload.get("model"), str) and "model" not in metadata:
                metadata["model"] = payload["model"]
            if isinstance(payload.get("cwd"), str) and "workspace" not in metadata:
                metadata["workspace"] = payload["cwd"]
            for key in ("approval_policy", "sandbox_policy"):
                if payload.get(key) and key not in metadata:
                    metadata[key] = payload[key]
        elif kind == "response_item" and payload is not None:
            _item(builder, payload)
        elif kind in ITEM_TYPES:
            _item(builder, line)
        elif kind == "thread.started":
            session_id = session_id or str_or_none(line.get("thread_id"))
        elif kind in EXEC_EVENTS:
            _exec_event(builder, line)
    if not builder.messages:
        raise ImportFormatError(f"{FORMAT}: the rollout holds no message")
    if "workspace" not in metadata:
        for message in builder.messages:
            match = _ENV_CWD_RE.search(message["content"]) if message["role"] == "user" else None
            if match:
                metadata["workspace"] = match.group(1).strip()
                metadata["workspace_from"] = "the <environment_context> message"
                break
    canonical: dict[str, Any] = {"messages": builder.messages, "metadata": metadata}
    if session_id:
        canonical["id"] = session_id
    return canonical
