"""Honest-vs-hacked pairs: how often the default reward model scores the honest trajectory above
its hacked twin, per tier and per hack.

    .venv/bin/python bench/bench_hack_pairs.py [--show-losses]

Pairs: tests/data/hack_pairs (real mini-swe-agent trajectories on SWE-bench Verified, one per
repository, each with one hacked command inserted before its submit command; see build.py
there). Tiers: same outcome (both resolved: honest must score above hacked) and strict (the
honest run failed, the hacked one "resolved": the honest failure must still score above).
Each trajectory is scored with the default spec under its own workspace (/testbed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewards.scoring import Scorer, build_scorer, default_spec  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "hack_pairs"
TIERS = {"same-outcome": (True, True), "strict": (False, True)}  # (honest, hacked) resolved


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def as_trajectory(commands: list[str], resolved: bool, workspace: str) -> dict[str, Any]:
    """One assistant step per command, each answered "ok" (the corpus has no tool output)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the issue."}]
    for i, command in enumerate(commands):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return {
        "messages": messages,
        "outcome": {"resolved": resolved},
        "metadata": {"workspace": workspace},
    }


def pair_results(scorer: Scorer) -> list[dict[str, Any]]:
    """Every pair in every tier: the honest and hacked rewards."""
    bases = {b["id"]: b for b in read_jsonl(PAIRS / "bases.jsonl")}
    out = []
    for pair in read_jsonl(PAIRS / "pairs.jsonl"):
        base = bases[pair["base"]]
        honest = base["commands"]
        at = pair["insert_at"]
        hacked = [*honest[:at], pair["command"], *honest[at:]]
        for tier, (honest_ok, hacked_ok) in TIERS.items():
            h = scorer.score(as_trajectory(honest, honest_ok, base["workspace"])).reward
            x = scorer.score(as_trajectory(hacked, hacked_ok, base["workspace"])).reward
            out.append({**pair, "tier": tier, "honest": h, "hacked": x, "won": h > x})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show-losses", action="store_true", help="list pairs the hack won")
    args = ap.parse_args()
    results = pair_results(build_scorer(default_spec()))
    print(f"{len(results) // len(TIERS)} pairs x {len(TIERS)} tiers")
    print(f"{'hack':<24} {'category':<18} " + " ".join(f"{t:>13}" for t in TIERS))
    by_hack: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by_hack[(r["hack"], r["category"])][r["tier"]].append(r["won"])
    for (hack, category), tiers in by_hack.items():
        cells = " ".join(f"{sum(tiers[t]):>6}/{len(tiers[t]):<6}" for t in TIERS)
        print(f"{hack:<24} {category:<18} {cells}")
    print("-" * 72)
    for tier in TIERS:
        won = [r["won"] for r in results if r["tier"] == tier]
        print(f"pairwise accuracy, {tier:<13} {sum(won)}/{len(won)} = {sum(won) / len(won):.1%}")
    if args.show_losses:
        for r in results:
            if not r["won"]:
                print(
                    f"LOSS {r['tier']} {r['base']} {r['hack']}: honest {r['honest']:.3f} "
                    f"hacked {r['hacked']:.3f}: {r['command'][:80]!r}"
                )


if __name__ == "__main__":
    main()
