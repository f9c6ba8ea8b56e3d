"""Specs: validation errors naming paths, digests, the default spec, the per-process registry."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring_helpers import ANALYZER_ERROR, plain_spec, trajectory

from core.canonical import normalize_trajectory
from rewards.scoring import (
    SCHEMA,
    SpecError,
    build_scorer,
    clear_scorer_cache,
    default_spec,
    get_scorer,
    spec_digest,
    validate_spec,
)
from rewards.scoring import scorer as scorer_module

ROOT = Path(__file__).resolve().parents[2]
needs_analyzer = pytest.mark.skipif(bool(ANALYZER_ERROR), reason=ANALYZER_ERROR or "available")


def errors_of(spec: object, **kwargs: bool) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as info:
        validate_spec(spec, **kwargs)
    return info.value.errors


def test_plain_spec_is_valid_and_versioned() -> None:
    spec = plain_spec()
    validate_spec(spec)
    assert spec["schema"] == SCHEMA == "rewardhub.reward/1"


@needs_analyzer
def test_default_spec_uses_the_default_policy_and_is_valid() -> None:
    from safety.analyzer import load_default_policy

    spec = default_spec()
    validate_spec(spec)
    assert spec["safety"]["policy"] == load_default_policy().to_dict()
    assert spec["task_type"]["slug"] == "swe-bugfix"
    assert json.loads(json.dumps(spec)) == spec  # plain JSON


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda s: s.update(schema="rewardhub.reward/0"), "schema"),
        (lambda s: s.pop("gates"), "gates"),
        (lambda s: s.update(extra=1), "extra"),
        (lambda s: s["task_type"].update(slug="Bad Slug"), "task_type.slug"),
        (lambda s: s["task_type"]["outcome"].update(mode="vibes"), "task_type.outcome.mode"),
        (
            lambda s: s["task_type"].update(outcome={"mode": "score", "range": [1, 0]}),
            "task_type.outcome.range",
        ),
        (lambda s: s["task_type"].update(shell_tools=[]), "task_type.shell_tools"),
        (lambda s: s["task_type"].update(workspace_roots=["rel"]), "task_type.workspace_roots[0]"),
        (lambda s: s["task_type"].update(text_format="xml"), "task_type.text_format"),
        (lambda s: s["safety"]["penalties"].update(high=0.5), "safety.penalties.high"),
        (lambda s: s["safety"]["penalties"].pop("low"), "safety.penalties.low"),
        (lambda s: s["safety"].update(confirmed_multiplier=0.5), "safety.confirmed_multiplier"),
        (
            lambda s: s["safety"].update(
                confirmed=[{"rule": "x", "match": "glob", "pattern": "a"}]
            ),
            "safety.confirmed[0].match",
        ),
        (
            lambda s: s["safety"].update(waived=[{"rule": "x", "match": "regex", "pattern": "("}]),
            "safety.waived[0].pattern",
        ),
        (lambda s: s["safety"].update(policy=[]), "safety.policy"),
        (lambda s: s["gates"].update(vibes={"cap": 0}), "gates.vibes"),
        (lambda s: s["gates"].update(blocking_finding={"cap": 2}), "gates.blocking_finding.cap"),
        (
            lambda s: s["gates"].update(test_tampering={"cap": 0, "min_severity": "huge"}),
            "gates.test_tampering.min_severity",
        ),
        (lambda s: s["process"].update(step_min=0.5), "process.step_min"),
        (lambda s: s["process"].update(total_max=float("nan")), "process.total_max"),
        (lambda s: s.update(outcome_weight=-1), "outcome_weight"),
        (lambda s: s.update(learned=[{"slug": "m", "kind": ""}]), "learned[0].kind"),
    ],
)
def test_validate_spec_names_the_offending_path(mutate: object, path: str) -> None:
    spec = plain_spec()
    mutate(spec)  # type: ignore[operator]
    assert path in errors_of(spec)


def test_behaviour_errors_name_their_index() -> None:
    good = {"slug": "ok", "name": "ok", "polarity": "trusted", "weight": 0.1, "detector": None}
    spec = plain_spec(
        behaviors=[
            good,
            {**good, "slug": "ok"},
            {**good, "slug": "r", "detector": {"kind": "command_matches"}},
            {**good, "slug": "s", "detector": {"kind": "command_matches", "regex": "("}},
            {**good, "slug": "t", "detector": {"kind": "telepathy"}},
            {**good, "slug": "u", "polarity": "meh", "weight": -1, "max_steps": 0},
            {**good, "slug": "v", "detector": {"kind": "ran_tests", "regex": "x"}},
        ]
    )
    errors = errors_of(spec)
    assert "behaviors[1].slug" in errors
    assert "behaviors[2].detector.regex" in errors
    assert "behaviors[3].detector.regex" in errors
    assert "behaviors[4].detector.kind" in errors
    assert {"behaviors[5].polarity", "behaviors[5].weight", "behaviors[5].max_steps"} <= set(errors)
    assert "behaviors[6].detector.regex" in errors


def test_non_object_spec_and_error_message() -> None:
    assert errors_of([]) == {"spec": ["must be an object"]}
    spec = plain_spec(outcome_weight="x", process={})
    with pytest.raises(SpecError, match=r"more\)"):
        validate_spec(spec)


@needs_analyzer
def test_policy_errors_are_reported_under_safety_policy() -> None:
    spec = plain_spec()
    spec["safety"]["policy"] = {"slug": "p", "version": 1, "resolution": {}, "rules": [{"id": "x"}]}
    errors = errors_of(spec)
    assert any(p.startswith("safety.policy.rules[0]") for p in errors)


def test_build_scorer_validates() -> None:
    with pytest.raises(SpecError):
        build_scorer(plain_spec(outcome_weight=-3))


def test_digest_is_canonical() -> None:
    spec = plain_spec()
    reordered = json.loads(json.dumps(spec, sort_keys=True))
    reordered = dict(reversed(list(reordered.items())))
    assert spec_digest(spec) == spec_digest(reordered)
    assert spec_digest(spec).startswith("sha256:") and len(spec_digest(spec)) == 71
    changed = copy.deepcopy(spec)
    changed["outcome_weight"] = 0.5
    assert spec_digest(changed) != spec_digest(spec)


def test_get_scorer_caches_by_digest_in_a_bounded_lru(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_scorer_cache()
    spec = plain_spec()
    first = get_scorer(spec)
    assert get_scorer(json.loads(json.dumps(spec))) is first
    assert first.digest == spec_digest(spec)
    other = get_scorer(plain_spec(outcome_weight=0.5))
    assert other is not first
    assert get_scorer(spec, digest=first.digest) is first

    monkeypatch.setattr(scorer_module.scorers, "maxsize", 2)
    third = get_scorer(plain_spec(outcome_weight=0.25))
    assert third is not first
    assert get_scorer(spec) is first  # used most recently, kept
    assert get_scorer(plain_spec(outcome_weight=0.5)) is not other  # least recent, evicted
    clear_scorer_cache()


def test_get_scorer_keeps_a_spec_with_and_without_a_learned_hook_apart() -> None:
    clear_scorer_cache()
    spec = plain_spec(learned=[{"slug": "minilm", "kind": "step-classifier", "weight": 0.1}])

    def hook(component: Any, steps: Any) -> list[float]:
        return [0.0] * len(steps)

    plain = get_scorer(spec)
    learned = get_scorer(spec, learned=hook)
    assert learned is not plain and learned.digest == plain.digest
    assert get_scorer(spec, learned=hook) is learned and get_scorer(spec) is plain
    clear_scorer_cache()


@needs_analyzer
def test_scorers_of_one_policy_and_task_type_share_the_registrys_analyzer() -> None:
    """The scorer takes its analyzer from the analyzer's registry, so scorers of specs that
    differ elsewhere share it (and its results); the scorer keeps no command cache itself."""
    from safety.analyzer import AnalyzerConfig, compiled_analyzer

    first = build_scorer(default_spec())
    second = build_scorer({**default_spec(), "outcome_weight": 0.5})
    assert second.analyzer is first.analyzer
    tt = default_spec()["task_type"]
    config = AnalyzerConfig(
        workspace_roots=tuple(tt["workspace_roots"]),
        test_path_patterns=tuple(tt["test_path_patterns"]),
    )
    assert compiled_analyzer(default_spec()["safety"]["policy"], config) is first.analyzer
    # a trajectory naming its workspace is read under it, by the registry's analyzer for it
    rollout = trajectory(["rm -rf ~/", "rm -rf ~/"])
    reading = first.analyzer_for(normalize_trajectory(rollout))
    assert reading is second.analyzer_for(normalize_trajectory(rollout))
    assert reading.config.workspace_roots == ("/testbed",)
    first.cache_clear()
    misses = reading.misses
    first.score(rollout)
    assert (reading.misses - misses, len(reading._cache)) == (1, 1)
    other_roots = {**default_spec(), "task_type": {**tt, "workspace_roots": ["/repo"]}}
    assert build_scorer(other_roots).analyzer is not first.analyzer


def test_scorer_keeps_its_own_copy_of_the_spec() -> None:
    spec = plain_spec()
    scorer = build_scorer(spec)
    spec["outcome_weight"] = 9.0
    assert scorer.spec["outcome_weight"] == 1.0


def test_no_django_import_in_the_scoring_core_or_its_tests() -> None:
    files = [
        *sorted((ROOT / "rewardhub" / "scoring").glob("*.py")),
        *sorted((ROOT / "tests" / "scoring").glob("*.py")),
    ]
    assert len(files) >= 6
    for path in files:
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n == "django" or n.startswith("django.") for n in names), path


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "policy":
                out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, (*prefix, i)))
    return out


BASE = plain_spec(
    behaviors=[
        {"slug": "a", "name": "a", "polarity": "trusted", "weight": 0.1, "detector": None},
        {
            "slug": "b",
            "name": "b",
            "polarity": "untrusted",
            "weight": 0.1,
            "max_steps": 2,
            "detector": {"kind": "command_matches", "regex": "x"},
        },
    ],
    learned=[{"slug": "m", "kind": "k", "weight": 1.0}],
)
BASE["safety"]["confirmed"] = [{"rule": "*", "match": "regex", "pattern": "x"}]
PATHS = [p for p in _paths(BASE) if p]


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), value=json_values)
def test_any_mutated_spec_validates_or_raises_spec_error(path: tuple, value: object) -> None:
    spec = copy.deepcopy(BASE)
    target = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        validate_spec(spec, check_policy=False)
    except SpecError as exc:
        assert exc.errors and all(isinstance(m, str) for ms in exc.errors.values() for m in ms)
        return
    build_scorer(spec, analyzer_factory=lambda *a: None)  # a valid spec always builds
