"""Issue #25: pages cost a screen, not the hub. What keeps them so keeps the same answers:
search vectors, score links, label tallies, snapshots, keyset flag pages, capped counts, the
chunked exports and the admin changelists, each checked against what the pages showed before."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations import exports
from annotations.models import LabelTally, Step, Trajectory
from core.canonical import content_digest
from review import selectors as review_selectors
from review import services as review_services
from review import stats as review_stats
from review.models import StatsSnapshot
from rewards.models import ScoringRecord, TrajectoryScore
from safety import selectors as safety_selectors
from safety.models import Flag
from tests.test_review_pages import _flagged_trajectory, logged_in
from tests.test_review_services import canonical, make_queue, make_trajectory

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="search vectors and score links are PostgreSQL's"
)


def list_ids(client: Client, **params: str) -> list[int]:
    response = client.get("/review/trajectories/", params)
    assert response.status_code == 200, response.content[:500]
    return [t.pk for t in response.context["page"].rows]


def record(version: Any, digest: str, *, run: str = "", reward: float = 0.0, n: int = 0) -> Any:
    return ScoringRecord.objects.create(
        scoring_id=f"rec-{digest[-8:]}-{run}-{n}",
        version=version,
        trajectory_digest=digest,
        run=run,
        step=n,
        reward=reward,
        outcome_reward=0,
        process_reward=0,
        created_at=timezone.now(),
    )


# --- Search ---------------------------------------------------------------------------------


@postgresql_only
def test_search_reads_commands_tool_output_and_findings(client: Client, expert) -> None:  # type: ignore[no-untyped-def]
    quiet = make_trajectory(
        1,
        rollout="quiet-one",
        command="cat src/pkg/module.py",
        output="Traceback: KeyError zebra",
    )
    flagged, flag = _flagged_trajectory()
    logged_in(client, expert)
    assert list_ids(client, q="module.py") == [quiet.pk]  # a file name inside a path
    assert list_ids(client, q="KeyError zebra") == [quiet.pk]  # tool output, as a phrase
    assert list_ids(client, q="zebra KeyError") == []  # the words in that order
    assert list_ids(client, q="quiet-o") == [quiet.pk]  # the last word as it is being typed
    assert list_ids(client, q="one") == [quiet.pk]  # a piece of the id
    assert list_ids(client, q=flag.rule_id) == [flagged.pk]  # the findings' words
    assert list_ids(client, q=flag.message.split()[0]) == [flagged.pk] or flag.message


@postgresql_only
def test_rare_and_common_words_give_the_same_pages(client: Client, expert, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A search matching few trajectories is answered from the index's ids, one matching many
    by walking the list: both give the same rows, in the same order, with the same counts."""
    made = [
        make_trajectory(1, rollout=f"walk-{i}", command=f"pytest -k case{i % 3}") for i in range(7)
    ]
    logged_in(client, expert)
    queries = ["pytest", "case1", "pytest -k case2", "walk-4", "nothing-like-it"]
    from_ids = {q: list_ids(client, q=q) for q in queries}
    monkeypatch.setattr(review_selectors, "SEARCH_PROBE_LIMIT", 1)
    walked = {q: list_ids(client, q=q) for q in queries}
    assert walked == from_ids
    assert from_ids["pytest"] == [t.pk for t in reversed(made)]
    assert from_ids["case1"] == [made[4].pk, made[1].pk] and from_ids["nothing-like-it"] == []


@postgresql_only
def test_search_vectors_follow_every_insert(expert) -> None:  # type: ignore[no-untyped-def]
    """Rebuilding every vector from the tables gives what the insert triggers wrote."""
    from annotations.models import TrajectorySearch
    from annotations.search import search_rebuild

    make_trajectory(3, rollout="a", command="git status")
    _flagged_trajectory()

    def vectors() -> dict[int, str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT trajectory_id, array_to_string(tsvector_to_array(vector), ' ') "
                "FROM annotations_trajectorysearch"
            )
            return {pk: " ".join(sorted(words.split())) for pk, words in cursor.fetchall()}

    written = vectors()
    assert set(written) == set(Trajectory.objects.values_list("pk", flat=True))
    TrajectorySearch.objects.all().delete()
    assert search_rebuild(connection) == len(written)
    assert vectors() == written


# --- Reward and run filters -----------------------------------------------------------------


