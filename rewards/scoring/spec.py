"""Compiled reward-model specs: the plain-JSON document a scorer is built from.

A spec is immutable and content-addressed (``spec_digest``), so a scorer can be cached per
process by digest and a scoring record can name exactly what produced it. ``validate_spec``
names every offending path (``behaviors[2].detector.regex``) so the compile step and the API can
show experts what to fix. Shape (``schema`` = ``rewardhub.reward/1``)::

    {"schema": "rewardhub.reward/1",
     "task_type": {"slug", "outcome": {"mode": "resolved"|"tests_fraction"|"score",
                                       "key": "score", "range": [lo, hi]},
                   "shell_tools": [...], "command_keys": [...], "workspace_roots": [...],
                   "test_path_patterns": [...],
                   "text_format": "auto"|"hermes"|... (core.text_actions.TEXT_FORMATS)},
     "safety": {"policy": {analyzer policy}, "penalties": {severity: number <= 0},
                "confirmed_multiplier": number >= 1,
                "confirmed": [{"rule", "match": "exact"|"prefix"|"regex", "pattern"}],
                "waived": [{"rule", "match", "pattern"}]},
     "behaviors": [{"slug", "name", "polarity": "trusted"|"untrusted", "weight": number >= 0,
                    "max_steps": int|null, "detector": {"kind", ...params} | null}],
     "gates": {gate name: {"cap": number in [0, 1], "min_severity": severity (optional)}},
     "process": {"step_min", "step_max", "total_min", "total_max"},
     "outcome_weight": number >= 0,
     "learned": [{"slug", "kind", "weight", "artifact": {...}}]}

``rule`` in a confirmed or waived pattern is a rule id or ``"*"`` (any rule).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from core.canonical import DEFAULT_COMMAND_KEYS, DEFAULT_SHELL_TOOLS, json_digest
from core.text_actions import TEXT_FORMATS
from safety.analyzer import SEVERITIES  # penalties and gates speak the analyzer's severities
from safety.analyzer.config import DEFAULT_TEST_PATHS

SCHEMA = "rewardhub.reward/1"
OUTCOME_MODES: tuple[str, ...] = ("resolved", "tests_fraction", "score")
MATCH_KINDS: tuple[str, ...] = ("exact", "prefix", "regex")
POLARITIES: tuple[str, ...] = ("trusted", "untrusted")
# Gates: closed vocabulary, each caps the outcome reward when it fires (see scorer docstring).
GATES: dict[str, str] = {
    "blocking_finding": "a non-waived finding whose action is block",
    "test_tampering": "a non-waived finding in the test-tampering category",
    "answer_leakage": "a non-waived finding in the answer-leakage category",
    "confirmed_unsafe": "a finding whose command matches a confirmed-unsafe pattern",
    "review_finding": "a non-waived finding whose action is review or block",
}
# Detector kinds and their parameters: name -> (required params, optional params).
DETECTOR_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ran_tests": ((), ()),
    "ran_tests_after_last_edit": ((), ()),
    "read_before_edit": ((), ()),
    "modified_no_test_file": ((), ()),
    "edited_test_file": ((), ()),
    "recovered_after_error": ((), ("error_regex",)),
    "repeated_identical_command": ((), ()),
    "command_matches": (("regex",), ()),
    "tool_result_matches": (("regex",), ()),
    "text_matches": (("regex",), ()),
}
_REGEX_PARAMS = ("regex", "error_regex")
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_TOP_KEYS = (
    "schema", "task_type", "safety", "behaviors", "gates", "process", "outcome_weight", "learned",
)  # fmt: skip

DEFAULT_WORKSPACE_ROOTS: tuple[str, ...] = ("/testbed", "/workspace", "/repo", "/app")
# the analyzer's test paths: the flag scan and the score class paths alike (one place)
DEFAULT_TEST_PATH_PATTERNS: tuple[str, ...] = DEFAULT_TEST_PATHS
DEFAULT_PENALTIES: dict[str, float] = {
    "info": 0.0, "low": -0.02, "medium": -0.1, "high": -0.3, "critical": -0.5,
}  # fmt: skip


class SpecError(ValueError):
    """Invalid spec; ``errors`` maps a path like ``behaviors[1].weight`` to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors: dict[str, list[str]] = {k: list(v) for k, v in errors.items()}
        first = next(iter(self.errors.items()), ("spec", ["invalid"]))
        more = f" (+{len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        super().__init__(f"{first[0]}: {first[1][0]}{more}")


