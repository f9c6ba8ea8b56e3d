"""Honest numbers (#23.11) in real Chromium on PostgreSQL: a classifier measured on 9 held-out
steps shows its accuracy with a 95% interval, a warning that it is too few to trust and how
many more labels a reading needs; one measured on enough steps shows its intervals only."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from rewards.learned.metrics import classifier_metrics, labels_needed
from rewards.models import LearnedComponent, TaskType
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def component(task_type: TaskType, n: int, train: int, name: str) -> LearnedComponent:
    """A component row whose metrics are what training computes on ``n`` held-out steps that
    the classifier separates perfectly (the issue's AUC 1.000)."""
    y = np.array([i % 3 != 0 for i in range(n)], dtype=np.float64)
    p = np.where(y > 0, 0.9, 0.1)
    overall = classifier_metrics(y, p)
    metrics = {
        "targets": {"overall": overall},
        "auc": overall["auc"],
        "accuracy": overall["accuracy"],
        "ece": overall["ece"],
        "train_steps": train,
        "val_steps": n,
        "val_trajectories": 3,
        "trajectories": 16,
        "reliability": [],
    }
    return LearnedComponent.objects.create(
        task_type=task_type,
        digest=f"sha256:{name:0<64}",
        artifact_path=f"learned/{name}",
        metrics=metrics,
        label_snapshot_digest=f"sha256:{name:1<64}",
    )


def test_few_held_out_labels_are_flagged_with_intervals_and_labels_needed(
    browser_page, live_server, reward_model, expert
) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    task_type = reward_model.task_type
    small = component(task_type, 9, 39, "small")
    login(page, live_server, expert.username)

    page.goto(f"{live_server.url}/rewards/learned/{small.pk}/")
    expect(page.locator("#metric-auc")).to_have_text("1.000")
    # A perfect separation on 9 steps has a point bootstrap interval: not shown as if it meant
    # something; the warning says why instead.
    expect(page.locator("#metric-auc-ci")).to_have_count(0)
    lo, hi = small.metrics["targets"]["overall"]["accuracy_ci"]
    assert hi == 1.0 and lo < 0.71  # 9 of 9 right is still consistent with 70%
    expect(page.locator("#metric-accuracy-ci")).to_have_text(f"95% interval {lo:.3f}–{hi:.3f}")
    warning = page.locator("#metric-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Too few held-out labels")
    expect(warning).to_contain_text("9 held-out steps (6 trusted, 3 not)")
    need = labels_needed(9, 6, 9 / 48)
    assert need > 0
    expect(page.locator("#labels-needed")).to_have_text(str(need))

    page.goto(f"{live_server.url}/rewards/task-types/{task_type.slug}/learned/")
    expect(page.locator("tr.learned-component .too-few")).to_contain_text(f"label about {need}")
    page.goto(f"{live_server.url}/rewards/learned/")
    expect(page.locator(".learned-overview .too-few")).to_be_visible()

    # Enough held-out steps of each class: the intervals, and no warning.
    enough = component(task_type, 90, 300, "enough")
    page.goto(f"{live_server.url}/rewards/learned/{enough.pk}/")
    expect(page.locator("#metric-auc-ci")).to_contain_text("95% interval")
    expect(page.locator("#metric-warning")).to_have_count(0)
    page.goto(f"{live_server.url}/rewards/task-types/{task_type.slug}/learned/")
    expect(page.locator(f'tr[data-digest="{enough.digest}"] .too-few')).to_have_count(0)
    expect(page.locator("tr.learned-component .too-few")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
