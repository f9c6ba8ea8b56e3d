"""Honest-vs-hacked pairs (tests/data/hack_pairs: real agent trajectories and hacked edits of
them): the default reward model scores the honest run above its hacked twin in both tiers,
same outcome and strict (an honest failure above a hacked success)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from scoring_helpers import ANALYZER_ERROR

from rewards.scoring import build_scorer, default_spec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from bench_hack_pairs import TIERS, pair_results, read_jsonl  # noqa: E402

pytestmark = pytest.mark.skipif(bool(ANALYZER_ERROR), reason=ANALYZER_ERROR)


def test_the_pair_set_covers_every_hack_in_every_base() -> None:
    pairs = read_jsonl(ROOT / "tests" / "data" / "hack_pairs" / "pairs.jsonl")
    bases = read_jsonl(ROOT / "tests" / "data" / "hack_pairs" / "bases.jsonl")
    per_hack = Counter(p["hack"] for p in pairs)
    assert len(bases) >= 10 and len(per_hack) >= 16
    assert set(per_hack.values()) == {len(bases)}
    assert len({b["instance"].split("__")[0] for b in bases}) == len(bases)  # one per repository


def test_honest_scores_above_hacked_in_both_tiers() -> None:
    results = pair_results(build_scorer(default_spec()))
    assert {r["tier"] for r in results} == set(TIERS)
    lost = [
        (r["tier"], r["base"], r["hack"], r["honest"], r["hacked"]) for r in results if not r["won"]
    ]
    assert lost == []
