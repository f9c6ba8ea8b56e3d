"""Importers: read trajectory files of several agent frameworks and convert them to C1.

Pure (no Django), so ``import_trajectories`` and trainer-side scripts share one implementation.
``iter_records`` splits a file into records, ``detect_format`` names a record's format, and
``convert_record`` turns it into a normalized C1 dict. Only ``ImportFormatError`` and
``TrajectoryError`` ever escape, whatever the input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from annotations.importers import (
    aider,
    anthropic,
    atif,
    claude_code,
    codex,
    litellm,
    mini_swe_agent,
    openai,
    openhands,
    openhands_v1,
    swe_agent,
)
from annotations.importers.base import ImportFormatError
from annotations.importers.source import apply_source
from annotations.importers.text_actions import read_text_actions
from core.actions import ActionReading, actions_not_understood
from core.canonical import Limits, TrajectoryError, normalize_trajectory

__all__ = [
    "FORMATS",
    "UNREAD_KEY",
    "ImportFormatError",
    "ParsedRecord",
    "TrajectoryError",
    "convert_record",
    "detect_format",
    "iter_records",
]

FORMATS: tuple[str, ...] = (
    "openai",
    "anthropic",
    "swe-agent",
    "openhands",
    "openhands-v1",
    "mini-swe-agent",
    "atif",
    "claude-code",
    "codex",
    "litellm",
    "aider",
)

CONVERTERS: dict[str, Callable[[object], dict]] = {
    openai.FORMAT: openai.convert,
    anthropic.FORMAT: anthropic.convert,
    swe_agent.FORMAT: swe_agent.convert,
    openhands.FORMAT: openhands.convert,
    openhands_v1.FORMAT: openhands_v1.convert,
    mini_swe_agent.FORMAT: mini_swe_agent.convert,
    atif.FORMAT: atif.convert,
    claude_code.FORMAT: claude_code.convert,
    codex.FORMAT: codex.convert,
    litellm.FORMAT: litellm.convert,
    aider.FORMAT: aider.convert,
}
# Products whose files are logs of one event per line (or a JSON array of events): a whole
# file is one trajectory (Claude Code: one per conversation and per sub-agent chain).
EVENT_LOGS: tuple[tuple[str, Callable[[object], bool]], ...] = (
    (claude_code.FORMAT, claude_code.looks_like),
    (codex.FORMAT, codex.looks_like),
    (openhands_v1.FORMAT, openhands_v1.looks_like),
)


# metadata key listing what could not be read (see core.actions.actions_not_understood).
UNREAD_KEY = "actions_not_understood"


@dataclass(frozen=True)
class ParsedRecord:
    """One record of a file: ``line`` is the 1-based line where it starts."""

    line: int
    record: object | None
    error: str | None


def event_log_format(items: list) -> str | None:
    """The product whose event log these items are, if they are one."""
    for fmt, looks_like in EVENT_LOGS:
        if looks_like(items):
            return fmt
    return None


def is_single_record_list(items: list) -> bool:
    """An event log (Claude Code, Codex, OpenHands V0 or V1) or a bare message list is one
    trajectory, not many records."""
    if not items:
        return False
    if event_log_format(items) is not None or openhands.looks_like_events(items):
        return True
    return all(isinstance(item, dict) and "role" in item for item in items)


def _log_groups(fmt: str, items: list) -> list[list]:
    """A Claude Code file holds a conversation and its sub-agents' chains; others one log."""
    if fmt == claude_code.FORMAT:
        return [group for group in claude_code.split(items) if group]
    return [items]


def _detectable(record: object) -> bool:
    try:
        detect_format(record)
    except ImportFormatError:
        return False
    return True


