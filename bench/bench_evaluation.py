"""Evaluation of a 1,000-case set: time against a baseline measured in the same run.

    .venv/bin/python bench/bench_evaluation.py [--cases 1000] [--repeat 2]

The set: the labelled dev commands (tests/data/labelled_commands/dev.jsonl, never the held-out
file), then honest-over-hacked pairs and expert-labelled trajectories from the demo runs (each
copy renamed so it is its own case) up to --cases. The reward: the default spec compiled with
the built-in default policy, through the pure cores the Celery task runs (rewards.evaluation
with rewards.scoring's scorer); no database.

Rows:
- baseline: score every trajectory the evaluation scores (one-step command trajectories, pair
  members, labelled runs), nothing else: the floor the evaluation cannot go under;
- evaluation, cold: a freshly built scorer whose analyzer remembers nothing;
- evaluation, warm: the same scorer again (what a second set or the active version's run costs).
The two evaluations must agree exactly (determinism), or the benchmark fails.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotations.demo_data import demo_trajectories  # noqa: E402
from rewards.evaluation import evaluate_cases, judge_for_scorer, parse_case, parse_jsonl  # noqa: E402
from rewards.evaluation.cases import command_trajectory  # noqa: E402
from rewards.scoring import build_scorer, default_spec  # noqa: E402

DEV = ROOT / "tests" / "data" / "labelled_commands" / "dev.jsonl"
POLICY = ROOT / "safety" / "policies" / "default_policy.json"
PAIRS = (
    ("demo-honest-parser", "demo-hack-delete-test"),
    ("demo-honest-parser", "demo-hack-skip-test"),
    ("demo-honest-slug", "demo-leak-git-history"),
    ("demo-honest-cache", "demo-hack-exit-zero"),
)
LABELS = {"demo-hack-delete-test": [1, -1, 0], "demo-honest-parser": [1, 1, 1, 1]}


def build_cases(total: int) -> list:
    cases, errors = parse_jsonl(DEV.read_text("utf-8"))
    assert not errors, errors[:3]
    demo = {t["id"]: t for t in demo_trajectories()}
    copy_number = 0
    while len(cases) < total:
        copy_number += 1

        def renamed(traj_id: str, n: int = copy_number) -> dict:
            t = copy.deepcopy(demo[traj_id])
            t["id"] = f"{traj_id}-{n}"
            return t

        for better, worse in PAIRS:
            if len(cases) < total:
                pair = {"kind": "pair", "trajectories": [renamed(better), renamed(worse)]}
                cases.append(parse_case(pair))
        for traj_id, labels in LABELS.items():
            if len(cases) < total:
                item = {"kind": "steps", "trajectory": renamed(traj_id), "labels": labels}
                cases.append(parse_case(item))
    return cases[:total]


def trajectories_of(cases: list) -> list[dict]:
    out = []
    for case in cases:
        if case.kind == "command":
            out.append(command_trajectory(case.data["command"]))
        elif case.kind == "pair":
            out.extend(case.data["trajectories"])
        else:
            out.append(case.data["trajectory"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    args = parser.parse_args()
    policy = json.loads(POLICY.read_text("utf-8"))
    spec = default_spec(policy_dict=policy)
    cases = build_cases(args.cases)
    kinds = {k: sum(1 for c in cases if c.kind == k) for k in ("command", "pair", "steps")}
    rows = []

    scorer = build_scorer(spec)
    scorer.cache_clear()
    trajectories = trajectories_of(cases)
    start = time.perf_counter()
    for trajectory in trajectories:
        scorer.score(trajectory)
    rows.append(("baseline: score every trajectory, cold", time.perf_counter() - start))

    scorer = build_scorer(spec)
    scorer.cache_clear()
    start = time.perf_counter()
    cold = evaluate_cases(cases, judge_for_scorer(scorer), total=len(cases))
    rows.append(("evaluation, cold analyzer", time.perf_counter() - start))
    start = time.perf_counter()
    warm = evaluate_cases(cases, judge_for_scorer(scorer), total=len(cases))
    rows.append(("evaluation, warm analyzer", time.perf_counter() - start))
    if json.dumps(cold, sort_keys=True) != json.dumps(warm, sort_keys=True):
        print("FAIL: two evaluations of one reward disagree", file=sys.stderr)
        return 1

    print(
        f"{len(cases)} cases ({kinds['command']} commands, {kinds['pair']} pairs, "
        f"{kinds['steps']} labelled trajectories; {len(trajectories)} trajectories scored)"
    )
    print(f"{'run':42} {'seconds':>8} {'cases/s':>9}")
    for name, seconds in rows:
        print(f"{name:42} {seconds:8.2f} {len(cases) / seconds:9.0f}")
    m = cold
    print(
        f"\nrecall {m['commands']['recall']['rate']} {m['commands']['recall']['ci']}, "
        f"FPR {m['commands']['fpr']['rate']} {m['commands']['fpr']['ci']}, "
        f"pair accuracy {m['pairs']['accuracy']['rate']}, step AUC {m['steps']['auc']} "
        f"{m['steps']['auc_ci']}, kappa {m['steps']['kappa']}"
    )
    worst = max(seconds for _, seconds in rows[1:])
    print(f"\nunder a minute: {'yes' if worst < 60 else 'NO'} (slowest evaluation {worst:.2f} s)")
    return 0 if worst < 60 else 1


if __name__ == "__main__":
    sys.exit(main())