@postgresql_only
def test_reward_and_run_filters_follow_records_and_metadata(
    client: Client, expert, reward_model
) -> None:  # type: ignore[no-untyped-def]
    version = reward_model.active_version
    t = make_trajectory(1, rollout="later")
    logged_in(client, expert)
    assert list_ids(client, run="run-z") == []
    rec = record(version, t.digest, run="run-z", reward=0.7)
    assert list_ids(client, run="run-z") == [t.pk]
    assert t.pk in list_ids(client, reward_min="0.6")
    ScoringRecord.objects.filter(pk=rec.pk).update(reward=-0.4)  # the learned part rewrote it
    assert t.pk not in list_ids(client, reward_min="0.6")
    assert list_ids(client, reward_max="-0.3") == [t.pk]
    ScoringRecord.objects.filter(pk=rec.pk).delete()
    assert list_ids(client, run="run-z") == []
    t.metadata = {"run": "run-m", "scoring": {"reward": 0.25, "rollout": {"run": "run-n"}}}
    t.save()
    assert list_ids(client, run="run-m") == [t.pk] == list_ids(client, run="run-n")
    assert list_ids(client, reward_min="0.2", reward_max="0.3") == [t.pk]
    t.metadata = {}
    t.save()
    assert list_ids(client, run="run-m") == []
    # A routed rollout: scored first, imported after.
    doc = canonical(1, rollout="routed")
    record(version, content_digest(doc), run="run-r", reward=0.5)
    routed = make_trajectory(1, rollout="routed")
    assert list_ids(client, run="run-r") == [routed.pk]