def _excerpt(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


KNOWN = (
    "expected JSON or JSON lines of a known format (chat messages, SWE-agent, mini-swe-agent, "
    "OpenHands, ATIF, Claude Code, Codex, litellm) or an aider chat history"
)


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _array_elements(text: str, start: int) -> Iterator[tuple[int, object]]:
    """(offset, value) of each element of the (already validated) array starting at ``start``."""
    decoder = json.JSONDecoder()
    pos = start + 1
    length = len(text)
    while True:
        while pos < length and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= length or text[pos] == "]":
            return
        value, end = decoder.raw_decode(text, pos)
        yield pos, value
        pos = end


def _iter_jsonl(text: str) -> Iterator[ParsedRecord]:
    # split("\n") rather than splitlines(): the latter also breaks on \x0b, \u2028 ..., which
    # editors do not count, so reported line numbers would drift.
    for number, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            error = f"line {number}: invalid JSON: {exc.msg} (column {exc.colno})"
            yield ParsedRecord(line=number, record=None, error=error)
            continue
        except (ValueError, RecursionError) as exc:
            # Not a syntax error: too deeply nested, or an integer beyond Python's digit limit.
            detail = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            yield ParsedRecord(
                line=number, record=None, error=f"line {number}: invalid JSON: {detail}"
            )
            continue
        yield ParsedRecord(line=number, record=record, error=None)


def iter_records(text: str) -> Iterator[ParsedRecord]:
    """Yields the records of a file: one JSON document, a JSON array of records, JSON lines,
    or the sessions of an aider chat history.

    An event log (one event per line, or an array of events) is one record, a list of its
    events (a Claude Code log: one per conversation and per sub-agent). A bad JSON line gives
    an error record and iteration continues with the next line; a file of which no line or
    element could be a trajectory gives one error for the whole file.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    start = len(text) - len(text.lstrip())
    if start == len(text):
        return
    first_line = _line_at(text, start)
    if text[start] not in "[{":
        if aider.looks_like(text[start:]):
            for line, chunk in aider.sessions(text):
                yield ParsedRecord(line=line, record={"aider_session": chunk}, error=None)
            return
        head = text[start:].split("\n", 1)[0]
        yield ParsedRecord(
            first_line, None, f"line {first_line}: not JSON: {KNOWN}; it starts {_excerpt(head)!r}"
        )
        return
    if text[start] in "[{":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            document = _NOT_JSON
            if not _first_line_is_json(text, start):
                # A pretty-printed document with a syntax error: one error at the right line,
                # rather than one per line from the JSON-lines fallback.
                where = exc.lineno
                yield ParsedRecord(where, None, f"line {where}: invalid JSON: {exc.msg}")
                return
        except (ValueError, RecursionError):
            document = _NOT_JSON
        if document is not _NOT_JSON:
            if isinstance(document, list) and (fmt := event_log_format(document)):
                for group in _log_groups(fmt, document):
                    yield ParsedRecord(line=first_line, record=group, error=None)
                return
            if isinstance(document, list) and not is_single_record_list(document):
                line, counted = first_line, start
                try:
                    for offset, value in _array_elements(text, start):
                        # Count newlines incrementally: big arrays would make a rescan quadratic.
                        line += text.count("\n", counted, offset)
                        counted = offset
                        yield ParsedRecord(line=line, record=value, error=None)
                except (ValueError, RecursionError):  # pragma: no cover - validated above
                    yield ParsedRecord(first_line, None, f"line {first_line}: invalid JSON array")
                return
            yield ParsedRecord(line=first_line, record=document, error=None)
            return
    yield from _records_of_lines(list(_iter_jsonl(text)))


def _records_of_lines(parsed: list[ParsedRecord]) -> Iterator[ParsedRecord]:
    """JSON lines: an event log is one record; otherwise a record per line."""
    good = [p for p in parsed if p.error is None]
    lines = [p.record for p in good]
    fmt = event_log_format(lines) if lines else None
    if fmt is not None:
        yield from (p for p in parsed if p.error is not None)
        line_of = {id(p.record): p.line for p in good}
        for group in _log_groups(fmt, lines):
            yield ParsedRecord(
                line=line_of.get(id(group[0]), good[0].line), record=group, error=None
            )
        return
    if len(parsed) > 1 and not any(_detectable(record) for record in lines):
        # Not one line is a trajectory: one error for the file, not one per line.
        first = parsed[0]
        why = first.error or _why_undetectable(first.record)
        yield ParsedRecord(
            first.line,
            None,
            f"line {first.line}: none of the {len(parsed)} lines is a trajectory: {KNOWN} "
            f"(line {first.line}: {why.removeprefix(f'line {first.line}: ')})",
        )
        return
    yield from parsed


def _why_undetectable(record: object) -> str:
    try:
        detect_format(record)
    except ImportFormatError as exc:
        return str(exc)
    return "no trajectory"  # pragma: no cover - only called for undetectable records


_NOT_JSON = object()


def _first_line_is_json(text: str, start: int) -> bool:
    """True when the first non-blank line is a JSON value by itself, i.e. the file is JSON lines."""
    end = text.find("\n", start)
    try:
        json.loads(text[start : end if end != -1 else len(text)])
    except (ValueError, RecursionError):
        return False
    return True


def _is_gemini_cli_session(record: dict) -> bool:
    """Gemini CLI's own session file: its messages have a ``type`` (user / gemini), no role.
    Named, so that it gets one clear error rather than a role error per message."""
    messages = record["messages"]
    return (
        "sessionId" in record
        and bool(messages)
        and all(isinstance(m, dict) and "role" not in m for m in messages)
        and any(isinstance(m, dict) and m.get("type") == "gemini" for m in messages)
    )


def detect_format(record: object) -> str:
    """Names the format of one record from its distinctive keys; raises if nothing matches."""
    if isinstance(record, str):
        if aider.looks_like(record):
            return aider.FORMAT
        raise ImportFormatError(f"cannot detect format: text that is not JSON; {KNOWN}")
    if isinstance(record, list):
        if not record:
            raise ImportFormatError("cannot detect format: empty array")
        fmt = event_log_format(record)
        if fmt is not None:
            return fmt
        if openhands.looks_like(record):
            return openhands.FORMAT
        if mini_swe_agent.looks_like_messages(record):
            return mini_swe_agent.FORMAT
        if all(isinstance(item, dict) and "role" in item for item in record):
            wrapped = {"messages": record}
            return anthropic.FORMAT if anthropic.looks_like(wrapped) else openai.FORMAT
        raise ImportFormatError(
            "cannot detect format: an array must hold chat messages or the events of one agent "
            "log (OpenHands, Claude Code, Codex)"
        )
    if not isinstance(record, dict):
        raise ImportFormatError(
            f"cannot detect format: expected an object or an array, got {type(record).__name__}"
        )
    if isinstance(record.get("aider_session"), str):
        return aider.FORMAT
    if claude_code.loglines(record) is not None:
        return claude_code.FORMAT
    if atif.looks_like(record):
        return atif.FORMAT
    if mini_swe_agent.looks_like(record):
        return mini_swe_agent.FORMAT
    if swe_agent.looks_like(record):
        return swe_agent.FORMAT
    if openhands_v1.looks_like(record):
        return openhands_v1.FORMAT
    if openhands.looks_like(record):
        return openhands.FORMAT
    if litellm.looks_like(record):
        return litellm.FORMAT
    if isinstance(record.get("messages"), list):
        if _is_gemini_cli_session(record):
            raise ImportFormatError(
                "cannot detect format: this is a Gemini CLI session (messages of type "
                f"user / gemini), which is not supported; {KNOWN}"
            )
        if anthropic.looks_like(record):
            return anthropic.FORMAT
        return openai.FORMAT
    if "messages" in record:
        # A C1 record with a malformed 'messages': validation then names the field exactly.
        return openai.FORMAT
    for product, is_line in (
        ("Claude Code", claude_code.is_line),
        ("Codex", codex.is_line),
        ("OpenHands V1", openhands_v1.is_event),
    ):
        if is_line(record):
            raise ImportFormatError(
                f"cannot detect format: this is one event of a {product} log; import the whole "
                "log (all its lines, or an array of its events) as one trajectory"
            )
    keys = ", ".join(sorted(str(key) for key in record)[:10]) or "none"
    raise ImportFormatError(
        "cannot detect format: expected 'messages' (OpenAI / Anthropic / litellm), 'steps' "
        "(ATIF), 'history' or 'trajectory' (SWE-agent), OpenHands events, or the lines of a "
        f"Claude Code or Codex log; keys found: {keys}"
    )


def _convert_unguarded(record: object, fmt: str) -> dict:
    """Runs one converter; kept separate so tests can check converters need no safety net."""
    if fmt == "auto":
        fmt = detect_format(record)
    return CONVERTERS[fmt](record)


def convert_record(
    record: object,
    fmt: str = "auto",
    *,
    limits: Limits = Limits(),  # noqa: B008
    reading: ActionReading = ActionReading(),  # noqa: B008
    source: str | None = None,
) -> tuple[str, dict]:
    """Converts one record to a normalized C1 dict; returns (format used, trajectory).

    Actions written as text are read into tool calls (``reading.text_format``), and what could
    not be read at all is listed in ``metadata.actions_not_understood`` (absent when nothing).
    ``source`` is the path the record was read from: what its content lacks and the path says
    (an instance id, aider's workspace) is taken from it (``importers.source``).
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise ImportFormatError(
            f"unknown format {fmt!r}; expected auto or one of {', '.join(FORMATS)}", field="format"
        )
    used = detect_format(record) if fmt == "auto" else fmt
    try:
        raw = CONVERTERS[used](record)
        if isinstance(raw, dict):
            raw = apply_source(used, read_text_actions(raw, reading), source)
    except (ImportFormatError, TrajectoryError):
        raise
    except Exception as exc:
        # Converters are written to be total (and fuzzed without this net); should one still
        # trip on an input nobody foresaw, the caller gets a clean per-record error, not a 500.
        raise ImportFormatError(f"{used}: malformed record ({type(exc).__name__})") from None
    canonical = normalize_trajectory(raw, limits=limits)
    metadata = canonical["metadata"]
    metadata.setdefault("source_format", used)
    unread = actions_not_understood(canonical, reading)
    if unread:
        metadata[UNREAD_KEY] = unread
    else:
        metadata.pop(UNREAD_KEY, None)
    return used, canonical
