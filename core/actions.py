"""What the tool calls of a C1 trajectory do, beyond shell commands (``core.canonical``).

Pure Python, no Django. ``file_effects`` reads the files a call writes (editor tools of every
scaffold, Claude Code's Edit / Write, Codex's ``apply_patch``); ``classify_call`` names a call
``shell``, ``file``, ``read`` (reads or navigates, changes nothing), ``control`` (finish,
submit, plans, sub-agents), or ``unknown``; ``actions_not_understood`` lists the calls and the
action-shaped texts from which neither a command nor a file effect could be read, so that an
importer's format gap becomes a review item instead of a silent pass.

``ActionReading`` is how a task type says to read actions: its shell tools and command keys,
the text format of actions written as text, and its workspace roots.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.canonical import (
    DEFAULT_COMMAND_KEYS,
    DEFAULT_SHELL_TOOLS,
    _commands_of_call,
    extract_steps,
    is_shell_tool,
)
from core.text_actions import find_blocks

__all__ = [
    "ActionReading",
    "FileEffect",
    "actions_not_understood",
    "classify_call",
    "file_effects",
    "file_effects_of_trajectory",
]


@dataclass(frozen=True)
class ActionReading:
    """How to read actions. ``text_format`` "auto" (a task type's default) reads every text
    format at import; C3 keeps its own meaning of "auto"."""

    shell_tools: tuple[str, ...] = DEFAULT_SHELL_TOOLS
    command_keys: tuple[str, ...] = DEFAULT_COMMAND_KEYS
    text_format: str = "all"
    workspace_roots: tuple[str, ...] = ()

    @property
    def import_text_format(self) -> str:
        return "all" if self.text_format == "auto" else self.text_format

    @property
    def shell_tool(self) -> str:
        return self.shell_tools[0] if self.shell_tools else "bash"


# metadata key where an importer lists turns it knows ran nothing ({"message_index", "reason"}),
# e.g. mini-swe-agent's format errors: their action-shaped text is understood as not run.
NOT_RUN_KEY = "actions_not_run"


class FileEffect(NamedTuple):
    """One file a tool call creates, writes, edits or deletes."""

    tool_call_id: str | None
    tool_name: str
    kind: str  # create | write | edit | delete
    path: str


# Editor tools taking {"command": ..., "path": ...}: OpenHands, Anthropic, SWE-agent 1.x.
EDITOR_TOOLS: frozenset[str] = frozenset(
    {"str_replace_editor", "str_replace_based_edit_tool", "file_editor", "text_editor"}
)
EDITOR_COMMANDS: dict[str, str] = {
    "create": "create",
    "write": "write",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
    "edit": "edit",
}
# Tools whose whole purpose is to write one file: name -> (kind, path keys).
WRITE_TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "write": ("write", ("file_path", "path")),  # Claude Code
    "edit": ("edit", ("file_path", "path", "filename")),  # Claude Code, SWE-agent
    "multiedit": ("edit", ("file_path", "path")),  # Claude Code
    "notebookedit": ("edit", ("notebook_path", "path")),  # Claude Code
    "write_file": ("write", ("file_path", "path", "filename")),  # Gemini CLI, others
    "replace": ("edit", ("file_path", "path")),  # Gemini CLI
    "edit_file": ("edit", ("path", "file_path", "target_file")),  # OpenHands LLM editor, Cursor
    "create": ("create", ("path", "filename")),  # SWE-agent
    "create_file": ("create", ("path", "file_path", "filename")),
    "insert": ("edit", ("path", "file_path")),  # SWE-agent
    "append_file": ("edit", ("path", "file_path")),
    "delete_file": ("delete", ("path", "file_path", "target_file")),
    "write_to_file": ("write", ("path", "file_path")),  # Cline
    "replace_in_file": ("edit", ("path", "file_path")),  # Cline
}
PATCH_TOOLS: frozenset[str] = frozenset({"apply_patch", "applypatch"})
# Tools that read, search or navigate, or steer the run, and change no file by themselves.
READ_TOOLS: frozenset[str] = frozenset(
    {
        "read", "read_file", "view", "view_file", "open", "goto", "scroll_up", "scroll_down",
        "find_file", "search_dir", "search_file", "filemap", "glob", "grep", "ls", "list_dir",
        "list_directory", "search_file_content", "read_many_files", "codebase_search",
        "file_search", "grep_search", "webfetch", "websearch", "web_fetch", "web_search",
        "google_web_search", "web_search_call", "bashoutput", "killshell", "killbash",
        "view_image", "browser", "browse", "browse_interactive", "fetch", "notebookread",
        "taskoutput", "listmcpresourcestool", "readmcpresourcetool", "list_files",
        "search_files", "list_code_definition_names", "browser_action", "web_read",
    }
)  # fmt: skip
CONTROL_TOOLS: frozenset[str] = frozenset(
    {
        "submit", "finish", "think", "task_tracker", "todowrite", "todoread", "task",
        "agent", "update_plan", "exitplanmode", "askuserquestion", "exit_forfeit",
        "delegate", "slashcommand", "skill", "save_memory", "exit", "recall",
        "enterplanmode", "mark_task_complete", "task_complete", "attempt_completion",
        "ask_followup_question", "write_todos", "request_user_input",
    }
)  # fmt: skip
# Code execution the shell analyzer does not read: reported, never passed silently.
CODE_TOOLS: frozenset[str] = frozenset(
    {"execute_ipython_cell", "ipython", "python", "run_ipython", "jupyter", "notebook"}
)

_PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.M)
_PATCH_MOVE_RE = re.compile(r"^\*\*\* Move to: (.+?)\s*$", re.M)
_PATCH_KINDS = {"Add": "create", "Update": "edit", "Delete": "delete"}
_CHANGE_KINDS = {"add": "create", "update": "edit", "delete": "delete"}


def _change_kind(kind: object) -> str:
    return _CHANGE_KINDS.get(kind, "edit") if isinstance(kind, str) else "edit"


def _arguments(call: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(decoded arguments object or None, raw text when they were a string)."""
    raw = call.get("function")
    function: dict[str, Any] = raw if isinstance(raw, dict) else {}
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        return arguments, None
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None, arguments
        return (decoded if isinstance(decoded, dict) else None), arguments
    return ({} if arguments is None else None), None


def _name(call: dict[str, Any]) -> str:
    raw = call.get("function")
    function: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = function.get("name")
    return name if isinstance(name, str) else ""


def _first_path(arguments: dict[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def patch_files(patch: str) -> list[tuple[str, str]]:
    """(kind, path) of each file an ``apply_patch`` envelope (``*** Begin Patch``) touches."""
    out = [(_PATCH_KINDS[kind], path) for kind, path in _PATCH_FILE_RE.findall(patch)]
    out.extend(("create", path) for path in _PATCH_MOVE_RE.findall(patch))
    return out


def file_effects(call: dict[str, Any]) -> list[FileEffect]:
    """The files one C1 tool call creates, writes, edits or deletes (none for other calls)."""
    name = _name(call)
    folded = name.casefold()
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    arguments, raw = _arguments(call)
    if folded in PATCH_TOOLS:
        text = raw if arguments is None else None
        changes = arguments.get("changes") if arguments is not None else None
        if isinstance(changes, list):  # codex exec: [{"path", "kind": add|update|delete}]
            return [
                FileEffect(call_id, name, _change_kind(c.get("kind")), c["path"])
                for c in changes
                if isinstance(c, dict) and isinstance(c.get("path"), str)
            ]
        if arguments is not None:
            value = arguments.get("input", arguments.get("patch"))
            text = value if isinstance(value, str) else None
        return [FileEffect(call_id, name, kind, path) for kind, path in patch_files(text or "")]
    if arguments is None:
        return []
    if folded in EDITOR_TOOLS:
        command = arguments.get("command")
        kind = EDITOR_COMMANDS.get(command) if isinstance(command, str) else None
        path = _first_path(arguments, ("path", "file_path"))
        return [FileEffect(call_id, name, kind, path)] if kind and path else []
    if folded in WRITE_TOOLS:
        kind, keys = WRITE_TOOLS[folded]
        path = _first_path(arguments, keys)
        return [FileEffect(call_id, name, kind, path)] if path else []
    return []


def _is_editor_view(name: str, arguments: dict[str, Any] | None) -> bool:
    return (
        name.casefold() in EDITOR_TOOLS
        and isinstance(arguments, dict)
        and arguments.get("command") == "view"
    )


def classify_call(call: dict[str, Any], reading: ActionReading = ActionReading()) -> str:
    """``shell`` | ``file`` | ``read`` | ``control`` | ``code`` | ``unknown`` (see module doc)."""
    name = _name(call)
    if name and is_shell_tool(name, reading.shell_tools):
        return "shell"
    folded = name.casefold()
    if folded in EDITOR_TOOLS or folded in WRITE_TOOLS or folded in PATCH_TOOLS:
        return "read" if _is_editor_view(name, _arguments(call)[0]) else "file"
    if folded in READ_TOOLS or folded.startswith("browser_"):  # OpenHands V1 browser_* tools
        return "read"
    if folded in CONTROL_TOOLS:
        return "control"
    if folded in CODE_TOOLS:
        return "code"
    return "unknown"


def _excerpt(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unread_call(call: dict[str, Any], reading: ActionReading) -> str | None:
    """Why nothing could be read from this call, or None when something was."""
    kind = classify_call(call, reading)
    name = _name(call)
    if kind == "shell":
        if _commands_of_call(call, reading.shell_tools, reading.command_keys):
            return None
        return f"shell tool {name!r} called without a command"
    if kind == "file":
        if file_effects(call):
            return None
        return f"file tool {name!r} called without a file path that could be read"
    if kind in ("read", "control"):
        if _arguments(call)[0] is None:
            return f"the arguments of {name!r} are not a JSON object"
        return None
    if kind == "code":
        return f"{name!r} runs code that the shell analyzer does not read"
    return f"unknown tool {name!r}: no shell command or file effect could be read"


def actions_not_understood(
    canonical: dict[str, Any],
    reading: ActionReading = ActionReading(),
) -> list[dict[str, Any]]:
    """Every tool call and every call-less assistant text that looks like an action, from which
    neither a command nor a file effect could be read: ``{"step", "message_index",
    "tool_call_id", "tool", "reason", "excerpt"}`` each, in order."""
    out: list[dict[str, Any]] = []
    raw_metadata = canonical.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    not_run = {
        item.get("message_index")
        for item in metadata.get(NOT_RUN_KEY) or ()
        if isinstance(item, dict)
    }
    steps = extract_steps(
        canonical,
        shell_tools=reading.shell_tools,
        command_keys=reading.command_keys,
        share_calls=True,
    )
    for step in steps:
        for call in step.tool_calls:
            reason = _unread_call(call, reading)
            if reason is None:
                continue
            function = call.get("function") or {}
            arguments = function.get("arguments")
            shown = arguments if isinstance(arguments, str) else json.dumps(arguments)
            out.append(
                {
                    "step": step.index,
                    "message_index": step.message_index,
                    "tool_call_id": call.get("id"),
                    "tool": _name(call),
                    "reason": reason,
                    "excerpt": _excerpt(f"{_name(call)} {shown}"),
                }
            )
        if not step.tool_calls and step.text and step.message_index not in not_run:
            blocks = [b for b in find_blocks(step.text, "all") if b.kind == "call"]
            if blocks:
                first = blocks[0]
                formats = ", ".join(sorted({b.fmt for b in blocks}))
                out.append(
                    {
                        "step": step.index,
                        "message_index": step.message_index,
                        "tool_call_id": None,
                        "tool": None,
                        "reason": (
                            f"action-shaped text ({formats}) from which no call was read"
                            if any(b.malformed or b.call is None for b in blocks)
                            else f"action-shaped text ({formats}) in a format the task type "
                            "does not read"
                        ),
                        "excerpt": _excerpt(step.text[first.start : first.end]),
                    }
                )
    return out


def file_effects_of_trajectory(canonical: dict[str, Any]) -> list[list[FileEffect]]:
    """The file effects of each step, in step order (for tests, exports and review)."""
    return [
        [effect for call in step.tool_calls for effect in file_effects(call)]
        for step in extract_steps(canonical, share_calls=True)
    ]
