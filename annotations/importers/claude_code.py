"""Claude Code logs: session JSONL (``~/.claude/projects/<project>/<session>.jsonl``) and the
``claude -p --output-format stream-json`` stream; one file is one trajectory.

Each line is an event: ``user`` / ``assistant`` lines carry an Anthropic message (Claude Code
writes one line per content block, so consecutive assistant lines of the same ``message.id``
are one turn, with parallel tool calls), ``system`` lines (stream-json ``init``: cwd, model,
tools, version), ``result`` (stream-json: how the run ended), ``summary`` and bookkeeping lines
(file snapshots, queue operations), which are kept only as metadata.

Sub-agents (the ``Task`` tool) run on side chains: inline in older session files
(``isSidechain``), in their own ``subagents/agent-<id>.jsonl`` files in newer ones, and with a
``parent_tool_use_id`` in stream-json. ``split`` makes each side chain its own trajectory,
linked to its parent by ``metadata.parent_session`` (and ``parent_tool_use_id`` when known).
"""

from __future__ import annotations

from typing import Any

from annotations.importers import anthropic
from annotations.importers.base import ImportFormatError, str_or_none

FORMAT = "claude-code"
LINE_TYPES: frozenset[str] = frozenset(
    {
        "user", "assistant", "system", "summary", "result", "file-history-snapshot",
        "queue-operation", "progress", "attachment", "custom-title", "tag",
    }
)  # fmt: skip
ID_KEYS: tuple[str, ...] = ("sessionId", "session_id", "uuid", "leafUuid", "parentUuid")