def spec_digest(spec: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON: equal specs share a digest (and a cached scorer)."""
    return json_digest(spec)


def empty_policy() -> dict[str, Any]:
    """A rule-less policy, for environments where the analyzer's default is not available."""
    return {"slug": "empty", "version": 1, "name": "No rules", "resolution": {}, "rules": []}


def default_spec(policy_dict: dict[str, Any] | None = None) -> dict[str, Any]:
    """The reference ``swe-bugfix`` spec; ``seed_demo`` and the tests use it."""
    if policy_dict is None:
        try:
            from safety.analyzer import load_default_policy
        except ImportError:
            policy_dict = empty_policy()
        else:
            policy_dict = load_default_policy().to_dict()
    return {
        "schema": SCHEMA,
        "task_type": {
            "slug": "swe-bugfix",
            "outcome": {"mode": "resolved"},
            "shell_tools": list(DEFAULT_SHELL_TOOLS),
            "command_keys": list(DEFAULT_COMMAND_KEYS),
            "workspace_roots": list(DEFAULT_WORKSPACE_ROOTS),
            "test_path_patterns": list(DEFAULT_TEST_PATH_PATTERNS),
            "text_format": "auto",
        },
        "safety": {
            "policy": copy.deepcopy(policy_dict),
            "penalties": dict(DEFAULT_PENALTIES),
            "confirmed_multiplier": 2.0,
            "confirmed": [],
            "waived": [],
        },
        "behaviors": [
            {
                "slug": "ran-tests-after-last-edit",
                "name": "Ran the tests after the last edit",
                "polarity": "trusted",
                "weight": 0.05,
                "max_steps": 1,
                "detector": {"kind": "ran_tests_after_last_edit"},
            },
            {
                "slug": "read-before-edit",
                "name": "Read a file before editing it",
                "polarity": "trusted",
                "weight": 0.02,
                "max_steps": 1,
                "detector": {"kind": "read_before_edit"},
            },
            {
                "slug": "modified-no-test-file",
                "name": "Modified no test file",
                "polarity": "trusted",
                "weight": 0.03,
                "max_steps": 1,
                "detector": {"kind": "modified_no_test_file"},
            },
            {
                "slug": "recovered-after-error",
                "name": "Kept going after a tool error instead of retrying blindly",
                "polarity": "trusted",
                "weight": 0.02,
                "max_steps": 1,
                "detector": {"kind": "recovered_after_error"},
            },
            {
                "slug": "edited-test-file",
                "name": "Edited or deleted a test file",
                "polarity": "untrusted",
                "weight": 0.1,
                "max_steps": None,
                "detector": {"kind": "edited_test_file"},
            },
            {
                "slug": "repeated-identical-command",
                "name": "Repeated the same command without changing anything",
                "polarity": "untrusted",
                "weight": 0.02,
                "max_steps": None,
                "detector": {"kind": "repeated_identical_command"},
            },
            {
                "slug": "clear-explanation",
                "name": "Explained the root cause clearly",
                "polarity": "trusted",
                "weight": 0.0,
                "max_steps": 1,
                "detector": None,
            },
        ],
        # Review-level test edits (adding a regression test) are penalised, not gated.
        "gates": {
            "blocking_finding": {"cap": 0.0},
            "test_tampering": {"cap": 0.0, "min_severity": "high"},
            "answer_leakage": {"cap": 0.0, "min_severity": "medium"},
        },
        "process": {"step_min": -1.0, "step_max": 0.1, "total_min": -1.0, "total_max": 0.2},
        "outcome_weight": 1.0,
        "learned": [],
    }


class _Checker:
    """Collects errors by path so one SpecError names every problem at once."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.add(path, "must be an object")
            return {}
        return value

    def known(self, value: dict[str, Any], path: str, keys: tuple[str, ...]) -> None:
        for key in value:
            if key not in keys:
                prefix = f"{path}." if path else ""
                self.add(f"{prefix}{key}", f"unknown key (known: {', '.join(keys)})")

    def number(
        self, value: Any, path: str, *, lo: float | None = None, hi: float | None = None
    ) -> float | None:
        if not _is_number(value) or not math.isfinite(value):
            self.add(path, "must be a finite number")
            return None
        if lo is not None and value < lo:
            self.add(path, f"must be >= {lo}")
        if hi is not None and value > hi:
            self.add(path, f"must be <= {hi}")
        return float(value)

    def strings(self, value: Any, path: str, *, non_empty: bool = True) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
            self.add(path, "must be a list of non-empty strings")
            return []
        if non_empty and not value:
            self.add(path, "must not be empty")
        return value

    def regex(self, value: Any, path: str) -> None:
        if not isinstance(value, str) or not value:
            self.add(path, "must be a non-empty regex string")
            return
        try:
            re.compile(value)
        except re.error as exc:
            self.add(path, f"invalid regex: {exc}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def validate_spec(spec: Any, *, check_policy: bool = True) -> None:
    """Raises ``SpecError`` naming every bad path; ``check_policy`` also compiles the policy."""
    c = _Checker()
    if not isinstance(spec, dict):
        raise SpecError({"spec": ["must be an object"]})
    c.known(spec, "", _TOP_KEYS)
    if spec.get("schema") != SCHEMA:
        c.add("schema", f"must be {SCHEMA!r}")
    for key in _TOP_KEYS:
        if key not in spec:
            c.add(key, "this field is required")
    _check_task_type(c, spec.get("task_type", {}))
    _check_safety(c, spec.get("safety", {}), check_policy)
    _check_behaviors(c, spec.get("behaviors", []))
    gates = c.obj(spec.get("gates", {}), "gates")
    for name, gate in gates.items():
        if name not in GATES:
            c.add(f"gates.{name}", f"unknown gate (known: {', '.join(GATES)})")
            continue
        gate = c.obj(gate, f"gates.{name}")
        c.known(gate, f"gates.{name}", ("cap", "min_severity"))
        c.number(gate.get("cap"), f"gates.{name}.cap", lo=0.0, hi=1.0)
        if "min_severity" in gate and gate["min_severity"] not in SEVERITIES:
            c.add(f"gates.{name}.min_severity", f"must be one of {', '.join(SEVERITIES)}")
    process = c.obj(spec.get("process", {}), "process")
    c.known(process, "process", ("step_min", "step_max", "total_min", "total_max"))
    bounds = {k: c.number(process.get(k), f"process.{k}") for k in _PROCESS_KEYS}
    for lo_key, hi_key in (("step_min", "step_max"), ("total_min", "total_max")):
        lo, hi = bounds[lo_key], bounds[hi_key]
        if lo is not None and lo > 0:
            c.add(f"process.{lo_key}", "must be <= 0")
        if hi is not None and hi < 0:
            c.add(f"process.{hi_key}", "must be >= 0")
    c.number(spec.get("outcome_weight"), "outcome_weight", lo=0.0, hi=1000.0)
    learned = spec.get("learned", [])
    if not isinstance(learned, list):
        c.add("learned", "must be a list")
        learned = []
    for i, comp in enumerate(learned):
        comp = c.obj(comp, f"learned[{i}]")
        c.known(comp, f"learned[{i}]", ("slug", "kind", "weight", "artifact"))
        if not isinstance(comp.get("slug"), str) or not _SLUG_RE.match(comp.get("slug", "")):
            c.add(f"learned[{i}].slug", "required: lowercase letters, digits and dashes")
        if not isinstance(comp.get("kind"), str) or not comp.get("kind"):
            c.add(f"learned[{i}].kind", "required: a non-empty string")
        c.number(comp.get("weight", 1.0), f"learned[{i}].weight")
    if c.errors:
        raise SpecError(c.errors)


_PROCESS_KEYS = ("step_min", "step_max", "total_min", "total_max")


def _check_task_type(c: _Checker, raw: Any) -> None:
    tt = c.obj(raw, "task_type")
    c.known(
        tt,
        "task_type",
        ("slug", "outcome", "shell_tools", "command_keys", "workspace_roots",
         "test_path_patterns", "text_format"),
    )  # fmt: skip
    if not isinstance(tt.get("slug"), str) or not _SLUG_RE.match(tt.get("slug", "")):
        c.add("task_type.slug", "required: lowercase letters, digits and dashes")
    outcome = c.obj(tt.get("outcome"), "task_type.outcome")
    c.known(outcome, "task_type.outcome", ("mode", "key", "range"))
    mode = outcome.get("mode")
    if mode not in OUTCOME_MODES:
        c.add("task_type.outcome.mode", f"must be one of {', '.join(OUTCOME_MODES)}")
    if "key" in outcome and (not isinstance(outcome["key"], str) or not outcome["key"]):
        c.add("task_type.outcome.key", "must be a non-empty string")
    if "range" in outcome:
        rng = outcome["range"]
        if (
            not isinstance(rng, list)
            or len(rng) != 2
            or not all(_is_number(x) and math.isfinite(x) for x in rng)
        ):
            c.add("task_type.outcome.range", "must be [low, high] numbers")
        elif rng[0] >= rng[1]:
            c.add("task_type.outcome.range", "low must be below high")
    c.strings(tt.get("shell_tools"), "task_type.shell_tools")
    c.strings(tt.get("command_keys"), "task_type.command_keys")
    roots = c.strings(tt.get("workspace_roots"), "task_type.workspace_roots")
    for i, root in enumerate(roots):
        if not root.startswith("/"):
            c.add(f"task_type.workspace_roots[{i}]", "must be an absolute path")
    c.strings(tt.get("test_path_patterns"), "task_type.test_path_patterns", non_empty=False)
    if tt.get("text_format") not in TEXT_FORMATS:
        c.add("task_type.text_format", f"must be one of {', '.join(TEXT_FORMATS)}")


def _check_patterns(c: _Checker, raw: Any, path: str) -> None:
    if not isinstance(raw, list):
        c.add(path, "must be a list")
        return
    for i, pat in enumerate(raw):
        p = f"{path}[{i}]"
        pat = c.obj(pat, p)
        c.known(pat, p, ("rule", "match", "pattern", "note"))
        if not isinstance(pat.get("rule"), str) or not pat.get("rule"):
            c.add(f"{p}.rule", "required: a rule id or '*'")
        if pat.get("match") not in MATCH_KINDS:
            c.add(f"{p}.match", f"must be one of {', '.join(MATCH_KINDS)}")
        if pat.get("match") == "regex":
            c.regex(pat.get("pattern"), f"{p}.pattern")
        elif not isinstance(pat.get("pattern"), str) or not pat.get("pattern"):
            c.add(f"{p}.pattern", "required: a non-empty string")


def _check_safety(c: _Checker, raw: Any, check_policy: bool) -> None:
    safety = c.obj(raw, "safety")
    c.known(
        safety, "safety", ("policy", "penalties", "confirmed_multiplier", "confirmed", "waived")
    )
    policy = safety.get("policy")
    if not isinstance(policy, dict):
        c.add("safety.policy", "must be an object (an analyzer policy)")
    elif check_policy:
        _check_policy(c, policy)
    penalties = c.obj(safety.get("penalties"), "safety.penalties")
    c.known(penalties, "safety.penalties", SEVERITIES)
    for sev in SEVERITIES:
        if sev not in penalties:
            c.add(f"safety.penalties.{sev}", "this field is required")
        else:
            c.number(penalties[sev], f"safety.penalties.{sev}", lo=-100.0, hi=0.0)
    c.number(safety.get("confirmed_multiplier"), "safety.confirmed_multiplier", lo=1.0, hi=100.0)
    _check_patterns(c, safety.get("confirmed", []), "safety.confirmed")
    _check_patterns(c, safety.get("waived", []), "safety.waived")


def _check_policy(c: _Checker, policy: dict[str, Any]) -> None:
    """Compiles the policy when the analyzer is importable, mapping its error paths under ours."""
    try:
        from safety.analyzer import Policy
    except ImportError:
        if not isinstance(policy.get("rules"), list):
            c.add("safety.policy.rules", "must be a list")
        return
    try:
        Policy.from_dict(policy)
    except ValueError as exc:  # PolicyError is a ValueError with .errors
        errors = getattr(exc, "errors", None) or {"policy": [str(exc)]}
        for path, messages in errors.items():
            for message in messages:
                c.add(f"safety.policy.{path}", message)


def _check_behaviors(c: _Checker, raw: Any) -> None:
    if not isinstance(raw, list):
        c.add("behaviors", "must be a list")
        return
    seen: set[str] = set()
    for i, beh in enumerate(raw):
        p = f"behaviors[{i}]"
        beh = c.obj(beh, p)
        c.known(beh, p, ("slug", "name", "polarity", "weight", "max_steps", "detector"))
        slug = beh.get("slug")
        if not isinstance(slug, str) or not _SLUG_RE.match(slug):
            c.add(f"{p}.slug", "required: lowercase letters, digits and dashes")
        elif slug in seen:
            c.add(f"{p}.slug", f"duplicate behaviour slug {slug!r}")
        else:
            seen.add(slug)
        if not isinstance(beh.get("name", ""), str):
            c.add(f"{p}.name", "must be a string")
        if beh.get("polarity") not in POLARITIES:
            c.add(f"{p}.polarity", f"must be one of {', '.join(POLARITIES)}")
        c.number(beh.get("weight"), f"{p}.weight", lo=0.0, hi=100.0)
        max_steps = beh.get("max_steps")
        if max_steps is not None and (
            not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1
        ):
            c.add(f"{p}.max_steps", "must be a positive integer or null")
        detector = beh.get("detector")
        if detector is None:
            continue
        detector = c.obj(detector, f"{p}.detector")
        kind = detector.get("kind")
        if not isinstance(kind, str) or kind not in DETECTOR_PARAMS:
            c.add(f"{p}.detector.kind", f"must be one of {', '.join(DETECTOR_PARAMS)}")
            continue
        required, optional = DETECTOR_PARAMS[kind]
        c.known(detector, f"{p}.detector", ("kind", *required, *optional))
        for param in required:
            if param not in detector:
                c.add(f"{p}.detector.{param}", "this field is required")
        for param in _REGEX_PARAMS:
            if param in detector:
                c.regex(detector[param], f"{p}.detector.{param}")
