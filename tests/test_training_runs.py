"""Training runs reported by trainers: bounded configs and metrics, lists without bodies
(issue #22, items 11 and 13)."""

from __future__ import annotations

from typing import Any

import pytest

from rewards.models import TrainingMetric, TrainingRun

pytestmark = pytest.mark.django_db
RUNS = "/api/v1/training-runs/"


def test_a_config_over_the_limit_is_400_naming_config(key_client, settings) -> None:  # type: ignore[no-untyped-def]
    limit = settings.REWARDHUB_LIMITS["MAX_RUN_CONFIG_BYTES"]
    client = key_client("score")
    big = {"name": "big", "config": {"blob": "x" * limit}}
    response = client.post(RUNS, big, format="json")
    assert response.status_code == 400
    assert f"over the limit of {limit} bytes" in response.json()["errors"]["config"][0]
    assert not TrainingRun.objects.exists()
    small = {"name": "small", "config": {"lr": 1e-6, "notes": "x" * 1000}}
    assert client.post(RUNS, small, format="json").status_code == 201


def test_the_list_has_no_configs_the_detail_has(key_client) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score,read")
    for i in range(3):
        body = {"name": f"run-{i}", "config": {"lr": i, "layers": list(range(50))}}
        assert client.post(RUNS, body, format="json").status_code == 201
    listed = client.get(RUNS).json()["results"]
    assert len(listed) == 3 and not [r for r in listed if "config" in r]
    detail = client.get(f"{RUNS}run-1/").json()
    assert detail["config"]["lr"] == 1 and detail["steps"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"step": 10**30, "metrics": {"loss": 1.0}}, "step"),
        ({"step": 2**31, "metrics": {"loss": 1.0}}, "step"),
        ({"step": 1, "metrics": {"loss": 10**400}}, "metrics.loss"),
        ({"step": 1, "metrics": {"loss": -(10**400)}}, "metrics.loss"),
        ({"step": 1, "metrics": {f"m{i}": 1 for i in range(201)}}, "metrics"),
        ({"step": 1, "metrics": {"x" * 101: 1}}, None),
        ({"step": 1, "metrics": [1, 2]}, "metrics"),
    ],
)
def test_bad_metrics_are_400_naming_the_field(key_client, body: dict[str, Any], field) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score")
    assert client.post(RUNS, {"name": "r"}, format="json").status_code == 201
    response = client.post(f"{RUNS}r/metrics/", body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors if field else len(errors) == 1, errors
    assert not TrainingMetric.objects.exists()


def test_the_detail_gives_the_metric_series_in_pages(key_client, settings) -> None:  # type: ignore[no-untyped-def]
    """A long run's whole series in one answer (a step a second for a day: 86,400 rows of up
    to RH_MAX_RUN_METRICS numbers each) is the list's old hazard again: pages of steps."""
    settings.REWARDHUB_LIMITS = {**settings.REWARDHUB_LIMITS, "MAX_RUN_DETAIL_STEPS": 3}
    client = key_client("score,read")
    assert client.post(RUNS, {"name": "long"}, format="json").status_code == 201
    for step in (6, 0, 2, 1, 5, 3, 4):  # reported out of order
        body = {"step": step, "metrics": {"reward/mean": step / 10}}
        assert client.post(f"{RUNS}long/metrics/", body, format="json").status_code == 200
    seen, url, pages = [], f"{RUNS}long/", 0
    while url:
        page = client.get(url).json()
        assert len(page["steps"]) <= 3 and page["name"] == "long"
        seen += [(s["step"], s["metrics"]["reward/mean"]) for s in page["steps"]]
        url, pages = page["steps_next"], pages + 1
    assert seen == [(i, i / 10) for i in range(7)] and pages == 3
    assert client.get(f"{RUNS}long/", {"after_step": 6}).json()["steps"] == []


def test_the_default_page_of_steps_is_bounded(key_client, settings) -> None:  # type: ignore[no-untyped-def]
    limit = settings.REWARDHUB_LIMITS["MAX_RUN_DETAIL_STEPS"]
    client = key_client("score,read")
    assert client.post(RUNS, {"name": "day"}, format="json").status_code == 201
    run = TrainingRun.objects.get(name="day")
    TrainingMetric.objects.bulk_create(
        TrainingMetric(run=run, step=i, values={"loss": 1.0}) for i in range(limit + 500)
    )
    page = client.get(f"{RUNS}day/").json()
    assert [s["step"] for s in page["steps"]] == list(range(limit))
    assert page["steps_next"].endswith(f"{RUNS}day/?after_step={limit - 1}")


@pytest.mark.parametrize("bad", ["-1", "abc", "²", "9" * 30, "2147483648", "1.5"])
def test_a_bad_after_step_is_400_naming_it(key_client, bad: str) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score,read")
    assert client.post(RUNS, {"name": "r"}, format="json").status_code == 201
    response = client.get(f"{RUNS}r/", {"after_step": bad})
    assert response.status_code == 400 and "after_step" in response.json()["errors"]


def test_the_admin_page_of_a_long_run_shows_its_newest_steps_only(admin_client) -> None:  # type: ignore[no-untyped-def]
    run = TrainingRun.objects.create(name="long-run", config={"lr": 1e-6})
    TrainingMetric.objects.bulk_create(
        TrainingMetric(run=run, step=i, values={"loss": i / 3, "note": "<b>x</b>"})
        for i in range(3000)
    )
    response = admin_client.get(f"/admin/rewards/trainingrun/{run.pk}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "3000 steps reported; the newest 20" in page
    assert "<td>2999</td>" in page and "<td>2980</td>" in page and "<td>2979</td>" not in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page  # metric text is escaped
    assert len(response.content) < 200_000