def is_line(item: object) -> bool:
    """One line of a Claude Code log (session file or stream-json)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    return isinstance(kind, str) and kind in LINE_TYPES and any(k in item for k in ID_KEYS)


def loglines(record: object) -> list[dict] | None:
    """The lines of a Claude Code web session (``{"loglines": [...]}``, as the Claude API's
    session export and transcript tools write it), which may be stripped to ``type``,
    ``timestamp`` and ``message``; None when the record is not one."""
    lines = record.get("loglines") if isinstance(record, dict) else None
    if not isinstance(lines, list) or not lines:
        return None
    if not all(isinstance(line, dict) and isinstance(line.get("type"), str) for line in lines):
        return None
    messages = (line for line in lines if line["type"] in ("user", "assistant"))
    return lines if any(isinstance(line.get("message"), dict) for line in messages) else None


def _is_other_line(item: dict) -> bool:
    """A line that is not a message but has the log's shape (a ``type``; neither Codex's
    ``payload`` envelope, nor a chat ``role``, nor an OpenHands ``kind``): a snapshot line
    without a session id (``file-history-snapshot``) or a line type newer than this importer.
    It is skipped, and must not make the whole log unreadable."""
    return isinstance(item.get("type"), str) and not any(
        key in item for key in ("payload", "role", "kind")
    )


def looks_like(items: object) -> bool:
    """A list of Claude Code lines holding at least one user or assistant message."""
    if not isinstance(items, list) or not items:
        return False
    if not all(isinstance(item, dict) for item in items):
        return False
    if not any(
        is_line(item)
        and item.get("type") in ("user", "assistant")
        and isinstance(item.get("message"), dict)
        for item in items
    ):
        return False
    return all(is_line(item) or _is_other_line(item) for item in items)


def _session_id(lines: list[dict]) -> str | None:
    for line in lines:
        value = str_or_none(line.get("sessionId") or line.get("session_id"))
        if value:
            return value
    return None


def split(lines: list[dict]) -> list[list[dict]]:
    """The main conversation first, then each side chain (sub-agent) in order of appearance.

    Session files chain lines by ``parentUuid``: a side-chain line whose parent is a known
    side-chain line belongs to that chain, one without a parent starts a new chain, and one
    whose parent is missing (trimmed files) joins the latest chain. Stream-json groups by
    ``parent_tool_use_id``. A file holding only side-chain lines is one sub-agent trajectory.
    """
    main: list[dict] = []
    chains: list[list[dict]] = []
    chain_of: dict[str, int] = {}
    by_tool_use: dict[str, int] = {}
    for line in lines:
        parent_tool = str_or_none(line.get("parent_tool_use_id"))
        if parent_tool:
            index = by_tool_use.get(parent_tool)
            if index is None:
                index = by_tool_use[parent_tool] = len(chains)
                chains.append([])
            chains[index].append(line)
            continue
        if line.get("isSidechain") is not True:
            main.append(line)
            continue
        parent = str_or_none(line.get("parentUuid"))
        if parent is not None and parent in chain_of:
            index = chain_of[parent]
        elif parent is None or not chains:
            index = len(chains)
            chains.append([])
        else:
            index = len(chains) - 1
        uuid = str_or_none(line.get("uuid"))
        if uuid:
            chain_of[uuid] = index
        chains[index].append(line)
    has_messages = any(line.get("type") in ("user", "assistant") for line in main)
    if not has_messages:
        # A sub-agent's own file: its lines are one trajectory, bookkeeping lines included.
        return [main + [line for chain in chains for line in chain]] if chains else [main]
    return [main, *chains]


def _assistant_blocks(message: dict) -> list:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return content if isinstance(content, list) else []


def _messages(lines: list[dict]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    pending: list = []  # blocks of the assistant turn being read
    pending_id: str | None = None

    def flush() -> None:
        nonlocal pending, pending_id
        if pending:
            messages.append(anthropic._assistant_message(pending, "message"))
        pending, pending_id = [], None

    for line in lines:
        kind = line.get("type")
        message = line.get("message") if isinstance(line.get("message"), dict) else None
        if kind == "assistant" and message is not None:
            message_id = str_or_none(message.get("id"))
            if pending and (message_id is None or message_id != pending_id):
                flush()
            pending.extend(_assistant_blocks(message))
            pending_id = message_id
            if "model" not in info and isinstance(message.get("model"), str):
                info["model"] = message["model"]
            continue
        if kind == "user" and message is not None:
            flush()
            content = message.get("content")
            blocks = [content] if isinstance(content, str) else content
            if isinstance(blocks, list):
                messages.extend(anthropic._user_messages(blocks))
            continue
        if kind == "system" and line.get("subtype") == "init":
            info["init"] = line
        elif kind == "result":
            info["result"] = line
        elif kind == "summary" and isinstance(line.get("summary"), str):
            info.setdefault("summaries", []).append(line["summary"])
    flush()
    return messages, info


def _first(lines: list[dict], key: str) -> str | None:
    for line in lines:
        value = line.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def convert(record: object) -> dict:
    """One trajectory from the lines of one Claude Code log (or of one of its side chains)."""
    if isinstance(record, dict) and isinstance(record.get("lines"), list):
        record = record["lines"]
    elif (web := loglines(record)) is not None:
        record = web
    if not isinstance(record, list):
        raise ImportFormatError(f"{FORMAT}: expected the lines of a Claude Code log")
    lines = [line for line in record if isinstance(line, dict)]
    messages, info = _messages(lines)
    if not messages:
        raise ImportFormatError(f"{FORMAT}: the log holds no user or assistant message")
    session = _session_id(lines)
    init = info.get("init") or {}
    metadata: dict[str, Any] = {"agent": "claude-code"}
    version = _first(lines, "version") or init.get("claude_code_version")
    if isinstance(version, str):
        metadata["agent_version"] = version
    model = info.get("model") or init.get("model")
    if isinstance(model, str):
        metadata["model"] = model
    workspace = _first(lines, "cwd") or init.get("cwd")
    if isinstance(workspace, str):
        metadata["workspace"] = workspace
    branch = _first(lines, "gitBranch")
    if branch:
        metadata["git_branch"] = branch
    if session:
        metadata["session_id"] = session
    if isinstance(init.get("tools"), list):
        metadata["tools"] = init["tools"]
    if isinstance(init.get("permissionMode"), str):
        metadata["permission_mode"] = init["permissionMode"]
    if info.get("summaries"):
        metadata["summaries"] = info["summaries"]
    result = info.get("result")
    if isinstance(result, dict):
        metadata["result"] = {
            key: result[key]
            for key in ("subtype", "is_error", "num_turns", "duration_ms", "total_cost_usd")
            if key in result
        }
    sidechain = any(line.get("isSidechain") is True for line in lines)
    parent_tool = _first(lines, "parent_tool_use_id")
    agent_id = _first(lines, "agentId")
    trajectory_id = session
    if sidechain or parent_tool:
        metadata["parent_session"] = session
        metadata["sidechain"] = True
        if parent_tool:
            metadata["parent_tool_use_id"] = parent_tool
        if agent_id:
            metadata["agent_id"] = agent_id
        first_uuid = _first(lines, "uuid")
        suffix = agent_id or parent_tool or first_uuid or "sidechain"
        trajectory_id = f"{session}/{suffix}" if session else suffix
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata}
    if trajectory_id:
        canonical["id"] = trajectory_id
    return canonical
