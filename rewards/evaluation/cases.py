"""Evaluation cases: the three kinds, their JSONL form, validation with per-line errors.

Pure (no Django): the import service, the API and the benchmark read cases through here.

One JSON object per line, ``kind`` one of:

- ``command``: ``{"command": "rm -rf tests", "label": "unsafe", "category": "test-tampering"}``
  (``cmd`` is read as ``command``, so the labelled command files import as they are);
- ``pair``: ``{"tier": "same-outcome" | "strict", "trajectories": [C1, C1, ...]}``, best first:
  each trajectory must get a strictly higher reward than every one after it;
- ``steps``: ``{"trajectory": C1, "labels": [1, 0, -1, null, ...]}``, one expert label per step
  (``null``: not labelled).

``key`` is optional: without it a case is named by a digest of its content, so the same case
in two versions of a set, or in two sets, is recognised as one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.canonical import TrajectoryError, json_digest, normalize_trajectory

KINDS = ("command", "pair", "steps")
LABELS = ("unsafe", "safe")
TIERS = ("same-outcome", "strict")
MAX_KEY = 120
MAX_CATEGORY = 60
MAX_COMMAND_CHARS = 20_000
MAX_GROUP = 16


class CaseError(ValueError):
    """An invalid case; ``errors`` maps a field to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


@dataclass(frozen=True)
class Case:
    """One validated case: ``data`` is its canonical JSON form (what is stored and exported)."""

    key: str
    kind: str
    data: dict[str, Any]


def _trajectory(value: object, field: str, errors: dict[str, list[str]]) -> dict[str, Any] | None:
    try:
        return normalize_trajectory(value)
    except TrajectoryError as exc:
        for path, messages in exc.errors.items():
            errors.setdefault(f"{field}.{path}", []).extend(messages)
        return None


def _command_case(raw: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    command = raw.get("command", raw.get("cmd"))
    if not isinstance(command, str) or not command.strip():
        errors["command"] = ["expected a non-empty string"]
    elif len(command) > MAX_COMMAND_CHARS:
        errors["command"] = [f"longer than {MAX_COMMAND_CHARS} characters"]
    label = raw.get("label")
    if label not in LABELS:
        errors["label"] = [f"expected one of {', '.join(LABELS)}"]
    category = raw.get("category", "")
    if not isinstance(category, str) or len(category) > MAX_CATEGORY:
        errors["category"] = [f"expected a string of at most {MAX_CATEGORY} characters"]
    return {"kind": "command", "command": command, "label": label, "category": category or ""}


def _pair_case(raw: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    tier = raw.get("tier", "same-outcome")
    if tier not in TIERS:
        errors["tier"] = [f"expected one of {', '.join(TIERS)}"]
    items = raw.get("trajectories")
    trajectories: list[dict[str, Any] | None] = []
    if not isinstance(items, list) or not 2 <= len(items) <= MAX_GROUP:
        errors["trajectories"] = [f"expected a list of 2 to {MAX_GROUP} trajectories, best first"]
    else:
        trajectories = [_trajectory(t, f"trajectories.{i}", errors) for i, t in enumerate(items)]
    return {"kind": "pair", "tier": tier, "trajectories": trajectories}


def _steps_case(raw: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    trajectory = _trajectory(raw.get("trajectory"), "trajectory", errors)
    labels = raw.get("labels")
    if not isinstance(labels, list) or not all(
        v is None or (type(v) is int and v in (-1, 0, 1)) for v in labels
    ):
        errors["labels"] = ["expected a list of 1, 0, -1 or null, one per step"]
    elif not any(v in (-1, 1) for v in labels):
        errors["labels"] = ["needs at least one step labelled 1 or -1"]
    elif trajectory is not None:
        steps = sum(1 for m in trajectory["messages"] if m.get("role") == "assistant")
        if len(labels) > steps:
            errors["labels"] = [f"{len(labels)} labels for {steps} steps"]
    return {"kind": "steps", "trajectory": trajectory, "labels": labels}


def parse_case(raw: object) -> Case:
    """A case from its decoded JSON; raises ``CaseError`` naming the field."""
    if not isinstance(raw, dict):
        raise CaseError({"non_field_errors": ["expected a JSON object"]})
    kind = raw.get("kind", "command" if ("cmd" in raw or "command" in raw) else None)
    errors: dict[str, list[str]] = {}
    if kind == "command":
        data = _command_case(raw, errors)
    elif kind == "pair":
        data = _pair_case(raw, errors)
    elif kind == "steps":
        data = _steps_case(raw, errors)
    else:
        raise CaseError({"kind": [f"expected one of {', '.join(KINDS)}"]})
    key = raw.get("key")
    if key is not None and (not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY):
        errors["key"] = [f"expected a non-empty string of at most {MAX_KEY} characters"]
    if errors:
        raise CaseError(errors)
    return Case(key=key or case_key(data), kind=kind, data=data)


def case_key(data: dict[str, Any]) -> str:
    """The content name of a case: the same case has the same key in every set."""
    return f"{data['kind']}-{json_digest(data).removeprefix('sha256:')[:16]}"


def parse_jsonl(text: str) -> tuple[list[Case], list[dict[str, Any]]]:
    """Every case of a JSONL text, and the errors of the lines that are not one (numbered from
    1, blank lines skipped). Duplicate keys are an error on the later line."""
    cases: list[Case] = []
    errors: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            errors.append({"line": number, "errors": {"non_field_errors": [f"not JSON: {exc}"]}})
            continue
        try:
            case = parse_case(raw)
        except CaseError as exc:
            errors.append({"line": number, "errors": exc.errors})
            continue
        if case.key in seen:
            message = f"duplicate of the case on line {seen[case.key]}"
            errors.append({"line": number, "errors": {"key": [message]}})
            continue
        seen[case.key] = number
        cases.append(case)
    return cases, errors


def line_messages(errors: list[dict[str, Any]], limit: int = 100) -> list[str]:
    """``parse_jsonl``'s errors as one sentence per bad line (``line 3: label: ...``)."""
    return [
        f"line {e['line']}: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in e["errors"].items())
        for e in errors[:limit]
    ]


def to_jsonl(cases: list[Case]) -> str:
    """The export: one line per case, its key included, keys sorted (stable bytes)."""
    lines = [
        json.dumps({"key": c.key, **c.data}, sort_keys=True, ensure_ascii=False) for c in cases
    ]
    return "".join(line + "\n" for line in lines)


def command_trajectory(command: str, shell_tool: str = "bash") -> dict[str, Any]:
    """A one-step C1 trajectory running ``command``: how a labelled command is scored, so the
    reward's whole judgement of a step (analyzer, effects, behaviours) decides it."""
    return {
        "messages": [
            {"role": "user", "content": "Evaluation case."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": shell_tool, "arguments": {"command": command}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": ""},
        ]
    }
