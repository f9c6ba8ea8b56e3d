"""Statistics of an evaluation, each with a confidence interval: Wilson intervals for
proportions, a seeded bootstrap for AUC and kappa (so two runs agree to the last digit).

Pure Python, no Django."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

Z95 = 1.959963984540054
BOOTSTRAP_SAMPLES = 400
BOOTSTRAP_SEED = 20240524

Interval = tuple[float, float]


def wilson(successes: int, total: int, z: float = Z95) -> Interval:
    """The Wilson score interval of ``successes / total`` ((0, 1) when total is 0)."""
    if total <= 0:
        return (0.0, 1.0)
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6))


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney); None when
    either side is empty."""
    if not positives or not negatives:
        return None
    ranked = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum = 0.0
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # average 1-based rank of the tie block
        rank_sum += mid * sum(flag for _, flag in ranked[i:j])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters over the same items (None with no items; 1.0 when both
    always agree on a single category)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    categories = set(a) | set(b)
    expected = sum((a.count(c) / n) * (b.count(c) / n) for c in categories)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def _percentile_interval(values: list[float]) -> Interval | None:
    if not values:
        return None
    values.sort()
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[math.ceil(0.975 * (len(values) - 1))]
    return (round(lo, 6), round(hi, 6))


def bootstrap_auc(
    positives: Sequence[float],
    negatives: Sequence[float],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval | None:
    """95% interval of the AUC, resampling positives and negatives apart with a fixed seed."""
    if not positives or not negatives:
        return None
    rng = random.Random(seed)  # noqa: S311 - a reproducible resample, not a secret
    draws: list[float] = []
    for _ in range(samples):
        pos = [positives[rng.randrange(len(positives))] for _ in positives]
        neg = [negatives[rng.randrange(len(negatives))] for _ in negatives]
        value = auc(pos, neg)
        if value is not None:
            draws.append(value)
    return _percentile_interval(draws)


def bootstrap_paired(
    a: Sequence[int],
    b: Sequence[int],
    statistic: Callable[[Sequence[int], Sequence[int]], float | None],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval | None:
    """95% interval of a paired statistic (kappa), resampling items with a fixed seed."""
    n = len(a)
    if n == 0:
        return None
    rng = random.Random(seed)  # noqa: S311 - a reproducible resample, not a secret
    draws: list[float] = []
    for _ in range(samples):
        picks = [rng.randrange(n) for _ in range(n)]
        value = statistic([a[i] for i in picks], [b[i] for i in picks])
        if value is not None:
            draws.append(value)
    return _percentile_interval(draws)


def proportion(successes: int, total: int) -> dict[str, object]:
    """``{"n", "k", "rate", "ci"}`` of one proportion (rate None when n is 0)."""
    return {
        "n": total,
        "k": successes,
        "rate": round(successes / total, 6) if total else None,
        "ci": list(wilson(successes, total)),
    }


def reliability(
    positives: Sequence[float], negatives: Sequence[float], bins: int = 5
) -> list[dict[str, float | int]]:
    """Steps sorted by reward into up to ``bins`` groups of equal size: each group's mean
    reward and the share of its steps experts labelled +1 (a reliability plot's points)."""
    steps = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    if not steps:
        return []
    count = min(bins, len(steps))
    out: list[dict[str, float | int]] = []
    for i in range(count):
        chunk = steps[i * len(steps) // count : (i + 1) * len(steps) // count]
        out.append(
            {
                "n": len(chunk),
                "mean_reward": round(sum(v for v, _ in chunk) / len(chunk), 6),
                "trusted_share": round(sum(flag for _, flag in chunk) / len(chunk), 6),
            }
        )
    return out
