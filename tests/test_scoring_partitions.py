"""Scoring records partitioned by month (rewards.partitions, `scoring_partitions`): converting
keeps every row, name and answer; new records land in their month; a month the partitions do
not reach yet waits in the default partition until `ensure` moves it; `detach` takes whole old
months out of every query."""

from __future__ import annotations

from datetime import UTC, date, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from rewards import partitions
from rewards.models import ScoringRecord
from rewards.services.scoring import resolve_reward_model, score_response
from tests.factories import CanonicalTrajectoryFactory
from tests.test_review_pages import logged_in
from tests.test_review_services import make_trajectory
from tests.test_scale_queries import list_ids, record

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL partitioning"),
]

TODAY = date(2026, 11, 25)


def _at(year: int, month: int, day: int = 10) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


def _catalog() -> dict[str, Any]:
    """What the table looks like to the service: index and constraint names, triggers."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY 1", [partitions.TABLE]
        )
        indexes = [r[0] for r in cursor.fetchall()]
        cursor.execute(
            "SELECT conname, contype FROM pg_constraint WHERE conrelid = %s::regclass ORDER BY 1",
            [partitions.TABLE],
        )
        constraints = cursor.fetchall()
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal "
            "ORDER BY 1",
            [partitions.TABLE],
        )
        triggers = [r[0] for r in cursor.fetchall()]
    return {"indexes": indexes, "constraints": constraints, "triggers": triggers}


def _api_ids(client: Client, **params: str) -> list[str]:
    response = client.get("/api/v1/scorings/", params)
    assert response.status_code == 200, response.content[:300]
    return [row["scoring_id"] for row in response.json()["results"]]


def test_converting_keeps_rows_names_and_answers(  # type: ignore[no-untyped-def]
    client: Client, expert, admin_user, reward_model, recorder
) -> None:
    version = reward_model.active_version
    old, recent = make_trajectory(1, rollout="old"), make_trajectory(1, rollout="recent")
    rows = [
        record(version, old.digest, run="run-a", reward=0.4, n=1),
        record(version, recent.digest, run="run-b", reward=-0.2, n=2),
        record(version, recent.digest, run="run-b", reward=0.9, n=3),
    ]
    for row, when in zip(rows, (_at(2026, 6), _at(2026, 10), _at(2026, 11)), strict=True):
        ScoringRecord.objects.filter(pk=row.pk).update(created_at=when)
    before = _catalog()
    logged_in(client, admin_user)
    answers = {
        "api": _api_ids(client),
        "api_run": _api_ids(client, run="run-b"),
        "list_run": list_ids(client, run="run-b"),
        "list_reward": list_ids(client, reward_min="0.3"),
    }

    made = partitions.convert(months_ahead=2, today=TODAY)

    assert [p.name for p in made] == [
        *(f"rewardhub_scoringrecord_p2026_{m:02d}" for m in range(6, 13)),
        "rewardhub_scoringrecord_p2027_01",
        "rewardhub_scoringrecord_default",
    ]
    assert {p.start.month: p.rows for p in made if p.start and p.rows} == {6: 1, 10: 1, 11: 1}
    with connection.cursor() as cursor:  # the planner has the whole table's statistics
        cursor.execute(
            "SELECT count(*) FROM pg_stats WHERE tablename = %s AND inherited",
            [partitions.TABLE],
        )
        assert cursor.fetchone()[0] > 0
    after = _catalog()
    assert after["triggers"] == before["triggers"] and len(after["triggers"]) == 3
    assert set(after["indexes"]) == set(before["indexes"])
    assert dict(after["constraints"]) == dict(before["constraints"])
    assert answers == {
        "api": _api_ids(client),
        "api_run": _api_ids(client, run="run-b"),
        "list_run": list_ids(client, run="run-b"),
        "list_reward": list_ids(client, reward_min="0.3"),
    }

    # The score links' triggers still follow the records.
    ScoringRecord.objects.filter(pk=rows[0].pk).update(reward=0.95)
    assert old.pk in list_ids(client, reward_min="0.9")
    # The real write path: COPY into the parent, a retried batch skipped, ids from the sequence.
    recorder.discard()
    response = score_response(
        resolve_reward_model(reward_model.slug), CanonicalTrajectoryFactory(), {"run": "run-c"}
    )
    batch = list(recorder._queue)
    recorder.flush()
    recorder._insert(batch)  # written twice: the second is skipped
    stored = ScoringRecord.objects.get(scoring_id=response["scoring_id"])
    assert stored.pk > max(r.pk for r in rows) and stored.run == "run-c"
    assert ScoringRecord.objects.filter(scoring_id=response["scoring_id"]).count() == 1
    assert partitions.convert(today=TODAY) == partitions.status()  # converting again: nothing


def test_a_month_without_partition_waits_in_default_until_ensure(reward_model) -> None:  # type: ignore[no-untyped-def]
    partitions.convert(months_ahead=0, today=TODAY)
    version = reward_model.active_version
    future = record(version, "sha256:" + "f" * 64, run="far", n=9)
    ScoringRecord.objects.filter(pk=future.pk).update(created_at=_at(2027, 3))
    by_name = {p.name: p.rows for p in partitions.status()}
    assert by_name["rewardhub_scoringrecord_default"] == 1
    made = partitions.ensure(months_ahead=4, today=TODAY)
    assert made == ["rewardhub_scoringrecord_p2026_12"] + [
        f"rewardhub_scoringrecord_p2027_{m:02d}" for m in (1, 2, 3)
    ]
    by_name = {p.name: p.rows for p in partitions.status()}
    assert by_name["rewardhub_scoringrecord_default"] == 0
    assert by_name["rewardhub_scoringrecord_p2027_03"] == 1
    assert partitions.ensure(months_ahead=4, today=TODAY) == []
    assert ScoringRecord.objects.get(pk=future.pk).run == "far"


def test_detaching_takes_whole_old_months_out_of_every_query(reward_model) -> None:  # type: ignore[no-untyped-def]
    version = reward_model.active_version
    months = [(2026, 7), (2026, 8), (2026, 9)]
    for n, (year, month) in enumerate(months):
        row = record(version, f"sha256:{n:064d}", run=f"m{month}", n=n)
        ScoringRecord.objects.filter(pk=row.pk).update(created_at=_at(year, month, 28))
    partitions.convert(months_ahead=1, today=TODAY)
    assert partitions.detach(before=date(2026, 9, 1)) == [
        "rewardhub_scoringrecord_p2026_07",
        "rewardhub_scoringrecord_p2026_08",
    ]
    assert sorted(ScoringRecord.objects.values_list("run", flat=True)) == ["m9"]
    with connection.cursor() as cursor:
        cursor.execute('SELECT run FROM "rewardhub_scoringrecord_p2026_08"')
        assert cursor.fetchall() == [("m8",)]  # still there to archive
    assert partitions.detach(before=date(2026, 9, 1)) == []


def test_the_command_says_what_is_wrong() -> None:
    out = StringIO()
    call_command("scoring_partitions", "status", stdout=out)
    assert "is not partitioned" in out.getvalue()
    with pytest.raises(CommandError, match="run `scoring_partitions convert`"):
        call_command("scoring_partitions", "ensure")
    with pytest.raises(CommandError, match="expected a month as YYYY-MM, got 'last-june'"):
        call_command("scoring_partitions", "detach", "--before", "last-june")
    with pytest.raises(CommandError, match="detach needs --before"):
        call_command("scoring_partitions", "detach")
    with pytest.raises(CommandError, match="--months-ahead: expected 0 to 120"):
        call_command("scoring_partitions", "convert", "--months-ahead", "-1")
    call_command("scoring_partitions", "convert", stdout=out)
    now = datetime.now(UTC)
    assert f"rewardhub_scoringrecord_p{now.year:04d}_{now.month:02d}" in out.getvalue()
