"""aider chat histories (``.aider.chat.history.md``): markdown, one trajectory per session.

A session starts at ``# aider chat started at <time>``. Lines ``#### ...`` are the user's,
lines ``> ...`` are aider's own output (commands run, edits applied, lint, token counts), and
the other lines are the model's reply. Edits in the reply are SEARCH/REPLACE blocks under a file
name (``<<<<<<< SEARCH`` / ``=======`` / ``>>>>>>> REPLACE``); each becomes a
``str_replace_editor`` call (an empty SEARCH creates the file), and fenced shell blocks become
shell calls, so the scan sees what aider was asked to run. aider's output after a reply
(``Applied edit to ...``, ``Running ...``) is that reply's tool result. aider appends two
spaces to lines of user and output text (markdown line breaks); they are removed.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from annotations.importers.base import ImportFormatError, assistant, tool_call, tool_result
from annotations.importers.text_actions import TEXT_READ
from core.text_actions import find_blocks

FORMAT = "aider"
SESSION_RE = re.compile(r"^# aider chat started at (.+?)\s*$", re.M)
_EDIT_RE = re.compile(
    # The fence may be ``` or aider's <source> tags (its ``--fence`` option), or absent.
    r"^(?P<path>[^\n`]*?)\s*\n(?:(?:```|<source>)[^\n]*\n)?<<<<<<< SEARCH[^\n]*\n(?P<search>.*?)"
    r"^=======[^\n]*\n(?P<replace>.*?)^>>>>>>> REPLACE[^\n]*$",
    re.S | re.M,
)
_VERSION_RE = re.compile(r"^Aider (v\S+)", re.M)
_MODEL_RE = re.compile(r"^Models?: (\S+)", re.M)
# aider names the repository it works in; an absolute path to it is the workspace.
_GIT_ROOT_RE = re.compile(r"^Git repo: ((?:/|[A-Za-z]:[\\/]).*?)[\\/]\.git with \d+ files", re.M)


def looks_like(text: object) -> bool:
    """An aider chat history: markdown with a session header or ``####`` user lines."""
    if not isinstance(text, str):
        return False
    head = text.lstrip("\ufeff")[:20000]
    return bool(SESSION_RE.search(head)) or head.startswith("#### ")


def sessions(text: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each session holding a user message (``####``); text before the
    first header is one too. A session without one (aider started and quit: only its own
    start-up output) holds no conversation and is left out."""
    out: list[tuple[int, str]] = []
    starts = [m.start() for m in SESSION_RE.finditer(text)]
    bounds = [0, *starts, len(text)] if not starts or starts[0] != 0 else [*starts, len(text)]
    for begin, end in itertools.pairwise(bounds):
        chunk = text[begin:end]
        if re.search(r"^####", chunk, re.M):
            out.append((text.count("\n", 0, begin) + 1, chunk))
    return out


def _strip(line: str, prefix: str) -> str:
    line = line[len(prefix) :] if line.startswith(prefix) else line.lstrip(prefix.strip())
    return line[:-2] if line.endswith("  ") else line


def _blocks(chunk: str) -> list[tuple[str, str]]:
    """(kind, text) runs of the session: header | user | output | reply."""
    runs: list[tuple[str, list[str]]] = []
    for line in chunk.split("\n"):
        if SESSION_RE.match(line):
            kind, value = "header", line
        elif line.startswith("####"):
            kind, value = "user", _strip(line, "#### ")
        elif line == ">" or line.startswith("> "):  # not ">>>>>>> REPLACE"
            kind, value = "output", _strip(line, "> ")
        else:
            kind, value = "reply", line
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(value)
        else:
            runs.append((kind, [value]))
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in runs]


def _reply_calls(text: str, index: int) -> list[dict]:
    calls: list[dict] = []
    covered: list[tuple[int, int]] = []
    for j, match in enumerate(_EDIT_RE.finditer(text)):
        path = match.group("path").strip().strip("`*").strip()
        search, replace = match.group("search"), match.group("replace")
        if search.strip():
            arguments = {
                "command": "str_replace",
                "path": path,
                "old_str": search,
                "new_str": replace,
            }
        else:
            arguments = {"command": "create", "path": path, "file_text": replace}
        calls.append(tool_call(f"aider-{index}-edit-{j}", "str_replace_editor", arguments))
        covered.append((match.start(), match.end()))
    for j, block in enumerate(find_blocks(text, "fenced-bash")):
        if block.kind != "call" or block.call is None:
            continue
        if any(start <= block.start < end for start, end in covered):
            continue
        calls.append(tool_call(f"aider-{index}-shell-{j}", "bash", block.call["arguments"]))
    return calls


def convert(record: object) -> dict:
    """One session (the text of one, or a ``{"aider_session": text}`` record) to C1."""
    if isinstance(record, dict):
        record = record.get("aider_session")
    if not isinstance(record, str):
        raise ImportFormatError(f"{FORMAT}: expected the text of an aider chat history")
    messages: list[dict[str, Any]] = []
    metadata: dict[str, Any] = {"agent": "aider"}
    started: str | None = None
    answered_by: str | None = None
    for index, (kind, text) in enumerate(_blocks(record)):
        if kind == "header":
            match = SESSION_RE.match(text)
            started = match.group(1) if match else None
            answered_by = None
        elif kind == "user" and text.strip():
            messages.append({"role": "user", "content": text})
            answered_by = None
        elif kind == "reply" and text.strip():
            calls = _reply_calls(text, index)
            if not calls and not any(m["role"] == "user" for m in messages):
                continue  # text before the first user message is no reply (e.g. a modeline)
            # A reply with edits before any user message answers aider itself (its automatic
            # lint fixing: "Attempt to fix lint errors? y"): aider's output was the prompt.
            if not any(m["role"] == "user" for m in messages) and messages:
                messages[-1]["role"] = "user"
            message = assistant(text, tool_calls=calls)
            message[TEXT_READ] = True
            messages.append(message)
            answered_by = calls[0]["id"] if calls else None
        elif kind == "output" and text.strip():
            if answered_by is not None:
                messages.append(tool_result(answered_by, text))
                answered_by = None
            else:
                if "agent_version" not in metadata and (v := _VERSION_RE.search(text)):
                    metadata["agent_version"] = v.group(1)
                if "model" not in metadata and (m := _MODEL_RE.search(text)):
                    metadata["model"] = m.group(1)
                if "workspace" not in metadata and (g := _GIT_ROOT_RE.search(text)):
                    metadata["workspace"] = g.group(1)
                    metadata["workspace_from"] = "the git repository aider names"
                asked = any(m["role"] == "user" for m in messages)
                messages.append({"role": "user" if asked else "system", "content": text})
    if not any(m["role"] in ("user", "assistant") for m in messages):
        raise ImportFormatError(f"{FORMAT}: the session holds no message")
    if started:
        metadata["started_at"] = started
    canonical: dict[str, Any] = {"messages": messages, "metadata": metadata}
    if started:
        canonical["id"] = f"aider {started}"
    return canonical