@postgresql_only
def test_score_link_filters_match_the_record_queries(
    client: Client, expert, reward_model, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The indexed filters give exactly the rows the scoring-record and metadata conditions
    (still used on SQLite) give, on PostgreSQL, over a mix of records and metadata."""
    version = reward_model.active_version
    made = []
    for i in range(8):
        t = make_trajectory(1, rollout=f"mix-{i}")
        if i % 2:
            record(version, t.digest, run=f"run-{i % 3}", reward=i / 10 - 0.3, n=i)
        if i % 3 == 0:
            record(version, t.digest, run="run-0", reward=-i / 10, n=100 + i)
        if i % 4 == 1:
            t.metadata = {"scoring": {"reward": 0.05 * i, "rollout": {"run": "run-2"}}}
            t.save()
        if i == 6:
            t.metadata = {"run": "run-1", "scoring": {"reward": "not a number"}}
            t.save()
        made.append(t)
    logged_in(client, expert)
    cases = [
        {"run": "run-0"},
        {"run": "run-1"},
        {"run": "run-2"},
        {"reward_min": "0.1"},
        {"reward_max": "0"},
        {"reward_min": "-0.2", "reward_max": "0.3"},
        {"reward_min": "0", "run": "run-2"},
    ]
    indexed = {json.dumps(c): list_ids(client, **c) for c in cases}
    monkeypatch.setattr(review_selectors, "_on_postgresql", lambda qs: False)
    for case in cases:
        assert list_ids(client, **case) == indexed[json.dumps(case)], case
    assert TrajectoryScore.objects.exists()


# --- Label tallies and disagreements --------------------------------------------------------


def test_tallies_follow_every_label_change(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    step = make_trajectory(1).steps.get()
    review_services.step_label_set(step=step, reviewer=ann, value=1)
    tally = LabelTally.objects.get(step=step, behaviour="")
    assert (tally.trusted, tally.split, tally.resolved) == (1, False, False)
    review_services.step_label_set(step=step, reviewer=bob, value=-1)
    tally.refresh_from_db()
    assert (tally.trusted, tally.untrusted, tally.split) == (1, 1, True)
    assert review_stats.unresolved_disagreements() == 1
    review_services.final_label_resolve(step=step, behaviour="", value=1, user=safety_lead)
    tally.refresh_from_db()
    assert tally.resolved and review_stats.unresolved_disagreements() == 0
    review_services.step_label_set(step=step, reviewer=bob, value=None)  # cleared
    tally.refresh_from_db()
    assert (tally.trusted, tally.untrusted, tally.split) == (1, 0, False)
    review_services.step_label_set(step=step, reviewer=ann, comment="only a comment now")
    review_services.step_label_set(step=step, reviewer=ann, value=None)
    tally.refresh_from_db()
    assert tally.trusted == 0 and not tally.split
    # Rebuilding from the labels gives the same tallies.
    before = list(LabelTally.objects.values_list("step_id", "trusted", "neutral", "untrusted"))
    review_services.label_tallies_rebuild()
    after = list(LabelTally.objects.values_list("step_id", "trusted", "neutral", "untrusted"))
    assert [r for r in before if any(r[1:])] == after


def _reference_disagreements(queue_slug: str = "", task_type: str = "") -> list[tuple]:
    """What the page listed before tallies: every label, grouped in Python."""
    queue = review_stats.ReviewQueue.objects.filter(slug=queue_slug).first() if queue_slug else None
    ratings = review_stats.label_ratings(queue=queue, task_type=task_type)
    split = [
        (key, sorted(votes.items()))
        for per in ratings.values()
        for key, votes in per.items()
        if len(set(votes.values())) > 1
    ]
    steps = Step.objects.in_bulk({k[0] for k, _ in split})
    finals = {(f.step_id, f.behaviour) for f in review_stats.FinalLabel.objects.all()}
    rows = [
        (key in finals, steps[key[0]].trajectory_id, steps[key[0]].index, key[1], votes)
        for key, votes in split
    ]
    return sorted(rows, key=lambda r: r[:4])


def test_disagreements_match_the_labels(client: Client, make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    users = [make_user(name, "expert") for name in ("ann", "bob", "cy")]
    queue = make_queue(slug="k3", overlap=3)
    other = make_trajectory(3, rollout="other", task_type="swe-feature")
    for t in [make_trajectory(4, rollout=f"d{i}") for i in range(3)]:
        for r, user in enumerate(users):
            assignment = review_services.assignment_next(queue=queue, reviewer=user)
            assert assignment is not None
            for step in assignment.trajectory.steps.order_by("index"):
                value = (step.index + r * (step.trajectory_id % 2)) % 3 - 1
                review_services.step_label_set(step=step, reviewer=user, value=value)
            if r < 2:  # the third reviewer has not submitted: not counted within the queue
                review_services.assignment_submit(assignment=assignment, reviewer=user)
        assert t
    for step in other.steps.all():
        review_services.step_label_set(step=step, reviewer=users[0], value=1)
        review_services.step_label_set(step=step, reviewer=users[1], value=-1)
    first = LabelTally.objects.filter(split=True).order_by("id").first()
    review_services.final_label_resolve(step=first.step, behaviour="", value=1, user=safety_lead)

    def shown(**params: str) -> list[tuple]:
        rows = logged_in(client, safety_lead).get("/review/disagreements/", params)
        return [
            (
                r.final is not None,
                r.step.trajectory_id,
                r.step.index,
                r.behaviour,
                r.votes,
            )
            for r in rows.context["rows"]
        ]

    assert shown() == _reference_disagreements() and shown()
    assert shown(queue="k3") == _reference_disagreements("k3")
    assert shown(task_type="swe-feature") == _reference_disagreements("", "swe-feature")
    page = logged_in(client, safety_lead).get("/review/").context
    assert page["unresolved"] == sum(1 for r in _reference_disagreements() if not r[0])


# --- Snapshots ------------------------------------------------------------------------------


def test_snapshots_follow_their_inputs(client: Client, safety_lead, reward_model) -> None:  # type: ignore[no-untyped-def]
    logged_in(client, safety_lead)
    body = client.get("/review/").content
    assert b'id="stats-as-of"' in body
    record(reward_model.active_version, "d", run="run-s", reward=0.5)
    series = client.get("/review/").context["runs_plot"]["reward"]["series"]
    assert [s["name"] for s in series] == ["run-s"]  # the new record changed the stamp


def test_with_a_broker_a_stale_snapshot_is_shown_and_refreshed_once(
    client: Client, safety_lead, reward_model, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    logged_in(client, safety_lead)
    client.get("/review/")  # the first snapshot is computed in the request
    settings.CELERY_TASK_ALWAYS_EAGER = False
    published = []
    monkeypatch.setattr(review_stats, "publish", lambda task, key: published.append(key) or True)
    StatsSnapshot.objects.update(computed_at=timezone.now() - timedelta(minutes=5))
    record(reward_model.active_version, "d", run="run-late", reward=0.5)
    first = client.get("/review/")
    assert first.context["runs_plot"]["runs"] == []  # the stored snapshot, as of before
    assert b"refreshing now" in first.content
    client.get("/review/")
    assert published == ["dashboard"]  # asked for once while it is being refreshed
    review_stats.stats_refresh(key="dashboard")  # what the worker runs
    assert client.get("/review/").context["runs_plot"]["runs"] == ["run-late"]


# --- Flag queue -----------------------------------------------------------------------------


def test_flag_queue_pages_by_cursor(client: Client, safety_lead, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        _flagged_trajectory(rollout=f"f{i}")
    ids = list(Flag.objects.filter(status="open").order_by("-id").values_list("pk", flat=True))
    monkeypatch.setattr(safety_selectors, "FLAG_PAGE_SIZE", 2)
    logged_in(client, safety_lead)
    first = client.get("/safety/flags/")
    page = first.context["page"]
    assert [r.pk for r in page.rows] == ids[:2] and page.total == len(ids)
    assert f"cursor={page.next_cursor}".encode() in first.content
    second = client.get("/safety/flags/", {"cursor": page.next_cursor}).context["page"]
    assert [r.pk for r in second.rows] == ids[2:4]


# --- Counts ---------------------------------------------------------------------------------


def test_list_counts_stop_at_the_limit(client: Client, expert, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for i in range(4):
        make_trajectory(1, rollout=f"c{i}", resolved=i % 2 == 0)
    logged_in(client, expert)
    page = client.get("/review/trajectories/").context["page"]
    assert (page.total, page.counts["resolved"], page.more) == (4, 2, False)
    monkeypatch.setattr(review_selectors, "COUNT_LIMIT", 3)
    response = client.get("/review/trajectories/")
    assert response.context["page"].more and b'id="total-count">3+<' in response.content


# --- Exports --------------------------------------------------------------------------------


def _reference_prm(qs: Any) -> list[dict[str, Any]]:
    """The PRM rows as the export built them before chunks (model instances, prefetching)."""
    rows = []
    for t in qs.defer(None).order_by("id"):
        steps = list(t.steps.order_by("index"))
        labels = {s.pk: list(s.labels.select_related("reviewer")) for s in steps}
        finals = {s.pk: list(s.final_labels.all()) for s in steps}

        def label(s: Step, b: str) -> tuple[int | None, str | None]:
            for f in finals[s.pk]:  # noqa: B023
                if f.behaviour == b:
                    return f.value, "final"
            votes = [x.value for x in labels[s.pk] if x.behaviour == b and x.value is not None]  # noqa: B023
            if not votes:
                return None, None
            v = exports.consensus(votes)
            return v, ("majority" if v is not None else "tie")

        annotators = {x.reviewer.username for s in steps for x in labels[s.pk]}
        if not annotators:
            continue
        behaviours = sorted({x.behaviour for s in steps for x in labels[s.pk]} - {""})
        overall = [label(s, "") for s in steps]
        rows.append(
            {
                "trajectory_id": t.pk,
                "id": t.external_id,
                "task_type": t.task_type,
                "prompt": exports.prompt_text(t.canonical),
                "completions": [exports.completion_text(s) for s in steps],
                "labels": [v for v, _ in overall],
                "label_sources": [src for _, src in overall],
                "behaviour_labels": {b: [label(s, b)[0] for s in steps] for b in behaviours},
                "annotators": sorted(annotators),
                "outcome": t.outcome,
            }
        )
    return rows


def _reference_annotators(qs: Any) -> list[dict[str, Any]]:
    """The per-annotator rows as the export built them before chunks (model instances): each
    annotator's labels and comments per step and the time of their last label."""
    rows = []
    for t in qs.order_by("id"):
        steps = list(t.steps.order_by("index"))
        mine: dict[str, dict[tuple[int, str], Any]] = {}
        for position, step in enumerate(steps):
            for label in step.labels.select_related("reviewer"):
                mine.setdefault(label.reviewer.username, {})[(position, label.behaviour)] = label
        for name in sorted(mine):
            own = mine[name]

            def value(position: int, behaviour: str, own: dict = own) -> int | None:
                label = own.get((position, behaviour))
                return label.value if label else None

            behaviours = sorted({b for _, b in own} - {""})
            rows.append(
                {
                    "trajectory_id": t.pk,
                    "id": t.external_id,
                    "task_type": t.task_type,
                    "annotator": name,
                    "labels": [value(i, "") for i in range(len(steps))],
                    "behaviour_labels": {
                        b: [value(i, b) for i in range(len(steps))] for b in behaviours
                    },
                    "comments": {
                        str(steps[i].index): label.comment
                        for (i, b), label in sorted(own.items(), key=lambda item: item[0])
                        if label.comment and b == ""
                    },
                    "updated_at": max(label.updated_at for label in own.values()).isoformat(),
                }
            )
    return rows


def test_chunked_exports_give_the_rows_of_before(
    client: Client, make_user, safety_lead, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    users = [make_user(name, "expert") for name in ("ann", "bob", "cy")]
    trajectories = [make_trajectory(3, rollout=f"e{i}", text="Done.") for i in range(7)]
    for i, t in enumerate(trajectories):
        for step in t.steps.order_by("index"):
            for r, user in enumerate(users[: 1 + i % 3]):
                value = [1, 0, -1][(i + r + step.index) % 3]
                review_services.step_label_set(step=step, reviewer=user, value=value)
                if (i + step.index) % 4 == 0:
                    review_services.step_label_set(
                        step=step, reviewer=user, behaviour="ran-tests", value=1, comment="ok"
                    )
            if i == 3 and step.index == 1:
                review_services.final_label_resolve(
                    step=step, behaviour="", value=-1, user=safety_lead
                )
    review_services.step_label_set(
        step=trajectories[5].steps.get(index=0), reviewer=users[0], value=None, comment="hm"
    )
    # an early label changed last: its time, not the newest label's, is the annotator's last
    review_services.step_label_set(
        step=trajectories[0].steps.get(index=0), reviewer=users[0], value=0, comment="again"
    )
    monkeypatch.setattr(exports, "CHUNK", 2)
    qs = Trajectory.objects.all()
    assert list(exports.prm_rows(qs)) == _reference_prm(qs)
    response = logged_in(client, safety_lead).get("/review/export/prm.jsonl")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(line) for line in lines] == _reference_prm(qs)
    assert lines[0] == json.dumps(_reference_prm(qs)[0], ensure_ascii=False)
    body = b"".join(client.get("/review/export/annotators.jsonl").streaming_content)
    per = [json.loads(line) for line in body.splitlines()]
    assert Counter(r["annotator"] for r in per) == {"ann": 7, "bob": 4, "cy": 2}
    reference = _reference_annotators(qs)
    assert per == reference
    assert body.decode().splitlines()[0] == json.dumps(reference[0], ensure_ascii=False)
    first = next(
        r for r in per if r["trajectory_id"] == trajectories[0].pk and r["annotator"] == "ann"
    )
    assert first["comments"]["0"] == "again"


def _label_trajectories(n: int, reviewer: Any) -> None:
    for _ in range(n):
        t = make_trajectory(2, rollout=f"sized-{Trajectory.objects.count()}", text="Done.")
        for step in t.steps.all():
            review_services.step_label_set(step=step, reviewer=reviewer, value=1)


def test_exports_cost_the_same_queries_for_5_and_50_trajectories(
    client: Client, make_user, safety_lead, settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A chunk's queries read the chunk, whatever it holds, streamed or in a background job
    (its total counted as it reads); the per-annotator rows read neither the trajectories'
    documents nor the steps' text (they hold no prompt or completion)."""
    from review.export_jobs import run_export
    from review.models import ExportJob

    settings.EXPORTS = {**settings.EXPORTS, "ROOT": str(tmp_path / "exports")}
    ann = make_user("ann", "expert")
    logged_in(client, safety_lead)
    urls = ("/review/export/prm.jsonl", "/review/export/annotators.jsonl", "job:prm")

    def exported(url: str) -> tuple[int, int, list[str]]:
        with CaptureQueriesContext(connection) as ctx:
            if url.startswith("job:"):
                job = ExportJob.objects.create(kind="prm", filters={}, created_by=safety_lead)
                assert run_export(job.pk) == "done"
                job.refresh_from_db()
                assert job.total == job.done == job.rows
                lines = job.rows
            else:
                lines = b"".join(client.get(url).streaming_content).count(b"\n")
        return lines, len(ctx.captured_queries), [q["sql"] for q in ctx.captured_queries]

    _label_trajectories(5, ann)
    small = {url: exported(url) for url in urls}
    _label_trajectories(45, ann)
    big = {url: exported(url) for url in urls}
    for url in urls:
        assert (small[url][0], big[url][0]) == (5, 50), url
        assert big[url][1] == small[url][1], (url, small[url][1], big[url][1])
    annotators_sql = " ".join(big["/review/export/annotators.jsonl"][2])
    assert '"canonical"' not in annotators_sql
    assert '"annotations_step"."text"' not in annotators_sql
    if connection.vendor == "postgresql":  # each chunk's ids as one array, not 50 parameters
        assert "= ANY(" in " ".join(big["/review/export/prm.jsonl"][2])


def test_any_of_matches_as_in_does() -> None:
    from core.queries import AnyOf

    trajectories = [make_trajectory(1, rollout=f"any-{i}") for i in range(4)]
    wanted = [trajectories[1].pk, trajectories[3].pk, 10**9]
    expected = set(Trajectory.objects.filter(pk__in=wanted).values_list("pk", flat=True))
    assert set(Trajectory.objects.filter(AnyOf("pk", wanted)).values_list("pk", flat=True)) == (
        expected
    )
    assert not Trajectory.objects.filter(AnyOf("pk", [])).exists()
    steps = Step.objects.filter(AnyOf("trajectory__external_id", ["any-2"]))
    assert set(steps.values_list("trajectory_id", flat=True)) == {trajectories[2].pk}
    # the portable form, as other databases get it
    query = Trajectory.objects.all().query
    expression = AnyOf("pk", wanted).resolve_expression(query)
    sql, params = expression.as_sql(query.get_compiler(connection=connection), connection)
    assert sql.endswith("IN (%s, %s, %s)") and params == wanted


# --- Query counts ---------------------------------------------------------------------------


def test_pages_fixed_for_scale_keep_their_query_counts(
    client: Client, make_user, safety_lead, admin_user, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    users = [make_user(name, "expert") for name in ("ann", "bob")]
    for i in range(12):
        t, _ = _flagged_trajectory(rollout=f"q{i}")
        for r, user in enumerate(users):
            for step in t.steps.all():
                review_services.step_label_set(step=step, reviewer=user, value=r * 2 - 1)
    logged_in(client, safety_lead)
    for url, most in (
        ("/review/", 22),
        ("/review/disagreements/", 12),
        ("/review/agreement/", 10),
        ("/review/trajectories/?flagged=open&labelled=yes&q=rm", 10),
        ("/safety/flags/", 10),
    ):
        client.get(url)  # snapshots made
        with django_assert_max_num_queries(most):
            assert client.get(url).status_code == 200, url
    client.force_login(admin_user)
    with django_assert_max_num_queries(14):  # no query per flag (Flag.__str__ names its step)
        assert client.get("/admin/safety/flag/").status_code == 200
    with django_assert_max_num_queries(12):
        assert client.get("/admin/annotations/steplabel/").status_code == 200


def _admin_world(n: int, version: Any) -> None:
    """``n`` flagged trajectories, each with a label and a scoring record."""
    for _ in range(n):
        i = Trajectory.objects.count()
        t, _flag = _flagged_trajectory(rollout=f"adm-{i:03d}")
        record(version, t.digest, run=f"run-{i % 3}", n=i)


ADMIN_URLS = (
    "/admin/annotations/trajectory/",
    "/admin/annotations/trajectory/?task_type=swe-bugfix&outcome=resolved",
    "/admin/annotations/trajectory/?q=adm-00",
    "/admin/annotations/step/",
    "/admin/annotations/step/?q=adm-00",
    "/admin/annotations/steplabel/",
    "/admin/safety/flag/",
    "/admin/safety/flag/?status__exact=open&severity__exact=high",
    "/admin/safety/flag/?q=adm-00",
    "/admin/rewards/scoringrecord/",
    "/admin/rewards/scoringrecord/?run=run-1",
    "/admin/rewards/scoringrecord/?q=rec-",
)


def test_admin_changelists_cost_the_same_queries_for_5_and_50_rows(
    client: Client, admin_user, make_user, reward_model
) -> None:  # type: ignore[no-untyped-def]
    """No query per row (a row's label or a column naming a related row), filtered, searched
    or not, first page or by key."""
    ann = make_user("ann", "expert")

    def counts() -> dict[str, int]:
        last = Trajectory.objects.order_by("-id").values_list("id", flat=True)[2]
        urls = [*ADMIN_URLS, f"/admin/annotations/trajectory/?id__lt={last}"]
        got = {}
        for url in urls:
            with CaptureQueriesContext(connection) as ctx:
                response = client.get(url)
            assert response.status_code == 200, url
            got[url.replace(str(last), "KEY")] = len(ctx.captured_queries)
        return got

    client.force_login(admin_user)
    _admin_world(5, reward_model.active_version)
    _label_trajectories(2, ann)
    small = counts()
    _admin_world(45, reward_model.active_version)
    _label_trajectories(20, ann)
    assert counts() == small


def test_admin_searches_read_indexes(client: Client, admin_user, reward_model) -> None:  # type: ignore[no-untyped-def]
    """The big tables' admin searches match the start of an id or digest (an index range),
    never a substring (a read of every row)."""
    _admin_world(3, reward_model.active_version)
    t = Trajectory.objects.get(external_id="adm-001")
    scoring = ScoringRecord.objects.get(trajectory_digest=t.digest)
    rule = Flag.all_versions.filter(trajectory=t).values_list("rule_id", flat=True)[0]
    client.force_login(admin_user)

    def listed(url: str, **params: str) -> tuple[set[int], list[str]]:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url, params)
        assert response.status_code == 200, url
        rows = {row.pk for row in response.context["cl"].result_list}
        return rows, [q["sql"] for q in ctx.captured_queries]

    searches = [
        ("/admin/annotations/trajectory/", {"q": "adm-001"}, {t.pk}),
        ("/admin/annotations/trajectory/", {"q": t.digest[:20]}, {t.pk}),
        ("/admin/annotations/trajectory/", {"q": "dm-001"}, set()),  # not a start
        ("/admin/annotations/step/", {"q": "adm-001"}, set(t.steps.values_list("pk", flat=True))),
        ("/admin/rewards/scoringrecord/", {"q": scoring.scoring_id}, {scoring.pk}),
        ("/admin/rewards/scoringrecord/", {"q": t.digest[:20]}, {scoring.pk}),
        (
            "/admin/safety/flag/",
            {"q": "adm-001"},
            set(Flag.all_versions.filter(trajectory=t).values_list("pk", flat=True)),
        ),
        (
            "/admin/safety/flag/",
            {"q": rule[:5]},
            set(
                Flag.all_versions.filter(rule_id__startswith=rule[:5]).values_list("pk", flat=True)
            ),
        ),
    ]
    for url, params, expected in searches:
        rows, sql = listed(url, **params)
        assert rows == expected, (url, params)
        assert not any("LIKE '%" in q or "LIKE UPPER('%" in q for q in sql), (url, params)
    rows, _ = listed("/admin/rewards/scoringrecord/", run=scoring.run)
    assert rows == set(ScoringRecord.objects.filter(run=scoring.run).values_list("pk", flat=True))


# --- Reads of the step table ------------------------------------------------------------------

STEP_READ = re.compile(
    r'(?:FROM|JOIN) "annotations_step"(?: (?!ON\b|WHERE\b|INNER\b|LEFT\b)(\w+))?'
)


def _steps_read_whole(queries: list[dict[str, Any]]) -> list[str]:
    """The queries that read the step table (the hub's largest) with no condition naming the
    steps or their trajectories: PostgreSQL answers such a join by scanning or hashing every
    step, so the page costs the hub however few rows it shows."""
    whole = []
    for query in queries:
        sql = query["sql"]
        for match in STEP_READ.finditer(sql):
            alias = match.group(1) or '"annotations_step"'
            bounds = (f'{alias}."id" = ', f'{alias}."id" IN (', f'{alias}."trajectory_id" IN (',
                      f'{alias}."trajectory_id" = ')  # fmt: skip
            if not any(bound in sql for bound in bounds):
                whole.append(sql)
    return whole


def test_the_step_reads_check_catches_a_join_of_every_step() -> None:
    joined = 'SELECT 1 FROM "annotations_steplabel" INNER JOIN "annotations_step" ON ("a" = "b")'
    scanned = 'SELECT 1 FROM "annotations_step" WHERE "annotations_step"."trajectory_id" > 0'
    aliased = 'SELECT 1 FROM "x" INNER JOIN "annotations_step" V2 ON (V0."step_id" = V2."id")'
    bounded = joined + ' WHERE "annotations_step"."trajectory_id" IN (1, 2)'
    probed = 'SELECT (SELECT 1 FROM "annotations_step" U0 WHERE U0."id" = ("l"."step_id"))'
    queries = [{"sql": sql} for sql in (joined, scanned, aliased, bounded, probed)]
    assert _steps_read_whole(queries) == [joined, scanned, aliased]


def test_exports_and_disagreements_read_the_steps_they_show(
    client: Client, make_user, safety_lead, monkeypatch, tmp_path, settings
) -> None:  # type: ignore[no-untyped-def]
    """Labelled trajectories are listed from the labels (each label's step by its key), and
    labels are counted through their steps' trajectories: no query joins the labels with every
    step. A trajectory whose only labels are in a review not yet submitted is listed but not
    exported, and a background export counts it neither in its total nor in its progress; one
    whose only label is a comment (no tally after a rebuild) is exported."""
    from review.export_jobs import run_export, start_export
    from review.models import AssignmentStatus, ExportJob, ExportStatus

    settings.EXPORTS = {**settings.EXPORTS, "ROOT": str(tmp_path / "exports")}
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    pending = make_trajectory(2, rollout="pending")
    queue = make_queue(overlap=1)
    review = review_services.assignment_next(queue=queue, reviewer=bob)
    assert review is not None and review.trajectory_id == pending.pk
    assert review.status == AssignmentStatus.IN_PROGRESS
    for step in pending.steps.all():  # bob's review is open: these do not count yet
        review_services.step_label_set(step=step, reviewer=bob, value=-1)
    counted = [make_trajectory(2, rollout=f"counted-{i}") for i in range(3)]
    for i, t in enumerate(counted):
        for r, user in enumerate((ann, bob)):
            for step in t.steps.all():
                value = 1 if (i + r + step.index) % 3 else -1
                review_services.step_label_set(step=step, reviewer=user, value=value)
    remarked = make_trajectory(2, rollout="remarked")  # a comment, no value: no tally rebuilt
    review_services.step_label_set(
        step=remarked.steps.get(index=1), reviewer=ann, value=None, comment="why this?"
    )
    review_services.label_tallies_rebuild()
    monkeypatch.setattr(exports, "CHUNK", 1)  # a window holding only the pending trajectory
    logged_in(client, safety_lead)
    for url in ("/review/export/prm.jsonl", "/review/export/annotators.jsonl"):
        with CaptureQueriesContext(connection) as ctx:
            body = b"".join(client.get(url).streaming_content)
        ids = {json.loads(line)["trajectory_id"] for line in body.splitlines()}
        assert ids == {t.pk for t in [*counted, remarked]}, url
        assert _steps_read_whole(ctx.captured_queries) == [], url
    with CaptureQueriesContext(connection) as ctx:
        rows = client.get("/review/disagreements/").context["rows"]
    assert {r.step.trajectory_id for r in rows} == {t.pk for t in counted}
    assert _steps_read_whole(ctx.captured_queries) == []

    job = start_export(kind="prm", filters={}, user=safety_lead)
    with CaptureQueriesContext(connection) as ctx:  # its total too, counted window by window
        assert run_export(job.pk) == "done"
    assert _steps_read_whole(ctx.captured_queries) == []
    job = ExportJob.objects.get(pk=job.pk)
    assert (job.status, job.total, job.done, job.rows) == (ExportStatus.DONE, 4, 4, 4)


def test_the_flag_queue_reads_no_policy_spec(client: Client, safety_lead) -> None:  # type: ignore[no-untyped-def]
    """A policy version's spec (about 90 KB of JSON) was read and parsed once per row: 0.8 s a
    page whatever the hub's size."""
    for i in range(3):
        _flagged_trajectory(rollout=f"s{i}")
    logged_in(client, safety_lead)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get("/safety/flags/", {"status": "all"})
    assert page.status_code == 200 and len(page.context["page"].rows) >= 3
    assert not [q for q in ctx.captured_queries if '"safety_policyversion"."spec"' in q["sql"]]
    assert b"rm -rf" in page.content


def test_a_long_run_is_plotted_in_a_bounded_number_of_points(
    client: Client, safety_lead, reward_model, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A run's plot holds at most PLOT_POINTS points however many training steps it has, each
    merged point at its steps' weighted mean, and dots only on sparse lines: the dashboard's
    size (and time) grew with every run's steps."""
    monkeypatch.setattr(review_stats, "PLOT_POINTS", 4)
    monkeypatch.setattr(review_stats, "DOTS_UP_TO", 3)
    version = reward_model.active_version
    for step in range(8):  # two records at step 0 (rewards 0 and 1), one at each other step
        record(version, f"d{step}", run="long", reward=step / 10, n=step)
    record(version, "d0-again", run="long", reward=1.0, n=0)
    for step in range(3):
        record(version, f"s{step}", run="short", reward=0.5, n=step)
    logged_in(client, safety_lead)
    response = client.get("/review/")
    series = {s["name"]: s for s in response.context["runs_plot"]["reward"]["series"]}
    long, short = series["long"], series["short"]
    assert len(long["points"].split()) == 4 and long["dots"] == []
    assert len(short["points"].split()) == 3 and len(short["dots"]) == 3
    assert response.content.count(b"<circle") == 3 * 2  # the short run's, in both plots
    thinned = review_stats._thin([(0, 0.5, 2), (1, 0.1, 1), (2, 0.2, 1), (3, 0.3, 1), (4, 0.4, 1)])
    assert thinned == [(0.5, pytest.approx(1.1 / 3)), (2.5, 0.25), (4.0, 0.4)]


@postgresql_only
def test_the_run_filter_reads_only_the_runs_id_range(client: Client, expert, reward_model) -> None:  # type: ignore[no-untyped-def]
    """The list filtered by a run is bounded by the run's first and last trajectory (read from
    the score links' index): walking the list newest first, PostgreSQL read every trajectory
    newer than the run's before its first match (110 ms for a run in the middle of L, 1.5 ms
    bounded). Same rows as before, for a run spread among others and for a run of none."""
    version = reward_model.active_version
    made = [make_trajectory(1, rollout=f"spread-{i}") for i in range(6)]
    for i, t in enumerate(made):
        record(version, t.digest, run="odd" if i % 2 else "even", n=i)
    logged_in(client, expert)
    with CaptureQueriesContext(connection) as ctx:
        assert list_ids(client, run="odd") == [made[5].pk, made[3].pk, made[1].pk]
    page = [
        q["sql"]
        for q in ctx.captured_queries
        if q["sql"].startswith('SELECT "annotations_trajectory"."id"') and "LIMIT 51" in q["sql"]
    ]
    assert len(page) == 1, [q["sql"][:200] for q in ctx.captured_queries]
    assert '"annotations_trajectory"."id" >= (SELECT' in page[0]
    assert '"annotations_trajectory"."id" <= (SELECT' in page[0]
    assert list_ids(client, run="even") == [made[4].pk, made[2].pk, made[0].pk]
    assert list_ids(client, run="none-such") == []
