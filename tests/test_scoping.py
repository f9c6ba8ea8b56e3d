"""Object-level scoping, tested by guessing ids across the boundary: API keys restricted to
reward models, trainers' scoring records and runs kept apart, review queues with members.
Outside its scope an object is a 404, exactly like one that does not exist."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from rest_framework.test import APIClient

from core.services import api_key_create
from review import services as review_services
from review.models import Assignment, AssignmentStatus
from rewards.models import RewardModel, ScoringRecord, TrainingRun
from rewards.services.rewards import reward_model_compile
from tests.factories import CanonicalTrajectoryFactory
from tests.test_review_services import label_all, make_queue, make_trajectory

pytestmark = pytest.mark.django_db
SCORE = "/api/v1/score/"


def _key(name: str, scopes: str, **kwargs: Any) -> APIClient:
    issued = api_key_create(name=name, scopes=scopes, **kwargs)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client


@pytest.fixture
def two_models(reward_model):  # type: ignore[no-untyped-def]
    """swe-bugfix-default (run A's) and swe-bugfix-strict (run B's), both compiled."""
    other = RewardModel.objects.create(
        slug="swe-bugfix-strict", name="Strict", task_type=reward_model.task_type
    )
    reward_model_compile(reward_model=other, user=None, activate=True)
    return reward_model, other


def _score(client: APIClient, ref: str) -> Any:
    body = {"reward_model": ref, "trajectory": CanonicalTrajectoryFactory()}
    return client.post(SCORE, body, format="json")


def test_a_key_restricted_to_one_reward_model_cannot_use_or_read_another(
    two_models, recorder, key_client
) -> None:  # type: ignore[no-untyped-def]
    a, b = two_models
    trainer_a = _key("run-a", "score,read", reward_models=[a.slug])
    assert _score(trainer_a, a.slug).status_code == 200
    assert _score(trainer_a, f"{a.slug}@1").status_code == 200
    # Out of scope answers exactly like a reward model that does not exist.
    for ref, missing in ((b.slug, "no-such-model"), (f"{b.slug}@1", "no-such-model@1")):
        denied, unknown = _score(trainer_a, ref), _score(trainer_a, missing)
        assert denied.status_code == unknown.status_code == 404
        assert denied.json()["errors"] == {
            k: [m.replace(missing, ref) for m in v] for k, v in unknown.json()["errors"].items()
        }
    batch = {"reward_model": b.slug, "trajectories": [CanonicalTrajectoryFactory()]}
    assert trainer_a.post("/api/v1/score/batch/", batch, format="json").status_code == 404
    openrlhf = trainer_a.post(f"/api/v1/openrlhf/{b.slug}/", {"query": ["x"]}, format="json")
    assert openrlhf.status_code == 404

    assert [m["slug"] for m in trainer_a.get("/api/v1/reward-models/").json()["results"]] == [
        a.slug
    ]
    for path in ("", "versions/", "diff/?a=1&b=1"):
        assert trainer_a.get(f"/api/v1/reward-models/{b.slug}/{path}").status_code == 404
        assert trainer_a.get(f"/api/v1/reward-models/{a.slug}/{path}").status_code == 200

    # Scorings of B, even by an unrestricted key of the same owner, stay invisible to A's key.
    owner = trainer_a.get("/api/v1/reward-models/").wsgi_request.user
    same_owner_any_model = _key("run-b", "score", user=owner)
    assert _score(same_owner_any_model, b.slug).status_code == 200
    recorder.flush()
    seen = {r["reward_model"] for r in trainer_a.get("/api/v1/scorings/").json()["results"]}
    assert seen == {f"{a.slug}@1"}
    assert ScoringRecord.objects.filter(version__reward_model=b).count() == 1
    # The unrestricted key still scores with anything.
    assert _score(key_client("score"), b.slug).status_code == 200


def test_read_keys_see_only_their_owners_scorings_unless_the_owner_is_staff(
    reward_model, recorder, make_user
) -> None:  # type: ignore[no-untyped-def]
    trainer_1 = make_user("trainer-1")
    trainer_2 = make_user("trainer-2")
    scorer_1 = _key("t1-score", "score", user=trainer_1)
    reader_1 = _key("t1-read", "read", user=trainer_1)
    scorer_2 = _key("t2-score", "score,read", user=trainer_2)
    mine = _score(scorer_1, reward_model.slug).json()["scoring_id"]
    theirs = _score(scorer_2, reward_model.slug).json()["scoring_id"]
    recorder.flush()
    row = ScoringRecord.objects.get(scoring_id=mine)
    assert row.scored_by_id == trainer_1.pk and row.api_key_id is not None

    def ids(client: APIClient, query: str = "") -> set[str]:
        return {r["scoring_id"] for r in client.get(f"/api/v1/scorings/{query}").json()["results"]}

    assert ids(reader_1) == {mine}  # another key of the same owner
    assert ids(scorer_2) == {theirs}
    assert ids(reader_1, f"?run={''}&unsafe=false") <= {mine}
    staff = make_user("ops", staff=True)
    assert ids(_key("ops-read", "read", user=staff)) == {mine, theirs}
    expert = make_user("erin", "expert")
    session = APIClient()
    session.force_authenticate(expert)
    assert {r["scoring_id"] for r in session.get("/api/v1/scorings/").json()["results"]} == {
        mine,
        theirs,
    }


def test_trainers_report_only_to_their_own_runs(reward_model, make_user) -> None:  # type: ignore[no-untyped-def]
    run_a = _key("run-a", "score")
    run_b = _key("run-b", "score,read")
    created = run_a.post("/api/v1/training-runs/", {"name": "run-a"}, format="json")
    assert created.status_code == 201
    metrics = {"step": 1, "metrics": {"reward/mean": 0.5}}
    assert run_a.post("/api/v1/training-runs/run-a/metrics/", metrics, format="json").status_code
    assert (
        run_b.post("/api/v1/training-runs/run-a/metrics/", metrics, format="json").status_code
        == 404
    )
    taken = run_b.post("/api/v1/training-runs/", {"name": "run-a"}, format="json")
    assert taken.status_code == 400 and "name" in taken.json()["errors"]
    assert TrainingRun.objects.get(name="run-a").metrics.count() == 1
    # Reading stays open to read keys: runs are the team's dashboards.
    assert run_b.get("/api/v1/training-runs/run-a/").status_code == 200


# --- review queues ------------------------------------------------------------------------------


def _login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_queue_members_alone_see_claim_and_submit(make_user, safety_lead) -> None:  # type: ignore[no-untyped-def]
    ann, bob, cay = (make_user(n, "expert") for n in ("ann", "bob", "cay"))
    trajectory = make_trajectory(1)
    queue = make_queue(slug="team-a", name="Team A", overlap=2)
    queue.members.add(ann)
    team = Group.objects.create(name="team-c")
    cay.groups.add(team)
    open_queue = make_queue(slug="everyone", name="Everyone", blind=False, overlap=3)

    assert b"Team A" in _login(ann).get("/review/queues/").content
    assert b"Team A" not in _login(bob).get("/review/queues/").content
    assert b"Team A" not in _login(bob).get("/review/").content
    assert b"Everyone" in _login(bob).get("/review/queues/").content
    assert b"Team A" in _login(safety_lead).get("/review/queues/").content  # leads: all

    assert _login(bob).post("/review/queues/team-a/next/").status_code == 404
    assert _login(cay).post("/review/queues/team-a/next/").status_code == 404
    queue.teams.add(team)
    assert _login(cay).post("/review/queues/team-a/next/").status_code == 302

    response = _login(ann).post("/review/queues/team-a/next/")
    assert response["Location"] == f"/review/trajectories/{trajectory.pk}/?queue=team-a"
    mine = Assignment.objects.get(reviewer=ann, queue=queue)
    label_all(trajectory, ann, -1)
    # Bob guesses Ann's assignment id: as if it did not exist, and nothing changes.
    for action in ("submit", "release"):
        response = _login(bob).post(f"/review/assignments/{mine.pk}/{action}/")
        assert response.status_code == 404
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.IN_PROGRESS

    # Bob reaches the same trajectory through the open queue: Ann's labels, made in a blind
    # queue she has not submitted yet, stay hidden from him, and from leads too (#23: blind
    # means blind for every role that labels).
    bobs = review_services.assignment_next(queue=open_queue, reviewer=bob)
    assert bobs is not None and bobs.trajectory_id == trajectory.pk
    page = _login(bob).get(f"/review/trajectories/{trajectory.pk}/?queue=team-a")
    assert page.status_code == 200
    assert not [o for sv in page.context["page"].steps for o in sv.others]
    assert page.context["page"].assignment == bobs  # not Ann's, whatever ?queue= says
    lead_page = _login(safety_lead).get(f"/review/trajectories/{trajectory.pk}/")
    assert not [o for sv in lead_page.context["page"].steps for o in sv.others]
    # Once Ann submits, the open queue shows her labels as before, and so does the lead's page.
    response = _login(ann).post(f"/review/assignments/{mine.pk}/submit/")
    assert response.status_code == 302
    page = _login(bob).get(f"/review/trajectories/{trajectory.pk}/")
    assert [o.reviewer.username for sv in page.context["page"].steps for o in sv.others] == ["ann"]
    lead_page = _login(safety_lead).get(f"/review/trajectories/{trajectory.pk}/")
    assert [o.reviewer.username for sv in lead_page.context["page"].steps for o in sv.others] == [
        "ann"
    ]


def test_a_removed_member_loses_the_queue(make_user) -> None:  # type: ignore[no-untyped-def]
    ann, bob = make_user("ann", "expert"), make_user("bob", "expert")
    make_trajectory(1)
    queue = make_queue(slug="team-a")
    queue.members.add(ann, bob)
    assignment = review_services.assignment_next(queue=queue, reviewer=ann)
    assert assignment is not None
    queue.members.remove(ann)
    client = _login(ann)
    assert client.post("/review/queues/team-a/next/").status_code == 404
    assert client.post(f"/review/assignments/{assignment.pk}/release/").status_code == 404
    assert b"team-a" not in client.get("/review/").content


# --- rollouts routed to review, training runs (issue #22, item 4) -------------------------------


def _routed(client: APIClient, ref: str, tag: str, recorder) -> int:  # type: ignore[no-untyped-def]
    """Score a flagged rollout; once its record is written it is imported for review."""
    body = {
        "reward_model": ref,
        "trajectory": CanonicalTrajectoryFactory(command=f"rm -rf ~/ # {tag}"),
        "rollout": {"run": f"run-{tag}", "step": 1},
    }
    response = client.post(SCORE, body, format="json")
    assert response.status_code == 200 and response.json()["findings"]
    recorder.flush()
    from annotations.models import Trajectory

    return Trajectory.objects.get(external_id=body["trajectory"]["id"]).pk


def test_routed_rollouts_are_scoped_like_their_scoring_records(
    two_models, recorder, make_user
) -> None:  # type: ignore[no-untyped-def]
    from annotations.services import trajectory_import

    a, b = two_models
    trainer_1, trainer_2 = make_user("trainer-1"), make_user("trainer-2")
    only_a = _key("t1-a", "score,read", user=trainer_1, reward_models=[a.slug])
    t1_any = _key("t1-any", "score,read", user=trainer_1)
    t2_any = _key("t2-any", "score,read", user=trainer_2)
    mine_a = _routed(only_a, a.slug, "1a", recorder)
    mine_b = _routed(t1_any, b.slug, "1b", recorder)  # same owner, another reward model
    theirs = _routed(t2_any, a.slug, "2a", recorder)  # another trainer, same reward model
    plain = trajectory_import(record=CanonicalTrajectoryFactory()).trajectory.pk  # not routed

    def listed(client: APIClient) -> set[int]:
        return {t["id"] for t in client.get("/api/v1/trajectories/").json()["results"]}

    assert listed(only_a) == {mine_a, plain}
    assert listed(t1_any) == {mine_a, mine_b, plain}
    assert listed(t2_any) == {theirs, plain}
    for client, hidden in ((only_a, mine_b), (only_a, theirs), (t2_any, mine_a)):
        assert client.get(f"/api/v1/trajectories/{hidden}/").status_code == 404
    detail = only_a.get(f"/api/v1/trajectories/{mine_a}/").json()
    assert detail["metadata"]["scoring"]["reward_model"]["slug"] == a.slug
    # Staff-owned and session users see every trajectory, as with scoring records.
    staff = _key("ops", "read", user=make_user("ops", staff=True))
    assert listed(staff) == {mine_a, mine_b, theirs, plain}
    expert = APIClient()
    expert.force_authenticate(make_user("erin", "expert"))
    assert listed(expert) == {mine_a, mine_b, theirs, plain}


def test_a_key_restricted_to_reward_models_reads_and_writes_only_their_runs(
    two_models, make_user
) -> None:  # type: ignore[no-untyped-def]
    a, b = two_models
    owner = make_user("trainer-1")
    only_a = _key("t1-a", "score,read", user=owner, reward_models=[a.slug])
    anyone = _key("t1-any", "score,read", user=owner)
    for name, model in (("run-a", a.slug), ("run-a-pinned", f"{a.slug}@1"), ("run-b", b.slug)):
        body = {"name": name, "reward_model": model}
        assert anyone.post("/api/v1/training-runs/", body, format="json").status_code == 201

    runs = {r["name"] for r in only_a.get("/api/v1/training-runs/").json()["results"]}
    assert runs == {"run-a", "run-a-pinned"}
    assert only_a.get("/api/v1/training-runs/run-b/").status_code == 404
    assert only_a.get("/api/v1/training-runs/run-a/").status_code == 200
    metrics = {"step": 1, "metrics": {"reward/mean": 0.5}}
    url = "/api/v1/training-runs/{}/metrics/"
    assert only_a.post(url.format("run-b"), metrics, format="json").status_code == 404
    assert only_a.post(url.format("run-a"), metrics, format="json").status_code == 200
    for model in (b.slug, f"{b.slug}@1", ""):
        body = {"name": "run-new", "reward_model": model}
        response = only_a.post("/api/v1/training-runs/", body, format="json")
        assert response.status_code == 400 and "reward_model" in response.json()["errors"]
    assert not TrainingRun.objects.filter(name="run-new").exists()
    body = {"name": "run-new", "reward_model": a.slug}
    assert only_a.post("/api/v1/training-runs/", body, format="json").status_code == 201
    # The unrestricted key still reads every run (runs are the team's dashboards).
    assert len(anyone.get("/api/v1/training-runs/").json()["results"]) == 4
