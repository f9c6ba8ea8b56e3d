"""Classifier metrics in plain numpy: ROC AUC, accuracy, calibration error, reliability."""

from __future__ import annotations

from typing import Any

import numpy as np

from rewards.evaluation.metrics import bootstrap_auc, wilson

# Below these counts of held-out steps a ROC AUC or an accuracy says little (1.000 on 9 steps is
# luck as often as skill): the pages show the number with its interval, flagged, and how many
# more labels a trustworthy reading needs.
MIN_HELD_OUT_STEPS = 30
MIN_HELD_OUT_PER_CLASS = 10


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def roc_auc(y_true: np.ndarray, p: np.ndarray) -> float | None:
    """Mann-Whitney AUC: P(score of a random positive > score of a random negative), ties 1/2.

    ``None`` when one class is absent (AUC is undefined)."""
    y = np.asarray(y_true, dtype=bool)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = _ranks(np.asarray(p, dtype=np.float64))
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def accuracy(y_true: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> float | None:
    if len(y_true) == 0:
        return None
    return float(np.mean((np.asarray(p) >= threshold) == np.asarray(y_true, dtype=bool)))


def reliability_table(y_true: np.ndarray, p: np.ndarray, bins: int = 10) -> list[dict[str, Any]]:
    """Equal-width bins of P(trusted): count, mean predicted probability, observed frequency."""
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        sel = idx == b
        n = int(sel.sum())
        rows.append(
            {
                "lo": b / bins,
                "hi": (b + 1) / bins,
                "count": n,
                "mean_p": float(p[sel].mean()) if n else None,
                "observed": float(y[sel].mean()) if n else None,
            }
        )
    return rows


def expected_calibration_error(y_true: np.ndarray, p: np.ndarray, bins: int = 10) -> float | None:
    """Sum over bins of (bin share) * |observed frequency - mean predicted probability|."""
    if len(y_true) == 0:
        return None
    total = len(y_true)
    return float(
        sum(
            row["count"] / total * abs(row["observed"] - row["mean_p"])
            for row in reliability_table(y_true, p, bins)
            if row["count"]
        )
    )


def classifier_metrics(y_true: np.ndarray, p: np.ndarray) -> dict[str, Any]:
    """Held-out metrics with 95% intervals (a seeded bootstrap for the AUC, Wilson for the
    accuracy), so a page can say how sure each number is."""
    y = np.asarray(y_true)
    yb = np.asarray(y, dtype=bool)
    probs = np.asarray(p, dtype=np.float64)
    acc = accuracy(y, p)
    auc_ci = bootstrap_auc(probs[yb].tolist(), probs[~yb].tolist())
    return {
        "n": len(y),
        "positives": int(yb.sum()),
        "auc": roc_auc(y, p),
        "auc_ci": None if auc_ci is None else list(auc_ci),
        "accuracy": acc,
        "accuracy_ci": None if acc is None else list(wilson(round(acc * len(y)), len(y))),
        "ece": expected_calibration_error(y, p),
    }


def labels_needed(n: int, positives: int, held_out_share: float) -> int:
    """About how many more labelled steps (split as training splits them) bring the held-out
    set to MIN_HELD_OUT_STEPS with MIN_HELD_OUT_PER_CLASS of each class, at today's class
    shares; 0 when it is there. A class with no held-out step counts as a 1-in-10 share."""
    negatives = n - positives
    short = max(0, MIN_HELD_OUT_STEPS - n)
    for count in (positives, negatives):
        missing = max(0, MIN_HELD_OUT_PER_CLASS - count)
        if missing:
            share = count / n if n and count else 0.1
            short = max(short, int(np.ceil(missing / share)))
    if short == 0:
        return 0
    return int(np.ceil(short / max(held_out_share, 0.05)))


def uncertainty(p: np.ndarray) -> np.ndarray:
    """1 at P = 0.5 (a coin flip), 0 at P = 0 or 1: how much a label on the step would teach."""
    return 1.0 - np.abs(2.0 * np.asarray(p, dtype=np.float64) - 1.0)


def most_uncertain(p: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` most uncertain predictions, most uncertain first (stable on ties)."""
    return [int(i) for i in np.argsort(-uncertainty(p), kind="stable")[:k]]


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation (Pearson on average ranks); None when either is constant."""
    x, y = _ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64))
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float | None:
    """Kendall's tau-b (ties in either variable accounted for); None when either is constant.

    O(n^2) over pairs: meant for evaluation sets of trajectories, not for millions of rows."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    i, j = np.triu_indices(len(x), k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n_x, n_y = np.count_nonzero(dx), np.count_nonzero(dy)
    if n_x == 0 or n_y == 0:
        return None
    return float((dx * dy).sum() / np.sqrt(float(n_x) * float(n_y)))
