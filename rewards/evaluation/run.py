"""Evaluate a reward against cases, and compare two evaluations case by case.

Pure: the reward is a ``Judge`` (a trajectory in, a ``Judgement`` out), built from a compiled
scorer by ``judge_for_scorer``, so the Django shell, the command and the benchmark run exactly
this. Output is plain JSON with sorted lists, so two runs of one version agree byte for byte.

Metrics per set:
- labelled commands: recall per category of the unsafe ones, false-positive rate per category
  of the safe ones; a command is caught when its one-step trajectory is scored unsafe;
- pairs and groups: pairwise accuracy per tier, every ordered pair counted; a tie is a loss
  (the reward did not put the better trajectory above);
- expert step labels: AUC of step rewards for steps labelled +1 against -1, and Cohen's kappa
  of the sign of each labelled step's reward against its label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cases import Case, command_trajectory
from .metrics import auc, bootstrap_auc, bootstrap_paired, cohen_kappa, proportion, reliability

# Kinds whose cases pass or fail one by one, and so can regress: the gate reads these.
GATING_KINDS = ("command", "pair")


@dataclass(frozen=True)
class Judgement:
    """What a reward made of one trajectory."""

    reward: float
    unsafe: bool
    step_rewards: Mapping[int, float] = field(default_factory=dict)
    rules: tuple[str, ...] = ()


Judge = Callable[[dict[str, Any]], Judgement]
Progress = Callable[[int, int], None]


class _StepLike(Protocol):
    @property
    def step(self) -> int: ...
    @property
    def value(self) -> float: ...
    @property
    def findings(self) -> tuple[dict[str, Any], ...]: ...


class _ResultLike(Protocol):
    @property
    def reward(self) -> float: ...
    @property
    def unsafe(self) -> bool: ...
    @property
    def steps(self) -> Sequence[_StepLike]: ...


class _ScorerLike(Protocol):
    def score(self, trajectory: object) -> _ResultLike: ...


def judge_for_scorer(
    scorer: _ScorerLike, prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> Judge:
    """A judge from a compiled scorer (``rewards.scoring.Scorer``); ``prepare`` reads actions
    written as text first (``rewards.scoring.with_text_actions``)."""

    def judge(trajectory: dict[str, Any]) -> Judgement:
        result = scorer.score(prepare(trajectory) if prepare else trajectory)
        rules = sorted({str(f.get("rule", "")) for s in result.steps for f in s.findings})
        return Judgement(
            reward=result.reward,
            unsafe=bool(result.unsafe),
            step_rewards={s.step: s.value for s in result.steps},
            rules=tuple(rules),
        )

    return judge


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


@dataclass
class _Tally:
    caught: dict[str, list[int]] = field(default_factory=dict)  # category -> [k, n] unsafe
    flagged: dict[str, list[int]] = field(default_factory=dict)  # category -> [k, n] safe
    pairs: dict[str, list[int]] = field(default_factory=dict)  # tier -> [correct, n]
    positives: list[float] = field(default_factory=list)
    negatives: list[float] = field(default_factory=list)
    label_signs: list[int] = field(default_factory=list)
    reward_signs: list[int] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)
    false_positives: list[dict[str, Any]] = field(default_factory=list)
    inverted_pairs: list[dict[str, Any]] = field(default_factory=list)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)


def _command(case: Case, judge: Judge, shell_tool: str, tally: _Tally) -> None:
    verdict = judge(command_trajectory(case.data["command"], shell_tool))
    category = case.data["category"] or "uncategorised"
    unsafe = case.data["label"] == "unsafe"
    counts = (tally.caught if unsafe else tally.flagged).setdefault(category, [0, 0])
    counts[0] += int(verdict.unsafe)
    counts[1] += 1
    ok = verdict.unsafe == unsafe
    entry = {
        "key": case.key,
        "category": category,
        "label": case.data["label"],
        "rules": list(verdict.rules),
    }
    if not ok:
        (tally.misses if unsafe else tally.false_positives).append(entry)
    tally.cases[case.key] = {"kind": "command", "ok": ok, "flagged": verdict.unsafe}


def _pair(case: Case, judge: Judge, tally: _Tally) -> None:
    rewards = [judge(t).reward for t in case.data["trajectories"]]
    tier = case.data["tier"]
    counts = tally.pairs.setdefault(tier, [0, 0])
    inverted: list[list[int]] = []
    for i in range(len(rewards)):
        for j in range(i + 1, len(rewards)):
            counts[1] += 1
            if rewards[i] > rewards[j]:
                counts[0] += 1
            else:
                inverted.append([i, j])
    for i, j in inverted:
        tally.inverted_pairs.append(
            {
                "key": case.key,
                "tier": tier,
                "better": i,
                "worse": j,
                "rewards": [rewards[i], rewards[j]],
            }
        )
    tally.cases[case.key] = {"kind": "pair", "ok": not inverted, "rewards": rewards}


def _steps(case: Case, judge: Judge, tally: _Tally) -> None:
    verdict = judge(case.data["trajectory"])
    agree = total = 0
    for index, label in enumerate(case.data["labels"]):
        if label is None or index not in verdict.step_rewards:
            continue
        reward = verdict.step_rewards[index]
        if label == 1:
            tally.positives.append(reward)
        elif label == -1:
            tally.negatives.append(reward)
        tally.label_signs.append(label)
        tally.reward_signs.append(_sign(reward))
        total += 1
        agree += int(_sign(reward) == label)
    tally.cases[case.key] = {"kind": "steps", "ok": None, "agree": agree, "labelled": total}


def _rates(counts: Mapping[str, list[int]]) -> dict[str, Any]:
    return {name: proportion(k, n) for name, (k, n) in sorted(counts.items())}


def _total(counts: Mapping[str, list[int]]) -> dict[str, object]:
    return proportion(sum(k for k, _ in counts.values()), sum(n for _, n in counts.values()))


def _listed(interval: tuple[float, float] | None) -> list[float] | None:
    """Intervals as JSON lists, so a result compares equal before and after it is stored."""
    return None if interval is None else list(interval)


def _kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    return cohen_kappa(a, b)


def evaluate_cases(
    cases: Iterable[Case],
    judge: Judge,
    *,
    shell_tool: str = "bash",
    progress: Progress | None = None,
    total: int = 0,
) -> dict[str, Any]:
    """Evaluate every case with ``judge``; returns the metrics, the per-case outcomes and the
    list of every miss, false positive and inverted pair (each naming its case key)."""
    tally = _Tally()
    done = 0
    for case in cases:
        if case.kind == "command":
            _command(case, judge, shell_tool, tally)
        elif case.kind == "pair":
            _pair(case, judge, tally)
        else:
            _steps(case, judge, tally)
        done += 1
        if progress is not None:
            progress(done, total)
    value = auc(tally.positives, tally.negatives)
    kappa = _kappa(tally.label_signs, tally.reward_signs)
    return {
        "cases": done,
        "commands": {
            "recall": _total(tally.caught),
            "fpr": _total(tally.flagged),
            "recall_by_category": _rates(tally.caught),
            "fpr_by_category": _rates(tally.flagged),
        },
        "pairs": {"accuracy": _total(tally.pairs), "by_tier": _rates(tally.pairs)},
        "steps": {
            "labelled": len(tally.label_signs),
            "auc": None if value is None else round(value, 6),
            "auc_ci": _listed(bootstrap_auc(tally.positives, tally.negatives)),
            "kappa": None if kappa is None else round(kappa, 6),
            "reliability": reliability(tally.positives, tally.negatives),
            "kappa_ci": _listed(bootstrap_paired(tally.label_signs, tally.reward_signs, _kappa)),
        },
        "misses": sorted(tally.misses, key=lambda e: str(e["key"])),
        "false_positives": sorted(tally.false_positives, key=lambda e: str(e["key"])),
        "inverted_pairs": sorted(
            tally.inverted_pairs, key=lambda e: (str(e["key"]), e["better"], e["worse"])
        ),
        "outcomes": dict(sorted(tally.cases.items())),
    }


def compare_outcomes(
    candidate: Mapping[str, Mapping[str, Any]], baseline: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Case by case: what the candidate newly gets right (``newly_caught``) and newly gets
    wrong (``newly_missed``) against the baseline, over the cases both evaluated."""
    caught: list[str] = []
    missed: list[str] = []
    for key in sorted(set(candidate) & set(baseline)):
        now, before = candidate[key].get("ok"), baseline[key].get("ok")
        if now is None or before is None or now == before:
            continue
        (caught if now else missed).append(key)
    return {"newly_caught": caught, "newly_missed": missed}
