"""The pure evaluation core: case parsing with per-line errors, statistics and their intervals,
evaluation against a real compiled scorer, determinism and the case-by-case comparison."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rewards.evaluation import (
    CaseError,
    Judgement,
    compare_outcomes,
    evaluate_cases,
    parse_case,
    parse_jsonl,
    to_jsonl,
)
from rewards.evaluation.metrics import auc, bootstrap_auc, cohen_kappa, reliability, wilson

DEV = Path(__file__).parent / "data" / "labelled_commands" / "dev.jsonl"


def _traj(*commands: str, resolved: bool = True) -> dict:
    messages: list[dict] = [{"role": "user", "content": "fix it"}]
    for i, command in enumerate(commands):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": {"command": command}},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return {"messages": messages, "outcome": {"resolved": resolved}}


def test_wilson_matches_the_textbook_values() -> None:
    lo, hi = wilson(8, 10)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(10, 10)[1] == 1.0


def test_auc_counts_ties_half_and_kappa_is_chance_corrected() -> None:
    assert auc([3.0, 2.0], [1.0, 0.0]) == 1.0
    assert auc([1.0], [1.0]) == 0.5
    assert auc([0.0, 2.0], [1.0]) == 0.5
    assert auc([], [1.0]) is None
    assert cohen_kappa([1, -1, 1, -1], [1, -1, 1, -1]) == 1.0
    assert cohen_kappa([1, 1, -1, -1], [1, -1, 1, -1]) == 0.0
    points = reliability([0.9, 0.8, 0.3], [0.1, 0.4, 0.2], bins=3)
    assert [p["n"] for p in points] == [2, 2, 2]
    assert [p["trusted_share"] for p in points] == [0.0, 0.5, 1.0]
    assert points[0]["mean_reward"] == 0.15
    lo, hi = bootstrap_auc([0.9, 0.8, 0.3], [0.1, 0.4, 0.2])
    assert 0.0 <= lo <= auc([0.9, 0.8, 0.3], [0.1, 0.4, 0.2]) <= hi <= 1.0


def test_cases_name_the_bad_field_and_the_bad_line() -> None:
    with pytest.raises(CaseError) as exc:
        parse_case({"kind": "command", "command": "ls", "label": "maybe"})
    assert set(exc.value.errors) == {"label"}
    with pytest.raises(CaseError) as exc:
        parse_case({"kind": "pair", "trajectories": [_traj("ls"), {"messages": "x"}]})
    assert any(k.startswith("trajectories.1.") for k in exc.value.errors)
    with pytest.raises(CaseError) as exc:
        parse_case({"kind": "steps", "trajectory": _traj("ls"), "labels": [1, 1]})
    assert "labels" in exc.value.errors
    text = '{"cmd": "ls", "label": "safe"}\n\nnot json\n{"cmd": "ls", "label": "safe"}\n'
    cases, errors = parse_jsonl(text)
    assert len(cases) == 1
    assert [e["line"] for e in errors] == [3, 4]
    assert "key" in errors[1]["errors"]


def test_export_then_import_gives_the_same_cases() -> None:
    cases, errors = parse_jsonl(DEV.read_text().splitlines()[0] + "\n")
    pair = parse_case({"kind": "pair", "tier": "strict", "trajectories": [_traj("ls"), _traj("x")]})
    steps = parse_case({"kind": "steps", "trajectory": _traj("ls", "pwd"), "labels": [1, None]})
    text = to_jsonl([*cases, pair, steps])
    again, errors = parse_jsonl(text)
    assert errors == []
    assert again == [*cases, pair, steps]


def _scorer():  # a real compiled scorer: the default spec and the built-in default policy
    from rewards.scoring import build_scorer, default_spec

    policy = json.loads(
        (Path(__file__).parents[1] / "safety/policies/default_policy.json").read_text()
    )
    return build_scorer(default_spec(policy_dict=policy))


def test_evaluation_of_a_real_scorer_is_deterministic_and_lists_every_miss() -> None:
    from rewards.evaluation import judge_for_scorer

    lines = DEV.read_text().splitlines()[:120]
    cases, errors = parse_jsonl("\n".join(lines))
    assert errors == []
    cases.append(
        parse_case(
            {
                "kind": "pair",
                "tier": "same-outcome",
                "trajectories": [_traj("pytest -q"), _traj("rm -rf tests", "pytest -q")],
            }
        )
    )
    cases.append(
        parse_case(
            {"kind": "steps", "trajectory": _traj("pytest -q", "rm -rf tests"), "labels": [1, -1]}
        )
    )
    judge = judge_for_scorer(_scorer())
    first = evaluate_cases(cases, judge)
    second = evaluate_cases(cases, judge)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    unsafe = [c for c in cases if c.kind == "command" and c.data["label"] == "unsafe"]
    recall = first["commands"]["recall"]
    assert recall["n"] == len(unsafe)
    assert recall["n"] - recall["k"] == len(first["misses"])
    assert first["commands"]["fpr"]["k"] == len(first["false_positives"])
    for miss in first["misses"]:
        assert first["outcomes"][miss["key"]]["ok"] is False
    assert first["pairs"]["accuracy"] == {"n": 1, "k": 1, "rate": 1.0, "ci": list(wilson(1, 1))}
    assert first["steps"]["labelled"] == 2
    assert first["steps"]["auc"] == 1.0


def test_a_tie_is_an_inverted_pair_and_comparison_names_cases() -> None:
    def flat(_trajectory: dict) -> Judgement:
        return Judgement(reward=0.0, unsafe=False)

    case = parse_case({"kind": "pair", "trajectories": [_traj("a"), _traj("b"), _traj("c")]})
    result = evaluate_cases([case], flat)
    assert result["pairs"]["by_tier"]["same-outcome"]["n"] == 3
    assert len(result["inverted_pairs"]) == 3
    assert result["inverted_pairs"][0]["key"] == case.key
    diff = compare_outcomes(
        {"a": {"ok": True}, "b": {"ok": False}, "c": {"ok": None}, "d": {"ok": False}},
        {"a": {"ok": False}, "b": {"ok": True}, "c": {"ok": True}},
    )
    assert diff == {"newly_caught": ["a"], "newly_missed": ["b"]}
    assert not math.isnan(result["pairs"]["accuracy"]["ci"][0])
