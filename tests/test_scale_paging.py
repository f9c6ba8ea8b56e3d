"""Issue #25, second round: the lists that still cost their depth or the hub page by keyset or
stop at a bounded depth (disagreements, the admin's deep pages), the two-filter list reads its
rarer side, a rescan fans out over workers, and the faster export writes the bytes it wrote."""

from __future__ import annotations

import json
import math
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client

from review import services as review_services
from review import stats as review_stats
from tests.test_review_pages import logged_in
from tests.test_review_services import make_queue, make_trajectory
from tests.test_scale_queries import _reference_disagreements

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row comparisons and plans are PostgreSQL's"
)


def _disagreeing_hub(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    """Three trajectories reviewed in a queue (the third review not submitted, so some splits
    are not splits within the queue), one outside it, one disagreement resolved."""
    users = [make_user(name, "expert") for name in ("ann", "bob", "cy")]
    queue = make_queue(slug="k3", overlap=3)
    other = make_trajectory(3, rollout="other", task_type="swe-feature")
    for _ in range(3):
        make_trajectory(4, rollout=f"d{_}")
    for _ in range(3):
        for r, user in enumerate(users):
            assignment = review_services.assignment_next(queue=queue, reviewer=user)
            assert assignment is not None
            for step in assignment.trajectory.steps.order_by("index"):
                value = (step.index + r * (step.trajectory_id % 2)) % 3 - 1
                review_services.step_label_set(step=step, reviewer=user, value=value)
            if r < 2:
                review_services.assignment_submit(assignment=assignment, reviewer=user)
    for step in other.steps.all():
        review_services.step_label_set(step=step, reviewer=users[0], value=1)
        review_services.step_label_set(step=step, reviewer=users[1], value=-1)
    first = review_stats.LabelTally.objects.filter(split=True).order_by("id").first()
    assert first is not None
    review_services.final_label_resolve(step=first.step, behaviour="", value=1, user=safety_lead)


def _walk(client: Client, params: dict[str, str]) -> tuple[list[tuple], int]:
    """Every row the disagreements page shows, following its next-page links from the first;
    and how many pages it took."""
    url = "/review/disagreements/?" + urlencode(params)
    seen: list[tuple] = []
    pages = 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
        pages += 1
        rows = response.context["rows"]
        assert len(rows) <= review_stats.DISAGREEMENTS_PAGE
        seen += [
            (r.final is not None, r.step.trajectory_id, r.step.index, r.behaviour, r.votes)
            for r in rows
        ]
        cursor = response.context["next_cursor"]
        if cursor is None:
            assert b'id="next-page"' not in response.content
            break
        assert len(rows) == review_stats.DISAGREEMENTS_PAGE  # a page is full before the next
        link = f"cursor={cursor}".encode()
        assert link in response.content
        url = "/review/disagreements/?" + urlencode({**params, "cursor": cursor})
    return seen, pages


@postgresql_only
def test_disagreements_page_by_cursor_through_every_row(
    client: Client, make_user, safety_lead, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    _disagreeing_hub(make_user, safety_lead)
    monkeypatch.setattr(review_stats, "DISAGREEMENTS_PAGE", 2)
    logged_in(client, safety_lead)
    for params, reference in (
        ({}, _reference_disagreements()),
        ({"queue": "k3"}, _reference_disagreements("k3")),
        ({"task_type": "swe-feature"}, _reference_disagreements("", "swe-feature")),
    ):
        seen, pages = _walk(client, params)
        assert seen == reference and reference, params
        assert pages == max(math.ceil(len(reference) / 2), 1), params


@postgresql_only
def test_a_disagreements_page_costs_the_same_queries_at_any_depth(
    client: Client, make_user, safety_lead, monkeypatch, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    _disagreeing_hub(make_user, safety_lead)
    monkeypatch.setattr(review_stats, "DISAGREEMENTS_PAGE", 2)
    logged_in(client, safety_lead)
    first = client.get("/review/disagreements/")
    cursor = first.context["next_cursor"]
    deep = client.get("/review/disagreements/", {"cursor": cursor})
    deeper = client.get("/review/disagreements/", {"cursor": deep.context["next_cursor"]})
    assert deeper.status_code == 200 and deeper.context["rows"]
    with django_assert_max_num_queries(12):
        client.get("/review/disagreements/", {"cursor": deep.context["next_cursor"]})


def test_a_bad_disagreements_cursor_is_a_400_naming_it(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    logged_in(client, safety_lead)
    for bad in ("x", "2-1-1-", "0-1-1-not a slug", "0--1-1-", "0-1", "1-99999999999999999999-0-",
                "0-1-1-" + "a" * 101, "0-1-2147483648-"):  # fmt: skip
        response = client.get("/review/disagreements/", {"cursor": bad})
        assert response.status_code == 400, bad
        assert b"cursor" in response.content
    assert client.get("/review/disagreements/", {"cursor": "0-1-0-"}).status_code == 200


# --- Admin deep pages ---------------------------------------------------------------------------


def _admin_rows(response) -> list[int]:  # type: ignore[no-untyped-def]
    return [obj.pk for obj in response.context["cl"].result_list]


def test_admin_deep_pages_stop_at_the_numbered_ones_and_continue_by_key(
    client: Client, admin_user, reward_model, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from django.db.models import Max

    from core import admin_lists
    from rewards.admin import ScoringRecordAdmin
    from rewards.models import ScoringRecord
    from tests.test_scale_queries import record

    version = reward_model.active_version
    for n in range(9):
        record(version, f"sha256:{n:064x}", run="r", n=n)
    newest_first = list(ScoringRecord.objects.order_by("-pk").values_list("pk", flat=True))
    monkeypatch.setattr(admin_lists, "MAX_PAGES", 2)
    monkeypatch.setattr(ScoringRecordAdmin, "list_per_page", 2)
    client.force_login(admin_user)
    url = "/admin/rewards/scoringrecord/"

    first = client.get(url)
    assert _admin_rows(first) == newest_first[:2]
    assert first.context["cl"].paginator.num_pages == 2  # 5 pages of rows, 2 numbered
    assert b"?p=3" not in first.content and b"rows-after" not in first.content

    deep = client.get(url, {"p": "1000"})  # past the numbered pages: the last of them
    assert deep.status_code == 200 and _admin_rows(deep) == newest_first[2:4]
    text = deep.content.decode()
    assert "Page 1000 is past the 2 pages this list numbers" in text
    seen = _admin_rows(client.get(url)) + _admin_rows(deep)
    for _ in range(len(newest_first)):  # each step reads at least one row
        if 'id="rows-after"' not in text:
            break
        href = text.split('id="rows-after"')[0].rsplit('href="', 1)[1].split('"')[0]
        assert href.startswith("?id__lt=")
        nxt = client.get(url + href.replace("&amp;", "&"))
        assert nxt.status_code == 200
        rows = _admin_rows(nxt)
        seen += rows
        if len(rows) == 2 and nxt.context["cl"].result_count > 4:
            nxt = client.get(url + href.replace("&amp;", "&") + "&p=2")
            seen += _admin_rows(nxt)
        text = nxt.content.decode()
    assert seen == newest_first
    assert ScoringRecord.objects.aggregate(m=Max("pk"))["m"] == newest_first[0]


def test_an_admin_deep_page_reads_no_deeper_than_the_numbered_pages(
    client: Client, admin_user, reward_model, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import re

    from django.test.utils import CaptureQueriesContext

    from core import admin_lists
    from rewards.admin import ScoringRecordAdmin
    from tests.test_scale_queries import record

    for n in range(7):
        record(reward_model.active_version, f"sha256:{n:064x}", run="r", n=n)
    monkeypatch.setattr(admin_lists, "MAX_PAGES", 2)
    monkeypatch.setattr(ScoringRecordAdmin, "list_per_page", 2)
    client.force_login(admin_user)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/admin/rewards/scoringrecord/", {"p": "3000"}).status_code == 200
    offsets = [int(m) for q in ctx.captured_queries for m in re.findall(r"OFFSET (\d+)", q["sql"])]
    assert offsets and max(offsets) <= 2  # page 2 of 2 a page, never page 3,000's 5,998
    # Sorted by another column the rows after a page have no key to start from: narrow it.
    sorted_deep = client.get("/admin/rewards/scoringrecord/", {"p": "3000", "o": "4"})
    assert sorted_deep.status_code == 200
    assert b"Narrow it with a filter or a search" in sorted_deep.content
    assert b"rows-after" not in sorted_deep.content


# --- The export's bytes ---------------------------------------------------------------------------


def _odd_record(i: int) -> dict:
    """A trajectory with what the JSON writer must keep byte for byte: non-ASCII and control
    characters, a non-shell tool call with nested arguments, a list as content, floats."""
    call = {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": f"echo 'é{i}\t☃'"})},
    }
    edit = {
        "id": f"e{i}",
        "type": "function",
        "function": {"name": "str_replace", "arguments": '{"path": "a/ü.py", "n": 1.50}'},
    }
    return {
        "id": f"odd-{i}",
        "task_type": "swe-bugfix",
        "messages": [
            {"role": "system", "content": "Sÿstem \u2028 line\nnext"},
            {"role": "user", "content": [{"type": "text", "text": f"fix 🐛 {i}"}]},
            {"role": "assistant", "content": "Looking… \"quoted\"", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "é\x01"},
            {"role": "assistant", "content": "", "tool_calls": [edit]},
            {"role": "tool", "tool_call_id": f"e{i}", "content": "ok"},
            {"role": "assistant", "content": "Done ✓"},
        ],
        "outcome": {"resolved": i % 2 == 0, "score": 0.1 * i, "notes": "ünïcode"},
    }  # fmt: skip


@postgresql_only
def test_the_export_writes_the_bytes_the_reference_writes(
    client: Client, make_user, safety_lead, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import gc

    from annotations import exports
    from annotations.models import Trajectory
    from annotations.services import trajectory_import
    from tests.test_scale_queries import _reference_annotators, _reference_prm

    users = [make_user(name, "expert") for name in ("zoë", "ann", "Bob")]
    for i in range(5):
        t = trajectory_import(record=_odd_record(i), fmt="openai").trajectory
        assert t is not None
        for step in t.steps.order_by("index"):
            for r, user in enumerate(users[: 1 + (i + step.index) % 3]):
                value = [1, 0, -1][(i * 2 + r + step.index) % 3]
                review_services.step_label_set(step=step, reviewer=user, value=value)
            if step.index == 1:
                review_services.step_label_set(
                    step=step, reviewer=users[0], behaviour="ran-tests", value=-1, comment="ñ"
                )
            if i == 2 and step.index == 0:
                review_services.final_label_resolve(
                    step=step, behaviour="", value=0, user=safety_lead
                )
    monkeypatch.setattr(exports, "CHUNK", 2)
    qs = Trajectory.objects.all()
    reference = _reference_prm(qs)
    assert len(reference) == 5
    expected = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in reference).encode()
    logged_in(client, safety_lead)
    body = b"".join(client.get("/review/export/prm.jsonl").streaming_content)
    assert body == expected
    assert gc.isenabled()  # the collector paused while chunks were built is on again
    body = b"".join(client.get("/review/export/annotators.jsonl").streaming_content)
    rows = [json.loads(line) for line in body.splitlines()]
    assert [(r["id"], r["annotator"]) for r in rows] == [
        (r["id"], name) for r in reference for name in r["annotators"]
    ]
    per_annotator = _reference_annotators(qs)
    assert body == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in per_annotator).encode()
    assert gc.isenabled()


# --- Two sparse filters ---------------------------------------------------------------------------


def test_flagged_and_labelled_lists_only_their_common_trajectories(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    from safety.models import Flag, FlagStatus
    from tests.test_review_pages import _flagged_trajectory
    from tests.test_review_services import label_all
    from tests.test_scale_queries import list_ids

    both_open, _ = _flagged_trajectory("both-open")
    both_confirmed, flag = _flagged_trajectory("both-confirmed")
    Flag.objects.filter(trajectory=both_confirmed).update(status=FlagStatus.CONFIRMED)
    flagged_only, _ = _flagged_trajectory("flagged-only")
    labelled_only = make_trajectory(2, rollout="labelled-only")
    newer_plain = [make_trajectory(1, rollout=f"plain-{i}") for i in range(3)]
    for t in (both_open, both_confirmed, labelled_only):
        label_all(t, expert)
    assert newer_plain and flag and flagged_only
    logged_in(client, expert)
    assert list_ids(client, flagged="yes", labelled="yes") == [both_confirmed.pk, both_open.pk]
    assert list_ids(client, flagged="open", labelled="yes") == [both_open.pk]
    assert list_ids(client, flagged="confirmed", labelled="yes") == [both_confirmed.pk]
    label_all(both_open, expert, value=None)  # labels cleared: no vote left on it
    Flag.objects.filter(trajectory=both_confirmed).update(status=FlagStatus.OPEN)
    assert list_ids(client, flagged="confirmed", labelled="yes") == []  # none in common
    assert list_ids(client, flagged="open", labelled="yes") == [both_confirmed.pk]
    page = client.get("/review/trajectories/", {"flagged": "confirmed", "labelled": "yes"})
    assert page.context["page"].total == 0
