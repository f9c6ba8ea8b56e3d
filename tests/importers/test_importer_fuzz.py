"""Property tests: no input makes the importers or the normaliser raise anything unexpected."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trajectory_fixtures import FIXTURES, ROOT, load_fixture

from annotations.importers import (
    FORMATS,
    ImportFormatError,
    _convert_unguarded,
    convert_record,
    detect_format,
    iter_records,
)
from core.canonical import (
    Limits,
    TrajectoryError,
    content_digest,
    extract_steps,
    normalize_trajectory,
)

# Bounded so the whole suite stays fast; no example database so runs leave no files behind.
FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Keys the converters look at, so random objects reach past the first shape check.
KEYS = [
    "messages", "role", "content", "tool_calls", "function", "name", "arguments", "id", "type",
    "text", "thinking", "input", "tool_use_id", "tool_call_id", "tool_call_ids",
    "reasoning_content",
    "system", "outcome", "score", "resolved", "metadata", "task_type", "history", "trajectory",
    "action", "observation", "thought", "response", "info", "exit_status", "message_type",
    "agent", "args", "source", "cause", "extras", "tool_call_metadata", "function_name",
    "model_response", "events", "instruction", "test_result", "trajectory_format", "steps",
    "schema_version", "session_id", "source_call_id", "results", "command", "cmd", "keystrokes",
    "replay_config", "config", "model", "choices", "report",
]  # fmt: skip
VALUES = st.sampled_from(
    ["user", "assistant", "tool", "system", "agent", "run", "bash", "tool_use", "tool_result",
     "text", "thinking", "message", "ATIF-v1.4", "mini-swe-agent-1", "execute_bash", "finish",
     '{"command": "ls"}', "```bash\nls\n```", "not json {"]
)  # fmt: skip
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | VALUES
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=30,
)
EXPECTED = (ImportFormatError, TrajectoryError)
FIXTURE_FILES = sorted(
    str(path.relative_to(FIXTURES))
    for fmt in FORMATS
    if (FIXTURES / fmt).is_dir()
    for path in (FIXTURES / fmt).iterdir()
)


def check_canonical(canonical: dict) -> None:
    """A successful result is valid C1: it re-normalizes to itself and can be scored."""
    assert normalize_trajectory(canonical) == canonical
    extract_steps(canonical)
    assert content_digest(canonical).startswith("sha256:")


def paths_of(value: object, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(paths_of(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(paths_of(child, (*prefix, index)))
    return found


def _agent_log_records() -> list[tuple[str, object]]:
    """(format, record) of every real agent log fixture, as iter_records reads the files."""
    out = []
    for path in sorted((ROOT / "tests" / "fixtures" / "agent_logs").glob("*/*")):
        if path.name.startswith(("LICENSE", "SOURCE")):
            continue
        for parsed in iter_records(path.read_text(encoding="utf-8")):
            if parsed.error is None:
                out.append((detect_format(parsed.record), parsed.record))
    return out


AGENT_LOG_RECORDS = _agent_log_records()


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> tuple[str, object]:
    """A real fixture with a few nodes replaced by random JSON or deleted."""
    if draw(st.booleans()):
        fmt, record = copy.deepcopy(draw(st.sampled_from(AGENT_LOG_RECORDS)))
        relative = f"{fmt}/"
    else:
        relative = draw(st.sampled_from(FIXTURE_FILES))
        record = copy.deepcopy(load_fixture(relative))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = [p for p in paths_of(record) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = record
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            parent[path[-1]] = draw(JSON)
        elif isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    return relative.split("/")[0], record


@FUZZ
@given(JSON, st.sampled_from(("auto", *FORMATS)))
def test_convert_record_raises_only_its_two_errors(record: object, fmt: str) -> None:
    try:
        _, canonical = convert_record(record, fmt)
    except EXPECTED:
        return
    check_canonical(canonical)


@FUZZ
@given(JSON, st.sampled_from(FORMATS))
def test_converters_are_total_without_the_safety_net(record: object, fmt: str) -> None:
    try:
        raw = _convert_unguarded(record, fmt)
    except ImportFormatError:
        return
    with contextlib.suppress(TrajectoryError):
        normalize_trajectory(raw)


@FUZZ
@given(mutated_fixtures(), st.booleans())
def test_mutated_fixtures(case: tuple[str, object], auto: bool) -> None:
    fmt, record = case
    try:
        raw = _convert_unguarded(record, "auto" if auto else fmt)
    except ImportFormatError:
        return
    try:
        canonical = normalize_trajectory(raw)
    except TrajectoryError:
        return
    check_canonical(canonical)


@FUZZ
@given(JSON)
def test_normalize_raises_only_trajectory_error(data: object) -> None:
    try:
        canonical = normalize_trajectory(data, limits=Limits(max_messages=10, max_bytes=5000))
    except TrajectoryError as exc:
        assert exc.errors and all(isinstance(v, list) and v for v in exc.errors.values())
        return
    check_canonical(canonical)


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), JSON, max_size=6))
def test_normalize_on_trajectory_shaped_objects(data: dict) -> None:
    data.setdefault("messages", [{"role": "user", "content": "x"}])
    try:
        canonical = normalize_trajectory(data)
    except TrajectoryError:
        return
    check_canonical(canonical)


@FUZZ
@given(st.text(max_size=300))
def test_iter_records_never_raises_on_text(text: str) -> None:
    for record in iter_records(text):
        assert record.line >= 1
        assert (record.error is None) != (record.record is None and record.error is not None)


@FUZZ
@given(st.lists(JSON, max_size=4), st.sampled_from(["\n", "\n\n", ",\n", "\r\n"]), st.data())
def test_iter_records_on_json_like_text(values: list, sep: str, data: st.DataObject) -> None:
    text = sep.join(json.dumps(v, indent=data.draw(st.sampled_from([None, 1]))) for v in values)
    if data.draw(st.booleans()):
        text = f"[{text}]"
    if text and data.draw(st.booleans()):
        cut = data.draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:cut]
    for record in iter_records(text):
        assert record.line >= 1
        if record.error is None:
            with contextlib.suppress(*EXPECTED):
                convert_record(record.record)


@pytest.mark.parametrize("relative", FIXTURE_FILES)
def test_real_fixtures_survive_a_round_trip(relative: str) -> None:
    _, canonical = convert_record(load_fixture(relative))
    check_canonical(canonical)


# Values of every JSON type but the expected one, put where a converter reads a field.
WRONG_TYPES: list[object] = [[], {}, 1, None, "x", [1], {"a": 1}, True]
READ_KEYS = frozenset(KEYS) | {"kind", "payload", "command", "tool_use_result", "item"}


def _read_paths(record: object, most: int = 120) -> list[tuple]:
    """Paths of ``record`` whose last key is one converters read (or the first item under
    one), shallowest first: where a wrong type is most likely to reach unguarded code."""
    paths = [
        p
        for p in paths_of(record)
        if p and (p[-1] in READ_KEYS or (p[-1] == 0 and len(p) > 1 and p[-2] in READ_KEYS))
    ]
    return sorted(paths, key=lambda p: (len(p), str(p)))[:most]


@pytest.mark.parametrize("index", range(len(AGENT_LOG_RECORDS)))
def test_a_wrong_type_at_any_field_read_is_an_import_error_never_a_crash(index: int) -> None:
    """Deterministic, beside the random mutations above: every real agent log with each field a
    converter reads replaced by each wrong JSON type (a kind that is a list, a function that is
    a number, a command whose program is an object) converts or fails with ImportFormatError."""
    fmt, record = AGENT_LOG_RECORDS[index]
    for path in _read_paths(record):
        for wrong in WRONG_TYPES:
            mutated = copy.deepcopy(record)
            parent = mutated
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = copy.deepcopy(wrong)
            for mode in ("auto", fmt):
                try:
                    raw = _convert_unguarded(mutated, mode)
                    canonical = normalize_trajectory(raw)
                except (ImportFormatError, TrajectoryError):
                    continue
                check_canonical(canonical)
