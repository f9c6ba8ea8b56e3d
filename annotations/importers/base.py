"""Shared pieces of the importers: the error type and small builders for C1 messages.

Converters only build a raw C1 dict; ``normalize_trajectory`` then validates it, so each converter
stays a plain mapping from its source layout and the rules live in one place.
"""

from __future__ import annotations

import json
import re
from typing import Any


class ImportFormatError(ValueError):
    """The input is not a recognisable trajectory of the requested (or detected) format."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def require_list(value: object, field: str, fmt: str) -> list:
    """Returns ``value`` if it is an array, else raises a format error naming ``field``."""
    if not isinstance(value, list):
        raise ImportFormatError(f"{fmt}: {field} must be an array", field=field)
    return value


def text_of(value: object) -> str:
    """Best-effort text of a content value: a string, or a list of text blocks / strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts: list[str] = []
        for item in value:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
        return "\n".join(parts)
    return ""


def str_or_none(value: object) -> str | None:
    """Ids come as strings or numbers in the wild; anything else counts as absent."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def tool_call(call_id: str | None, name: str, arguments: object) -> dict:
    """A C1 tool call; object arguments are serialised to a JSON string as OpenAI sends them."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def bash_call(call_id: str | None, command: str) -> dict:
    """Shell actions come out as ``bash`` with ``{"command": ...}`` so extraction finds them."""
    return tool_call(call_id, "bash", {"command": command})


def assistant(
    content: str = "", *, reasoning: str = "", tool_calls: list[dict] | None = None
) -> dict:
    """An assistant message; empty reasoning and tool calls are left out."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_result(call_id: str | None, content: str) -> dict:
    """A tool message answering ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def passthrough(
    record: dict,
    canonical: dict,
    keys: tuple[str, ...] = ("id", "task_type", "outcome", "metadata"),
) -> dict:
    """Copies C1 fields a producer already set (id, task_type, outcome, metadata)."""
    for key in keys:
        if key not in record:
            continue
        value = record[key]
        if isinstance(value, dict) and isinstance(canonical.get(key), dict):
            # What the converter derived wins over a producer's copy of the same key.
            canonical[key] = {**value, **canonical[key]}
        elif key not in canonical:
            canonical[key] = value
    return canonical


_UNIFIED_HEADER = re.compile(r"^--- \S.*\n\+\+\+ \S.*\n@@ ", re.MULTILINE)


_UPLOADED_RE = re.compile(r"<uploaded_files>\s*(/\S+?)/?\s*</uploaded_files>")
_REPOSITORY_RE = re.compile(r"repository (?:in|at) (/[\w./-]*\w)")
# mini-swe-agent's SWE-bench template: "Regular source code files in /testbed (this is the
# working directory for all your subsequent commands)".
_WORKING_DIRECTORY_RE = re.compile(r"(/[\w./-]*\w) \(this is the working directory\b")


def workspace_named_in(task: object) -> str | None:
    """The directory a task's text puts the repository in: SWE-bench's ``<uploaded_files>``,
    OpenHands' resolver ("repository in /..."), mini-swe-agent's "(this is the working
    directory ...)"."""
    if not isinstance(task, str):
        return None
    for pattern in (_UPLOADED_RE, _REPOSITORY_RE, _WORKING_DIRECTORY_RE):
        match = pattern.search(task)
        if match:
            return match.group(1)
    return None


# Where OpenHands mounts the workspace in its sandbox, unless configured otherwise.
OPENHANDS_SANDBOX = "/workspace"


def with_openhands_sandbox(workspace: str) -> str | list[str]:
    """An OpenHands run's checkout inside the sandbox's ``/workspace`` (``/workspace/<repo>``),
    with the sandbox's workspace as a second root: the agent keeps its scratch files there
    (a reproduction script beside the checkout), while deleting either root is still flagged."""
    if workspace.startswith(f"{OPENHANDS_SANDBOX}/") and workspace.rstrip("/") != OPENHANDS_SANDBOX:
        return [workspace, OPENHANDS_SANDBOX]
    return workspace


def is_patch(text: object) -> bool:
    """A git diff, or a plain unified diff (``--- a/x`` / ``+++ b/x`` / ``@@``): agents submit
    both, and a patch with no ``diff --git`` line is still the agent's change."""
    return isinstance(text, str) and ("diff --git" in text or bool(_UNIFIED_HEADER.search(text)))
