"""The reward domain over HTTP: score (C2), batch, OpenRLHF (C3), CRUD, compile and roles."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from annotations.models import Trajectory
from rewards.models import RewardModelVersion, ScoringRecord, TrustedBehaviour
from tests.factories import CanonicalTrajectoryFactory

pytestmark = pytest.mark.django_db
SCORE = "/api/v1/score/"
BATCH = "/api/v1/score/batch/"


def honest() -> dict:
    return CanonicalTrajectoryFactory(command="pytest -q tests/test_parser.py")


def hacked() -> dict:
    record = CanonicalTrajectoryFactory(command="rm tests/test_parser.py && pytest -q")
    record["outcome"] = {"resolved": True, "tests_passed": 12, "tests_failed": 0}
    return record


def test_score_contract_and_honest_beats_hacked(reward_model, key_client, recorder) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score")
    good = client.post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
    )
    bad = client.post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": hacked()}, format="json"
    )
    assert good.status_code == bad.status_code == 200, (good.json(), bad.json())
    g, b = good.json(), bad.json()
    for body in (g, b):
        assert {
            "reward",
            "outcome_reward",
            "process_reward",
            "gated",
            "steps",
            "findings",
            "reward_model",
            "scoring_id",
        } <= set(body)
        assert body["reward"] == body["outcome_reward"] + body["process_reward"]
        assert body["reward_model"] == {
            "slug": "swe-bugfix-default",
            "version": 1,
            "digest": reward_model.active_version.digest,
        }
        assert [s["step"] for s in body["steps"]] == [0, 1]
    assert g["reward"] > b["reward"]
    assert b["gated"] is True and b["steps"][0]["findings"][0]["category"] == "test-tampering"
    assert b["findings"][0]["step"] == 0
    # Deterministic: the same request scores the same.
    again = client.post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": hacked()}, format="json"
    )
    assert again.json()["reward"] == b["reward"] and again.json()["scoring_id"] != b["scoring_id"]


def test_scoring_is_recorded_off_the_request_and_flagged_rollouts_reach_review(
    reward_model, key_client, recorder
) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score")
    rollout = {"run": "r1", "step": 12, "sample": "g3"}
    body = client.post(
        SCORE,
        {"reward_model": "swe-bugfix-default", "trajectory": hacked(), "rollout": rollout},
        format="json",
    ).json()
    assert not ScoringRecord.objects.exists()  # nothing written during the request
    assert recorder.pending() == 1
    assert recorder.flush() == 1
    record = ScoringRecord.objects.get(scoring_id=body["scoring_id"])
    assert (record.run, record.step, record.sample) == ("r1", 12, "g3")
    assert record.unsafe and record.reward == body["reward"]
    stored = Trajectory.objects.get(metadata__scoring__scoring_id=body["scoring_id"])
    assert stored.metadata["scoring"]["rollout"] == rollout


@pytest.mark.parametrize(
    ("payload", "status", "field"),
    [
        ({}, 400, "reward_model"),
        ({"reward_model": "swe-bugfix-default"}, 400, "trajectory"),
        (
            {"reward_model": "swe-bugfix-default", "trajectory": {"messages": "x"}},
            400,
            "trajectory.messages",
        ),
        ({"reward_model": "nope", "trajectory": {"messages": []}}, 404, None),
        ({"reward_model": "swe-bugfix-default@99", "trajectory": {"messages": []}}, 404, None),
        ({"reward_model": "swe-bugfix-default@x", "trajectory": {"messages": []}}, 404, None),
        ({"reward_model": "swe-bugfix-default", "trajectory": [1, 2]}, 400, "trajectory"),
    ],
)
def test_score_errors_name_the_field(reward_model, key_client, payload, status, field) -> None:  # type: ignore[no-untyped-def]
    response = key_client("score").post(SCORE, payload, format="json")
    assert response.status_code == status, response.json()
    if field:
        assert any(k.startswith(field) for k in response.json()["errors"]), response.json()


def test_bad_message_is_named_with_its_index(reward_model, key_client) -> None:  # type: ignore[no-untyped-def]
    trajectory = honest()
    trajectory["messages"][3] = {"role": "tool", "content": 5}
    response = key_client("score").post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": trajectory}, format="json"
    )
    assert response.status_code == 400
    assert any(k.startswith("trajectory.messages[3]") for k in response.json()["errors"])


def test_size_limits_give_413(reward_model, key_client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.REWARDHUB_LIMITS = {**settings.REWARDHUB_LIMITS, "MAX_MESSAGES": 3}
    response = key_client("score").post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
    )
    assert response.status_code == 413
    settings.SCORING = {**settings.SCORING, "MAX_BATCH": 1}
    response = key_client("score").post(
        BATCH, {"reward_model": "swe-bugfix-default", "trajectories": [{}, {}]}, format="json"
    )
    assert response.status_code == 413


def test_throttled_key_gets_429(reward_model, key_client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from django.core.cache import cache

    cache.clear()
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"score": "2/min"})
    client = key_client("score")
    codes = [
        client.post(
            SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
        ).status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    cache.clear()


def test_batch_keeps_order_and_names_bad_items(reward_model, key_client, recorder) -> None:  # type: ignore[no-untyped-def]
    client = key_client("score")
    response = client.post(
        BATCH,
        {"reward_model": "swe-bugfix-default", "trajectories": [hacked(), honest(), hacked()]},
        format="json",
    )
    assert response.status_code == 200
    rewards = [r["reward"] for r in response.json()["results"]]
    assert rewards[0] == rewards[2] < rewards[1]
    broken = client.post(
        BATCH,
        {"reward_model": "swe-bugfix-default", "trajectories": [honest(), {"messages": 3}]},
        format="json",
    )
    assert broken.status_code == 400
    assert any(k.startswith("trajectories[1].messages") for k in broken.json()["errors"])


def test_openrlhf_endpoint_with_key_in_path(reward_model, recorder, caplog) -> None:  # type: ignore[no-untyped-def]
    from core.services import api_key_create

    secret = api_key_create(name="openrlhf", scopes="score").secret
    prompt = "<|im_start|>user\nFix the failing test.<|im_end|>\n<|im_start|>assistant\n"
    safe = (
        prompt
        + '<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q"}}\n</tool_call>'
    )
    unsafe = prompt + "```bash\nrm -rf tests/\n```\nDone."
    payload = {
        "query": [safe, unsafe],
        "prompts": [prompt, prompt],
        "labels": [{"resolved": True}] * 2,
    }
    client = APIClient()
    with caplog.at_level(logging.INFO):
        response = client.post(
            f"/api/v1/openrlhf/swe-bugfix-default/{secret}/", payload, format="json"
        )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert len(body["rewards"]) == len(body["scores"]) == 2
    assert body["rewards"][0] > body["rewards"][1]
    assert all(0.0 <= s <= 1.0 for s in body["scores"])
    assert all(len(v) == 2 for v in body["extra_logs"].values()) and body["extra_logs"][
        "unsafe"
    ] == [0.0, 1.0]
    assert body["process_rewards"][1][0]["offset"] > 0
    # The key works as a header too, and a wrong key in the path is refused without being logged.
    header = APIClient()
    header.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert (
        header.post("/api/v1/openrlhf/swe-bugfix-default/", payload, format="json").status_code
        == 200
    )
    wrong = secret[:-4] + "zzzz"
    with caplog.at_level(logging.INFO):
        assert (
            client.post(
                f"/api/v1/openrlhf/swe-bugfix-default/{wrong}/", payload, format="json"
            ).status_code
            == 401
        )
    assert secret not in caplog.text and wrong not in caplog.text
    mismatch = header.post(
        "/api/v1/openrlhf/swe-bugfix-default/", {"query": ["a"], "prompts": []}, format="json"
    )
    assert mismatch.status_code == 400 and "prompts" in mismatch.json()["errors"]


def test_compile_activate_rollback_and_diff(reward_model, expert, client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(expert)
    base = "/api/v1/reward-models/swe-bugfix-default/"
    same = client.post(f"{base}compile/", {}, format="json")
    assert (
        same.status_code == 200 and same.json()["created"] is False and same.json()["number"] == 1
    )

    behaviour = TrustedBehaviour.objects.get(
        task_type=reward_model.task_type, slug="read-before-edit"
    )
    patched = client.patch(f"/api/v1/behaviours/{behaviour.pk}/", {"weight": 0.04}, format="json")
    assert patched.status_code == 200
    compiled = client.post(
        f"{base}compile/", {"note": "heavier reading", "activate": True}, format="json"
    )
    assert compiled.status_code == 201 and compiled.json()["number"] == 2
    assert client.get(base).json()["active_version"] == 2

    diff = client.get(f"{base}diff/", {"a": 1, "b": 2}).json()
    assert diff["policy_changed"] is False
    assert {
        "path": "behaviors.read-before-edit.weight",
        "kind": "changed",
        "before": 0.02,
        "after": 0.04,
    } in diff["changes"]

    assert client.post(f"{base}rollback/").json()["active_version"] == 1
    assert client.post(f"{base}rollback/").status_code == 400
    assert (
        client.post(f"{base}activate/", {"version": 2}, format="json").json()["active_version"] == 2
    )
    assert client.post(f"{base}activate/", {"version": 7}, format="json").status_code == 404
    versions = client.get(f"{base}versions/").json()
    assert [v["number"] for v in versions] == [2, 1]
    assert "spec" in client.get(f"{base}versions/", {"number": 1}).json()


def test_compiled_versions_are_immutable(reward_model) -> None:  # type: ignore[no-untyped-def]
    version = RewardModelVersion.objects.get(pk=reward_model.active_version_id)
    version.spec = {"tampered": True}
    with pytest.raises(ValidationError):
        version.save()
    with pytest.raises(ValidationError):
        version.delete()
    assert "tampered" not in RewardModelVersion.objects.get(pk=version.pk).spec


def test_invalid_inputs_do_not_compile(reward_model, expert, client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(expert)
    bad = client.post(
        "/api/v1/behaviours/",
        {"task_type": "swe-bugfix", "slug": "x", "name": "X", "detector": {"kind": "telepathy"}},
        format="json",
    )
    assert bad.status_code == 400 and "detector" in bad.json()["errors"]
    negative = client.patch(
        "/api/v1/reward-models/swe-bugfix-default/",
        {"process_bounds": {"step_min": "a"}},
        format="json",
    )
    assert negative.status_code == 200  # stored as given; compiling names the bad path
    failed = client.post("/api/v1/reward-models/swe-bugfix-default/compile/", {}, format="json")
    assert failed.status_code == 400
    assert any(k.startswith("spec.process.step_min") for k in failed.json()["errors"])
    task = client.patch(
        "/api/v1/task-types/swe-bugfix/", {"workspace_roots": ["relative"]}, format="json"
    )
    assert task.status_code == 400 and "workspace_roots" in task.json()["errors"]


ENDPOINTS = [
    ("get", "/api/v1/trajectories/", None),
    ("post", "/api/v1/trajectories/", "trajectory"),
    ("post", "/api/v1/analyze/", {"commands": ["ls"]}),
    ("post", SCORE, "score"),
    ("post", BATCH, "batch"),
    ("get", "/api/v1/task-types/", None),
    ("patch", "/api/v1/task-types/swe-bugfix/", {"description": "changed"}),
    ("get", "/api/v1/reward-models/", None),
    ("post", "/api/v1/reward-models/swe-bugfix-default/compile/", {}),
    ("get", "/api/v1/scorings/", None),
]
# Expected "allowed" per principal, in ENDPOINTS order.
MATRIX = {
    "anonymous": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    "no-role": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    "expert": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    "safety_lead": [1, 1, 1, 1, 1, 1, 0, 1, 1, 1],
    "admin": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    "key:score": [0, 0, 0, 1, 1, 0, 0, 0, 0, 0],
    "key:read": [1, 0, 0, 0, 0, 1, 0, 1, 0, 1],
    "key:write": [0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    "key:analyze": [0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
}


@pytest.mark.parametrize("principal", list(MATRIX))
def test_permission_matrix(
    principal, reward_model, make_user, client_for, key_client, recorder
) -> None:  # type: ignore[no-untyped-def]
    from core.roles import ADMIN, EXPERT, SAFETY_LEAD

    if principal == "anonymous":
        client = APIClient()
    elif principal.startswith("key:"):
        client = key_client(principal[4:])
    else:
        roles = {
            "no-role": (),
            "expert": (EXPERT,),
            "safety_lead": (SAFETY_LEAD,),
            "admin": (ADMIN,),
        }
        client = client_for(make_user(f"u-{principal}", *roles[principal]))
    bodies = {
        "trajectory": CanonicalTrajectoryFactory(),
        "score": {"reward_model": "swe-bugfix-default", "trajectory": honest()},
        "batch": {"reward_model": "swe-bugfix-default", "trajectories": [honest()]},
    }
    allowed = []
    for method, url, body in ENDPOINTS:
        payload = bodies.get(body, body) if isinstance(body, str) else body
        response = (
            getattr(client, method)(url, payload, format="json")
            if payload is not None
            else client.get(url)
        )
        assert response.status_code != 500
        allowed.append(0 if response.status_code in (401, 403) else 1)
    assert allowed == MATRIX[principal]


def test_score_trajectories_command(reward_model, tmp_path: Path, capsys, recorder) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "rollouts.jsonl"
    source.write_text(
        "\n".join(
            [json.dumps(honest()), "{oops", json.dumps({"messages": 1}), json.dumps(hacked())]
        )
    )
    call_command(
        "score_trajectories", str(source), "--reward-model", "swe-bugfix-default", "--no-progress"
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4
    assert lines[1]["line"] == 2 and "non_field_errors" in lines[1]["errors"]
    assert lines[2]["line"] == 3 and "messages" in lines[2]["errors"]
    assert lines[0]["reward"] > lines[3]["reward"]
    assert ScoringRecord.objects.count() == 2


def test_score_trajectories_names_the_line_of_any_bad_input(
    reward_model, tmp_path: Path, capsys, recorder
) -> None:  # type: ignore[no-untyped-def]
    """Input a trajectory file may hold that json.loads alone would crash on or let through."""
    deep = "[" * 5000 + "]" * 5000
    listed_rollout = {**honest(), "rollout": ["r1", 3]}
    huge_step = {**honest(), "rollout": {"run": "r1", "step": 10**12}}
    source = tmp_path / "rollouts.jsonl"
    source.write_text(
        "\n".join(
            [
                deep,
                '{"messages": NaN}',
                json.dumps(listed_rollout),
                json.dumps(huge_step),
                json.dumps(honest()),
            ]
        )
    )
    call_command(
        "score_trajectories", str(source), "--reward-model", "swe-bugfix-default", "--no-progress"
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("line") for line in lines] == [1, 2, 3, 4, None]
    assert "nested deeper than" in lines[0]["errors"]["non_field_errors"][0]
    assert "NaN" in lines[1]["errors"]["non_field_errors"][0]
    assert lines[2]["errors"] == {"rollout": ["expected an object or null"]}
    assert list(lines[3]["errors"]) == ["rollout.step"]
    assert "reward" in lines[4]
    assert ScoringRecord.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_background_thread_writes_records(reward_model, key_client, recorder, settings) -> None:  # type: ignore[no-untyped-def]
    import time

    settings.SCORING = {
        **settings.SCORING,
        "RECORD_IN_BACKGROUND": True,
        "RECORD_FLUSH_SECONDS": 0.05,
    }
    client = key_client("score")
    body = client.post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
    ).json()
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline
        and not ScoringRecord.objects.filter(scoring_id=body["scoring_id"]).exists()
    ):
        time.sleep(0.05)
    assert ScoringRecord.objects.filter(scoring_id=body["scoring_id"]).exists()
    settings.SCORING = {**settings.SCORING, "RECORD_IN_BACKGROUND": False}
    recorder._wake.set()  # let the thread see the setting and stop


def test_resolve_reward_model_is_one_query_and_follows_activation(
    reward_model, expert, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    from rewards.models import RewardModel
    from rewards.services import rewards as reward_services
    from rewards.services import scoring as scoring_services

    first = scoring_services.resolve_reward_model("swe-bugfix-default")
    assert first.pk == reward_model.active_version_id
    with django_assert_num_queries(1):  # the version itself is cached, the active id is not
        assert scoring_services.resolve_reward_model("swe-bugfix-default").pk == first.pk
    RewardModel.objects.filter(pk=reward_model.pk).update(outcome_weight=0.75)
    compiled = reward_services.reward_model_compile(
        reward_model=reward_model, user=expert, activate=True
    )
    second = scoring_services.resolve_reward_model("swe-bugfix-default")
    assert second.pk == compiled.version.pk != first.pk
    RewardModel.objects.filter(pk=reward_model.pk).update(active_version=None)
    with pytest.raises(scoring_services.UnknownRewardModel, match="no active version"):
        scoring_services.resolve_reward_model("swe-bugfix-default")
    with pytest.raises(scoring_services.UnknownRewardModel, match="unknown reward model"):
        scoring_services.resolve_reward_model("no-such-model")


def test_a_rescored_rollout_is_routed_to_review_once(reward_model, key_client, recorder) -> None:  # type: ignore[no-untyped-def]
    client, rollout = key_client("score"), hacked()
    for _ in range(3):
        client.post(
            SCORE, {"reward_model": "swe-bugfix-default", "trajectory": rollout}, format="json"
        )
    assert recorder.flush() == 3
    assert ScoringRecord.objects.count() == 3
    assert Trajectory.objects.filter(metadata__scoring__isnull=False).count() == 1


def test_records_are_written_whole_and_a_retried_batch_skips_what_was_written(
    reward_model, key_client, recorder
) -> None:  # type: ignore[no-untyped-def]
    from rewards.services.scoring import _record_values

    client = key_client("score")
    rollouts = [
        {"run": "r1", "step": 7, "sample": "a"},
        {"run": "x" * 300, "step": "7", "sample": 5},  # run cut to 200 chars; "7" is step 7
        {},
    ]
    for rollout, trajectory in zip(rollouts, [honest(), hacked(), honest()], strict=True):
        payload = {"reward_model": "swe-bugfix-default", "trajectory": trajectory}
        assert client.post(SCORE, {**payload, "rollout": rollout}, format="json").status_code == 200
    queued = list(recorder._queue)
    assert recorder.flush() == 3
    for item in queued:
        stored = ScoringRecord.objects.filter(scoring_id=item.scoring_id).values().get()
        expected = _record_values(item)
        expected["breakdown"] = json.loads(expected["breakdown"])  # queued as JSON text
        assert {name: stored[name] for name in expected} == expected
    assert [r["run"] for r in ScoringRecord.objects.order_by("id").values("run")][1] == "x" * 200

    # A flush that failed after its rows were written retries them with new ones: no error,
    # the new one is written, nothing twice.
    client.post(
        SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
    )
    fresh = recorder._queue.popleft()
    for item in [*queued, fresh]:
        recorder.add(item)
    assert recorder.flush() == 4
    assert ScoringRecord.objects.count() == 4
    assert ScoringRecord.objects.filter(scoring_id=fresh.scoring_id).exists()


@pytest.mark.parametrize(
    ("step", "status"),
    [(2**31 - 1, 200), (2**31, 400), (-(2**31) - 1, 400), (True, 400), ("x", 400), (None, 200)],
)
def test_a_rollout_step_the_record_cannot_hold_is_400(
    reward_model, key_client, recorder, step, status
) -> None:  # type: ignore[no-untyped-def]
    payload = {"reward_model": "swe-bugfix-default", "trajectory": honest(), "rollout": {}}
    payload["rollout"] = {"run": "r", "step": step, "tag": "kept"}
    response = key_client("score").post(SCORE, payload, format="json")
    assert response.status_code == status, response.json()
    if status == 400:
        assert list(response.json()["errors"]) == ["rollout.step"]
        assert recorder.pending() == 0
    else:
        assert recorder.flush() == 1
        assert ScoringRecord.objects.get().step == step


def test_a_record_the_database_refuses_costs_only_itself(
    reward_model, key_client, recorder
) -> None:  # type: ignore[no-untyped-def]
    """Should a bad value get past validation, the other records are still written."""
    client = key_client("score")
    for _ in range(3):
        client.post(
            SCORE, {"reward_model": "swe-bugfix-default", "trajectory": honest()}, format="json"
        )
    bad = recorder._queue[1]
    bad.rollout = {"step": 10**12}  # out of the integer column's range
    assert recorder.flush() == 2
    assert recorder.rejected == 1 and recorder.pending() == 0
    assert ScoringRecord.objects.count() == 2
    assert not ScoringRecord.objects.filter(scoring_id=bad.scoring_id).exists()


@pytest.mark.parametrize("path", [SCORE, BATCH])
def test_a_scored_body_is_freed_without_the_cyclic_collector(  # type: ignore[no-untyped-def]
    path, reward_model, key_client, recorder, settings
) -> None:
    """DRF holds a parsed body in reference cycles (request, serializer, view and response);
    left there, every batch's trajectories waited for the cyclic collector, which traced them
    on each pass: a tenth of a batch request's CPU. The score views release them instead."""
    settings.SCORING = {**settings.SCORING, "REVIEW_SAMPLE_RATE": 0.0}  # nothing kept to review
    client = key_client("score")
    trajectory = honest()
    trajectory["id"] = "freed-without-the-collector"
    body = {"reward_model": "swe-bugfix-default"}
    body.update({"trajectory": trajectory} if path == SCORE else {"trajectories": [trajectory] * 3})
    client.post(path, body, format="json")  # warm: imports, caches, the version
    gc.collect()
    gc.disable()
    try:
        response = client.post(path, body, format="json")
        alive = [o for o in gc.get_objects() if type(o) is dict and o.get("id") == trajectory["id"]]
    finally:
        gc.enable()
    assert response.status_code == 200, response.content
    assert [o for o in alive if o is not trajectory] == []  # only the test's own copy


def test_api_docs_describe_c1_and_c2(key_client, reward_model) -> None:  # type: ignore[no-untyped-def]
    """#23.13: the schema names the C1 trajectory's fields and C2's answer (they were free-form
    objects), and a real answer carries every field the docs mark required."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    parts = schema["components"]["schemas"]
    score = schema["paths"]["/api/v1/score/"]["post"]
    body = score["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    field = parts[body]["properties"]["trajectory"]
    c1 = parts[(field.get("$ref") or field["allOf"][0]["$ref"]).split("/")[-1]]
    assert c1["required"] == ["messages"]
    assert {"id", "task_type", "messages", "outcome", "patch", "metadata"} <= set(c1["properties"])
    answer = score["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    c2 = parts[answer.split("/")[-1]]
    assert {"reward", "outcome_reward", "process_reward", "gated", "steps"} <= set(c2["required"])

    response = key_client("score").post(
        "/api/v1/score/",
        {"reward_model": reward_model.slug, "trajectory": hacked()},
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert set(c2["required"]) <= set(data)
    step_doc = parts[c2["properties"]["steps"]["items"]["$ref"].split("/")[-1]]
    assert all(set(step_doc["required"]) <= set(step) for step in data["steps"])
