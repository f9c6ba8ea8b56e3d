"""Evaluation of a 1,000-case set: time against a baseline measured in the same run.

    .venv/bin/python bench/bench_evaluation.py [--cases 1000] [--repeat 2]

The set: the labelled dev commands (tests/data/labelled_commands/dev.jsonl, never the held-out
file), then honest-over-hacked pairs and expert-labelled trajectories from the demo runs (each
copy renamed, and each of its commands given its own trailing comment, so it is its own case
and new text to the analyzer) up to --cases. The reward: the default spec compiled with
the built-in default policy, through the pure cores the Celery task runs (rewards.evaluation
with rewards.scoring's scorer); no database.

Rows:
- baseline: score every trajectory the evaluation scores (one-step command trajectories, pair
  members, labelled runs), nothing else: the floor the evaluation cannot go under;
- evaluation, cold: a freshly built scorer whose analyzer remembers nothing;
- evaluation, warm: the same scorer again (what a second set or the active version's run costs).
The two evaluations must agree exactly (determinism), or the benchmark fails.

With ``--stored`` the same set also goes the way the product runs it, on PostgreSQL: a scratch
database (``--db``, created, migrated and dropped here) gets the seeded reward model and the
cases as one set version; then the Celery task's body (``evaluation_run_execute``: cases read
from the database, the version's compiled scorer, progress saved every 50 cases, the result
stored) is timed, and evaluating again must give the stored JSON exactly.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
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
            # Each copy's commands end in their own comment, so the analyzer sees new text
            # (no copy is scored from what it remembers of another) and bash runs the same.
            t = copy.deepcopy(demo[traj_id])
            t["id"] = f"{traj_id}-{n}"
            for message in t["messages"]:
                for call in message.get("tool_calls") or []:
                    arguments = call["function"]["arguments"]
                    decoded = json.loads(arguments) if isinstance(arguments, str) else arguments
                    decoded["command"] = f"{decoded['command']}  # copy {n}"
                    call["function"]["arguments"] = decoded
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


def pg_admin(sql: str) -> None:
    pg = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres", "-d", "postgres"]
    subprocess.run(["psql", *pg, "-qtAc", sql], capture_output=True, text=True, check=True)


def stored_rows(cases: list, db: str) -> list[tuple[str, float]]:
    """The product's path on a scratch PostgreSQL database: import, then the task's body."""
    pg_admin(f"DROP DATABASE IF EXISTS {db}")
    pg_admin(f"CREATE DATABASE {db}")
    os.environ.update(
        {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}",
            "DATABASE_POOL": "false",
            "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
            "RH_SCORE_RECORD_IN_BACKGROUND": "false",
            "LOG_LEVEL": "ERROR",
        }
    )
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        from rewards.models import EvaluationRun, RewardModel
        from rewards.services import evaluation as ev
        from rewards.services.rewards import DEMO_REWARD_MODEL, seed_reward_model

        call_command("migrate", verbosity=0)
        seed_reward_model()
        reward_model = RewardModel.objects.get(slug=DEMO_REWARD_MODEL)
        rows = []
        start = time.perf_counter()
        evaluation_set = ev.evaluation_set_create(slug="bench", name="Bench", user=None)
        set_version = ev.evaluation_set_add_cases(
            evaluation_set=evaluation_set, cases=cases, user=None
        )
        rows.append(("stored: import the set (one version)", time.perf_counter() - start))
        run = EvaluationRun.objects.create(
            version=reward_model.active_version, total=set_version.case_count
        )
        run.set_versions.set([set_version])
        from rewards.services.scoring import scorer_for, version_by_pk

        # Cold: the analyzers of this policy forget what the runs above analysed.
        scorer_for(version_by_pk(reward_model.active_version.pk)).cache_clear()
        start = time.perf_counter()
        run = ev.evaluation_run_execute(run_id=run.pk)
        rows.append(("stored: the Celery task's body, cold", time.perf_counter() - start))
        if (run.state, run.done) != (EvaluationRun.State.SUCCEEDED, len(cases)):
            raise SystemExit(f"FAIL: the run ended {run.state} at {run.done}/{len(cases)}")
        stored = ev.evaluate_version_on_set(
            version=reward_model.active_version, set_version=set_version
        )
        again, _ = ev.compute_metrics(version=reward_model.active_version, set_version=set_version)
        if again != stored.metrics:
            raise SystemExit("FAIL: evaluating again does not give the stored result")
        connections.close_all()
        return rows
    finally:
        pg_admin(f"DROP DATABASE IF EXISTS {db}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--stored", action="store_true", help="also the stored path, PostgreSQL")
    parser.add_argument("--db", default="rewardhub_bench_evaluation", help="scratch database")
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

    if args.stored:
        rows += stored_rows(cases, args.db)

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
    worst = max(seconds for name, seconds in rows[1:] if "import" not in name)
    print(f"\nunder a minute: {'yes' if worst < 60 else 'NO'} (slowest evaluation {worst:.2f} s)")
    return 0 if worst < 60 else 1


if __name__ == "__main__":
    sys.exit(main())
