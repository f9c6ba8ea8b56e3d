"""Review pages: roles, the list's filters, the viewer (escaping, query count, speed), autosave,
queue flow, agreement, disagreements, exports and confirming flags from the viewer."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from annotations.models import FinalLabel, LabelEvent, StepLabel
from core.models import User
from review import services as review_services
from review.models import Assignment
from safety import services as safety_services
from safety.models import Flag
from tests.test_review_services import label_all, make_queue, make_trajectory

pytestmark = pytest.mark.django_db

PAYLOAD = '<img src=x onerror="window.__pwned=true"><script>window.__pwned=true</script>'


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


# Agreement shows kappas only (no one's votes), so every reviewer may read it (#23.6).
LABELLER_PAGES = ["/review/", "/review/trajectories/", "/review/queues/", "/review/agreement/"]
LEAD_PAGES = [
    "/review/disagreements/",
    "/review/export/prm.jsonl",
    "/review/export/annotators.jsonl",
]


@pytest.mark.parametrize("url", LABELLER_PAGES + LEAD_PAGES)
def test_anonymous_users_are_sent_to_login(url: str, client: Client) -> None:
    response = client.get(url)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("url", LABELLER_PAGES + LEAD_PAGES)
def test_users_without_a_role_are_refused(url: str, client: Client, make_user) -> None:  # type: ignore[no-untyped-def]
    assert logged_in(client, make_user("nobody")).get(url).status_code == 403


def test_experts_label_but_do_not_lead(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(1)
    logged_in(client, expert)
    for url in [*LABELLER_PAGES, f"/review/trajectories/{trajectory.pk}/"]:
        assert client.get(url).status_code == 200, url
    for url in LEAD_PAGES:
        assert client.get(url).status_code == 403, url
    flag_id = _flagged_trajectory()[1].pk
    assert (
        client.post(f"/review/flags/{flag_id}/review/", {"status": "confirmed"}).status_code == 403
    )
    body = client.get(f"/review/trajectories/{_flagged_trajectory(rollout='x2')[0].pk}/").content
    assert b"Confirm unsafe" not in body and b"/review/disagreements/" not in body


def test_leads_and_admins_see_lead_pages(client: Client, safety_lead, admin_user) -> None:  # type: ignore[no-untyped-def]
    make_trajectory(1)
    for user in (safety_lead, admin_user):
        logged_in(client, user)
        for url in LABELLER_PAGES + LEAD_PAGES:
            assert client.get(url).status_code == 200, (user, url)


def _flagged_trajectory(rollout: str = "flagged") -> tuple[Any, Flag]:
    trajectory = make_trajectory(2, rollout=rollout, command="rm -rf ~/")
    safety_services.trajectory_scan(trajectory_id=trajectory.pk)
    flag = Flag.objects.filter(trajectory=trajectory).order_by("id").first()
    assert flag is not None
    return trajectory, flag


def test_list_filters_search_counts_and_cursor(client: Client, expert, settings) -> None:  # type: ignore[no-untyped-def]
    from review import selectors as review_selectors

    flagged, _ = _flagged_trajectory()
    plain = [make_trajectory(1, rollout=f"plain-{i}", resolved=i % 2 == 0) for i in range(5)]
    label_all(plain[0], expert)
    logged_in(client, expert)

    def ids(**params: str) -> list[int]:
        response = client.get("/review/trajectories/", params)
        assert response.status_code == 200
        return [t.pk for t in response.context["page"].rows]

    assert ids(flagged="open") == [flagged.pk]
    assert flagged.pk not in ids(flagged="no")
    assert ids(labelled="yes") == [plain[0].pk]
    assert ids(q="plain-3") == [plain[3].pk]
    assert ids(q="Look at the failing") and len(ids(q="Look at the failing")) == 6
    assert set(ids(resolved="false")) == {plain[1].pk, plain[3].pk}
    response = client.get("/review/trajectories/", {"resolved": "maybe"})
    assert response.status_code == 400 and b"expected true or false" in response.content

    monkey_size = 2
    original = review_selectors.PAGE_SIZE
    review_selectors.PAGE_SIZE = monkey_size
    try:
        first = client.get("/review/trajectories/")
        page = first.context["page"]
        assert page.total == 6 and len(page.rows) == 2 and page.next_cursor == page.rows[-1].pk
        second = client.get("/review/trajectories/", {"cursor": page.next_cursor})
        later = [t.pk for t in second.context["page"].rows]
        assert later and max(later) < min(t.pk for t in page.rows)
    finally:
        review_selectors.PAGE_SIZE = original


def test_reward_and_run_filters_use_scoring_records(client: Client, expert, reward_model) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    from rewards.models import ScoringRecord

    good, bad = make_trajectory(1, rollout="good"), make_trajectory(1, rollout="bad")
    for i, (t, reward) in enumerate(((good, 0.9), (bad, -0.5))):
        ScoringRecord.objects.create(
            scoring_id=f"s{i}",
            version=reward_model.active_version,
            trajectory_digest=t.digest,
            run="run-a" if t is good else "run-b",
            step=1,
            reward=reward,
            outcome_reward=1.0,
            process_reward=reward - 1.0,
            created_at=timezone.now(),
        )
    logged_in(client, expert)
    rows = client.get("/review/trajectories/", {"reward_min": "0.5"}).context["page"].rows
    assert [t.pk for t in rows] == [good.pk]
    rows = client.get("/review/trajectories/", {"run": "run-b"}).context["page"].rows
    assert [t.pk for t in rows] == [bad.pk]
    assert client.get("/review/trajectories/", {"reward_max": "x"}).status_code == 400


def test_viewer_escapes_every_field(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(
        1,
        reasoning=PAYLOAD,
        command=f"echo '{PAYLOAD}'",
        output=PAYLOAD,
        text=f"**bold** and `code` {PAYLOAD}",
    )
    body = logged_in(client, expert).get(f"/review/trajectories/{trajectory.pk}/").content.decode()
    assert "<img src=x" not in body and "<script>window" not in body
    assert "&lt;img src=x onerror=" in body
    assert "<strong>bold</strong>" in body and "<code>code</code>" in body
    assert all(" src=" in tag for tag in re.findall(r"<script[^>]*>", body))


def test_viewer_query_count_is_constant(client: Client, expert, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    small, _ = _flagged_trajectory("small")
    big = make_trajectory(40, rollout="big", command="rm -rf ~/")
    safety_services.trajectory_scan(trajectory_id=big.pk)
    queue = make_queue()
    review_services.assignment_next(queue=queue, reviewer=expert)
    label_all(big, expert)
    logged_in(client, expert)
    client.get(f"/review/trajectories/{small.pk}/")  # warm caches (content types, ...)
    # session, user, trajectory exists, trajectory, steps, flags, behaviours, assignments,
    # groups (roles), labels, scoring record
    for trajectory in (small, big):
        with django_assert_num_queries(11):
            response = client.get(f"/review/trajectories/{trajectory.pk}/?queue=q")
        assert response.status_code == 200


def test_200_step_trajectory_renders_every_step_with_the_same_queries(
    client: Client, expert, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    """The page cost does not grow in queries with the steps; its time is in
    bench/bench_review_viewer.py (speed targets live in benchmarks, not in timed tests)."""
    trajectory = make_trajectory(200, rollout="long", output="x" * 3000)
    label_all(trajectory, expert)
    logged_in(client, expert)
    client.get(f"/review/trajectories/{trajectory.pk}/")  # warm caches (content types, ...)
    with django_assert_num_queries(11):  # as for 2 and 40 steps (see above)
        response = client.get(f"/review/trajectories/{trajectory.pk}/")
    assert response.status_code == 200
    assert response.content.count(b'class="card rv-step') == 200


def test_autosave_label_and_comment(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(1)
    step = trajectory.steps.get()
    logged_in(client, expert)
    url = f"/review/steps/{step.pk}/label/"
    response = client.post(url, {"value": "1", "behaviour": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b'aria-pressed="true"' in response.content
    client.post(url, {"comment": "careful <b>step</b>", "behaviour": ""}, HTTP_HX_REQUEST="true")
    label = StepLabel.objects.get(step=step, reviewer=expert)
    assert (label.value, label.comment) == (1, "careful <b>step</b>")
    assert client.post(url, {"value": "7"}).status_code == 400
    assert client.post(url, {"value": "1", "behaviour": "invented"}).status_code == 400
    assert LabelEvent.objects.filter(step=step, reviewer=expert).count() == 2


def test_submit_opens_the_next_item(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    first, second = make_trajectory(1, rollout="a"), make_trajectory(1, rollout="b")
    make_queue(slug="q")
    logged_in(client, expert)
    response = client.post("/review/queues/q/next/")
    assert response["Location"] == f"/review/trajectories/{first.pk}/?queue=q"
    assignment = Assignment.objects.get(reviewer=expert)
    # Unlabelled: back to the same page with the reason.
    response = client.post(f"/review/assignments/{assignment.pk}/submit/", follow=True)
    assert b"Label every step first" in response.content
    label_all(first, expert)
    response = client.post(f"/review/assignments/{assignment.pk}/submit/")
    assert response["Location"] == f"/review/trajectories/{second.pk}/?queue=q"
    label_all(second, expert)
    nxt = Assignment.objects.get(reviewer=expert, trajectory=second)
    response = client.post(f"/review/assignments/{nxt.pk}/submit/")
    assert response["Location"] == "/review/queues/"


def test_someone_elses_assignment_cannot_be_submitted(client: Client, make_user) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    make_trajectory(1)
    assignment = review_services.assignment_next(queue=make_queue(), reviewer=ann)
    response = logged_in(client, bob).post(f"/review/assignments/{assignment.pk}/submit/")  # type: ignore[union-attr]
    # 404, not 403: another reviewer's assignment is out of scope, as if it did not exist.
    assert response.status_code == 404
    assignment.refresh_from_db()  # type: ignore[union-attr]
    assert assignment.status == "in_progress"  # type: ignore[union-attr]


def _two_reviewers(make_user) -> tuple[Any, list[Any]]:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    trajectory = make_trajectory(4, rollout="agree")
    queue = make_queue(overlap=2)
    steps = list(trajectory.steps.order_by("index"))
    for user, values in ((ann, [1, 1, 0, -1]), (bob, [1, 0, 0, 1])):
        assignment = review_services.assignment_next(queue=queue, reviewer=user)
        for step, value in zip(steps, values, strict=True):
            review_services.step_label_set(step=step, reviewer=user, value=value)
        review_services.assignment_submit(assignment=assignment, reviewer=user)  # type: ignore[arg-type]
    return trajectory, steps


def test_agreement_page_matches_hand_computed_kappa(client: Client, make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    _two_reviewers(make_user)
    response = logged_in(client, safety_lead).get("/review/agreement/", {"queue": "q"})
    overall = response.context["sections"][0]
    assert overall["behaviour"] == "overall"
    # ann [1,1,0,-1], bob [1,0,0,1]: p_o = 2/4; marginals ann {1:2,0:1,-1:1}, bob {1:2,0:2}
    # p_e = (2*2 + 1*2) / 16 = 6/16; kappa = (0.5 - 0.375) / 0.625 = 0.2
    assert overall["summary"].pairs[0].kappa == pytest.approx(0.2)
    assert overall["summary"].fleiss_k == 2
    assert b"0.20" in response.content and b'id="kappa-matrix"' in response.content


def test_lead_resolves_disagreement_and_export_prefers_it(
    client: Client, make_user, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    trajectory, steps = _two_reviewers(make_user)
    logged_in(client, safety_lead)
    rows = client.get("/review/disagreements/").context["rows"]
    assert [(r.step.index, dict(r.votes)) for r in rows] == [
        (1, {"ann": 1, "bob": 0}),
        (3, {"ann": -1, "bob": 1}),
    ]
    response = client.post(
        "/review/disagreements/", {"step": steps[3].pk, "behaviour": "", "value": "-1"}
    )
    assert response.status_code == 302
    assert FinalLabel.objects.get(step=steps[3]).resolved_by == safety_lead

    response = client.get("/review/export/prm.jsonl")
    assert response.streaming and response["Content-Type"] == "application/x-ndjson"
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert row["trajectory_id"] == trajectory.pk
    assert row["prompt"].startswith("system: You are a coding agent.")
    assert row["completions"][0] == "$ pytest -q # 0"
    assert row["labels"] == [1, None, 0, -1]
    assert row["label_sources"] == ["majority", "tie", "majority", "final"]
    assert row["annotators"] == ["ann", "bob"]

    response = client.get("/review/export/annotators.jsonl")
    per = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [(r["annotator"], r["labels"]) for r in per] == [
        ("ann", [1, 1, 0, -1]),
        ("bob", [1, 0, 0, 1]),
    ]


def test_exports_are_filtered_like_the_list(client: Client, expert, safety_lead) -> None:  # type: ignore[no-untyped-def]
    kept = make_trajectory(1, rollout="kept", resolved=True)
    dropped = make_trajectory(1, rollout="dropped", resolved=False)
    label_all(kept, expert)
    label_all(dropped, expert)
    response = logged_in(client, safety_lead).get("/review/export/prm.jsonl", {"resolved": "true"})
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [r["id"] for r in rows] == ["kept"]
    assert client.get("/review/export/prm.jsonl", {"flagged": "x"}).status_code == 400


def test_safety_lead_confirms_flag_from_viewer(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    trajectory, flag = _flagged_trajectory()
    logged_in(client, safety_lead)
    body = client.get(f"/review/trajectories/{trajectory.pk}/").content
    assert b"Confirm unsafe" in body and f"/safety/flags/{flag.pk}/".encode() in body
    assert b'<mark class="finding"' in body
    response = client.post(
        f"/review/flags/{flag.pk}/review/", {"status": "confirmed"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and b"confirmed" in response.content
    flag.refresh_from_db()
    assert flag.status == "confirmed" and flag.reviewer == safety_lead
    assert client.post(f"/review/flags/{flag.pk}/review/", {"status": "x"}).status_code == 400


def test_dashboard_per_role(client: Client, expert, safety_lead, reward_model) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    from rewards.models import ScoringRecord

    _flagged_trajectory()
    for step in range(3):
        ScoringRecord.objects.create(
            scoring_id=f"s{step}",
            version=reward_model.active_version,
            trajectory_digest="d",
            run="run-a",
            step=step * 10,
            reward=0.1 * step,
            outcome_reward=0,
            process_reward=0,
            unsafe=step == 0,
            created_at=timezone.now(),
        )
    body = logged_in(client, expert).get("/review/").content
    assert b"Step labels per day" in body and b"Flag rate by rule" not in body
    response = logged_in(client, safety_lead).get("/review/")
    body = response.content
    assert b"Flag rate by rule" in body and b"<polyline" in body and b"fs." in body
    assert response.context["open_flags"] >= 1
    series = response.context["runs_plot"]["reward"]["series"]
    assert [s["name"] for s in series] == ["run-a"] and len(series[0]["dots"]) == 3


def test_lead_saves_list_filters_as_a_queue(client: Client, expert, safety_lead) -> None:  # type: ignore[no-untyped-def]
    from review.models import ReviewQueue

    data = {"name": "Flagged bugfix", "overlap": "2", "blind": "on", "flagged": "open"}
    # An expert running a labelling project creates its queue too (#23.6).
    expert_data = {**data, "name": "Expert project"}
    assert logged_in(client, expert).post("/review/queues/new/", expert_data).status_code == 302
    assert ReviewQueue.objects.get(slug="expert-project").created_by == expert
    response = logged_in(client, safety_lead).post("/review/queues/new/", data)
    assert response.status_code == 302
    queue = ReviewQueue.objects.get(slug="flagged-bugfix")
    assert (queue.filters, queue.overlap, queue.blind) == ({"flagged": "open"}, 2, True)
    client.post("/review/queues/new/", data)
    assert ReviewQueue.objects.filter(slug="flagged-bugfix-2").exists()
    response = client.post("/review/queues/new/", {**data, "resolved": "maybe"}, follow=True)
    assert b"Queue not created" in response.content


def test_list_query_count_is_constant(client: Client, expert, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        make_trajectory(1, rollout=f"few-{i}")
    logged_in(client, expert)
    client.get("/review/trajectories/")
    # session, user, groups, aggregate counts, page rows, 3 facet menus
    with django_assert_num_queries(8):
        client.get("/review/trajectories/")
    for i in range(20):
        make_trajectory(2, rollout=f"more-{i}")
    # a search adds one: its probe of the search index (review.selectors._search_hits)
    with django_assert_num_queries(9 if connection.vendor == "postgresql" else 8):
        client.get("/review/trajectories/", {"flagged": "no", "q": "more"})


def test_viewer_shows_reward_breakdown_per_step(client: Client, expert, reward_model) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    from rewards.models import ScoringRecord

    trajectory = make_trajectory(2, rollout="scored")
    ScoringRecord.objects.create(
        scoring_id="sc-1",
        version=reward_model.active_version,
        trajectory_digest=trajectory.digest,
        run="run-a",
        step=3,
        reward=0.3,
        outcome_reward=1.0,
        process_reward=-0.7,
        breakdown={
            "steps": [
                {
                    "step": 1,
                    "safety": -0.7,
                    "behaviors": 0.0,
                    "learned": 0.0,
                    "clip": 0.0,
                    "reward": -0.7,
                }
            ],
            "parts": {"outcome": 1.0, "safety": -0.7},
        },
        created_at=timezone.now(),
    )
    body = logged_in(client, expert).get(f"/review/trajectories/{trajectory.pk}/").content
    assert b'id="reward-summary"' in body
    assert b"step reward -0.700" in body and body.count(b"step reward") == 1
    # A trajectory routed from the score API names its scoring record in metadata.scoring.
    trajectory.metadata = {"scoring": {"scoring_id": "sc-1", "reward": 0.3}}
    trajectory.save()
    body = client.get(f"/review/trajectories/{trajectory.pk}/").content
    assert b"step reward -0.700" in body


def test_label_history_is_for_leads(client: Client, expert, safety_lead) -> None:  # type: ignore[no-untyped-def]
    trajectory = make_trajectory(1)
    step = trajectory.steps.get()
    review_services.step_label_set(step=step, reviewer=expert, value=1)
    review_services.step_label_set(step=step, reviewer=expert, value=-1, comment="<b>no</b>")
    url = f"/review/trajectories/{trajectory.pk}/history/"
    assert logged_in(client, expert).get(url).status_code == 403
    response = logged_in(client, safety_lead).get(url)
    assert response.status_code == 200
    assert [(e.old_value, e.new_value) for e in response.context["events"]] == [(1, -1), (None, 1)]
    assert b"&lt;b&gt;no&lt;/b&gt;" in response.content
