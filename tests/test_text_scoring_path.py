"""One scoring path: text rollouts (C3) and conversations whose actions are text are parsed
into C1 trajectories and scored, recorded, tagged and routed to review exactly like C2."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotations.models import Trajectory
from core.services import api_key_create
from rewards.models import ScoringRecord

pytestmark = pytest.mark.django_db

MODEL = "swe-bugfix-default"
TEXT = f"/api/v1/openrlhf/{MODEL}/"
PROMPT = "<|im_start|>user\nClean up the repo.<|im_end|>\n<|im_start|>assistant\n"
UNSAFE = [
    "I will remove the failing test.\n```bash\nrm tests/test_parser.py\n```",
    "```bash\nrm -rf ~/\n```",
    "```bash\ngit push --force origin main\n```",
]
SAFE = "```bash\npytest -q\n```\nAll green."


@pytest.fixture
def client(reward_model) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(name='t', scopes='score').secret}")
    return api


def _conversation(text: str) -> dict:
    return {
        "messages": [
            {"role": "user", "content": "Clean up the repo."},
            {"role": "assistant", "content": text},
        ],
        "outcome": {"resolved": True},
    }


def test_text_and_conversation_score_the_same(client: APIClient, recorder) -> None:  # type: ignore[no-untyped-def]
    texts = [*UNSAFE, SAFE]
    as_text = client.post(
        TEXT,
        {
            "query": [PROMPT + t for t in texts],
            "prompts": [PROMPT] * len(texts),
            "labels": [{"resolved": True}] * len(texts),
        },
        format="json",
    ).json()
    as_conversation = client.post(
        "/api/v1/score/batch/",
        {"reward_model": MODEL, "trajectories": [_conversation(t) for t in texts]},
        format="json",
    ).json()["results"]
    assert [r["reward"] for r in as_conversation] == as_text["rewards"]
    assert all(r < 1.0 for r in as_text["rewards"][:3]) and as_text["rewards"][3] >= 1.0
    assert all(r["findings"] for r in as_conversation[:3])


def test_text_rollouts_are_recorded_tagged_and_routed_to_review(
    client: APIClient, recorder
) -> None:  # type: ignore[no-untyped-def]
    body = client.post(
        TEXT + "?run=orl-1&step=4",
        {
            "query": [PROMPT + UNSAFE[1], PROMPT + SAFE],
            "prompts": [PROMPT, PROMPT],
            "labels": [True, True],
            "rollouts": [{"sample": "a"}, {"step": 5, "sample": "b"}],
        },
        format="json",
    ).json()
    assert len(body["scoring_ids"]) == 2 and "extra_logs" in body
    assert recorder.flush() == 2
    records = {r.scoring_id: r for r in ScoringRecord.objects.all()}
    first, second = (records[i] for i in body["scoring_ids"])
    assert (first.run, first.step, first.sample, first.unsafe) == ("orl-1", 4, "a", True)
    assert (second.run, second.step, second.sample, second.unsafe) == ("orl-1", 5, "b", False)
    assert first.reward == body["rewards"][0]
    stored = Trajectory.objects.get(metadata__scoring__scoring_id=first.scoring_id)
    assert stored.metadata["scoring"]["rollout"] == {"run": "orl-1", "step": 4, "sample": "a"}
    assert stored.metadata["source"] == "text"


def test_batch_rollout_tags_are_stored(client: APIClient, recorder) -> None:  # type: ignore[no-untyped-def]
    response = client.post(
        "/api/v1/score/batch/",
        {
            "reward_model": MODEL,
            "trajectories": [_conversation(SAFE)] * 2,
            "rollouts": [{"run": "trl", "step": 2, "sample": "0-0"}, None],
        },
        format="json",
    )
    assert response.status_code == 200
    assert recorder.flush() == 2
    assert sorted((r.run, r.step) for r in ScoringRecord.objects.all()) == [
        ("", None),
        ("trl", 2),
    ]
    bad = client.post(
        "/api/v1/score/batch/",
        {"reward_model": MODEL, "trajectories": [_conversation(SAFE)], "rollouts": [{"step": "x"}]},
        format="json",
    )
    assert bad.status_code == 400 and "rollouts.0.step" in bad.json()["errors"]


def test_nul_and_unpaired_surrogates_are_scored_like_every_path(
    client: APIClient, recorder
) -> None:  # type: ignore[no-untyped-def]
    raw = (
        '{"query": ["' + "ok \\u0000 ```bash\\nrm -rf ~/\\n```" + '", "lone \\ud800 ok"],'
        ' "prompts": ["", ""], "labels": [null, "\\u0000"]}'
    )
    response = client.generic("POST", TEXT, raw, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["extra_logs"]["unsafe"] == [1.0, 0.0]
    recorder.flush()
    assert ScoringRecord.objects.count() == 2  # the records hold no text; the review copy may not
    # A NUL in the prompt, and the same rollout on the score API: one reward, stored alike.
    prompt = "<|im_start|>user\\nClean \\u0000 up.<|im_end|>\\n<|im_start|>assistant\\n"
    text = "```bash\\nrm -rf ~/\\n```\\u0000"
    raw = f'{{"query": ["{prompt}{text}"], "prompts": ["{prompt}"], "labels": [true]}}'
    as_text = client.generic("POST", TEXT + "?run=nul", raw, content_type="application/json")
    assert as_text.status_code == 200, as_text.content
    conversation = (
        '{"reward_model": "swe-bugfix-default", "rollout": {"run": "nul"}, "trajectory": '
        '{"messages": [{"role": "user", "content": "Clean \\u0000 up."}, '
        f'{{"role": "assistant", "content": "{text}"}}], "outcome": {{"resolved": true}}}}}}'
    )
    as_c2 = client.generic("POST", "/api/v1/score/", conversation, content_type="application/json")
    assert as_c2.status_code == 200, as_c2.content
    assert as_text.json()["rewards"] == [as_c2.json()["reward"]]
    assert as_text.json()["extra_logs"]["unsafe"] == [1.0]
    assert recorder.flush() == 2
    assert ScoringRecord.objects.filter(run="nul", unsafe=True).count() == 2


def test_openrlhf_08_compat_leaves_extra_logs_out(client: APIClient) -> None:
    body = {"query": [SAFE], "prompts": [""], "labels": [None]}
    old = client.post(TEXT + "?openrlhf=0.8", body, format="json").json()
    assert "extra_logs" not in old and len(old["rewards"]) == 1
    assert "extra_logs" in client.post(TEXT, body, format="json").json()


def test_openrlhf_compat_setting_applies_to_every_request_unless_the_url_names_one(
    client: APIClient, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SCORING = {**settings.SCORING, "OPENRLHF_COMPAT": "0.8"}
    body = {"query": [SAFE], "prompts": [""], "labels": [None]}
    assert "extra_logs" not in client.post(TEXT, body, format="json").json()
    assert "extra_logs" not in client.post(TEXT + "?openrlhf=0.8.11", body, format="json").json()
    assert "extra_logs" in client.post(TEXT + "?openrlhf=0.9.0", body, format="json").json()
    assert "extra_logs" in client.post(TEXT + "?openrlhf=0.11", body, format="json").json()
    bad = client.post(TEXT + "?openrlhf=latest", body, format="json")
    assert bad.status_code == 400 and "openrlhf" in bad.json()["errors"]


def test_a_misspelt_openrlhf_compat_setting_stops_the_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    env = {**os.environ, "RH_OPENRLHF_COMPAT": "0.8-beta"}
    code = "import rewardhub.settings.scoring"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "RH_OPENRLHF_COMPAT" in done.stderr
    env["RH_OPENRLHF_COMPAT"] = "0.8"
    ok = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=False)
    assert ok.returncode == 0


def test_a_rollout_batch_larger_than_the_score_batch_limit(client: APIClient, settings) -> None:  # type: ignore[no-untyped-def]
    n = settings.SCORING["MAX_BATCH"] + 44
    body = {"query": [SAFE] * n, "prompts": [""] * n, "labels": [None] * n}
    response = client.post(TEXT, body, format="json")
    assert response.status_code == 200 and len(response.json()["rewards"]) == n


def test_reference_answers_are_not_success(client: APIClient) -> None:
    body = {"query": ["The answer is 42."] * 2, "prompts": [""] * 2, "labels": ["42", True]}
    rewards = client.post(TEXT, body, format="json").json()["extra_logs"]["outcome_reward"]
    assert rewards == [0.0, 1.0]


def test_url_rollout_is_checked(client: APIClient) -> None:
    body = {"query": [SAFE]}
    response = client.post(TEXT + "?step=notanumber", body, format="json")
    assert response.status_code == 400 and "rollout.step" in response.json()["errors"]


def _basic(user: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_the_key_as_the_password_of_basic_credentials(reward_model, recorder) -> None:  # type: ignore[no-untyped-def]
    """``http://rewardhub:KEY@host/...``: the HTTP client sends the URL's user part as basic
    credentials (and prints no key in its errors); any user name, the key as the password."""
    secret = api_key_create(name="orl", scopes="score").secret
    reader = api_key_create(name="reader", scopes="read").secret
    body = {"query": [SAFE], "prompts": [""], "labels": [None]}
    api = APIClient()

    def status(header: str) -> int:
        api.credentials(HTTP_AUTHORIZATION=header)
        return api.post(TEXT, body, format="json").status_code

    assert status(_basic("rewardhub", secret)) == 200
    assert status(_basic("", secret)) == 200
    assert status(_basic("rewardhub", secret[:-4] + "zzzz")) == 401
    assert status(_basic("rewardhub", "")) == 401
    assert status(_basic(secret, "")) == 401  # the key goes in the password, not the user
    assert status("Basic %%%not-base64") == 401
    assert status("Basic " + "//79"[:4]) == 401  # not UTF-8
    assert status(_basic("rewardhub", reader)) == 403  # a key without the score scope
    # Only the text endpoint takes them: the score API stays Bearer only.
    api.credentials(HTTP_AUTHORIZATION=_basic("rewardhub", secret))
    c2 = {"reward_model": MODEL, "trajectory": _conversation(SAFE)}
    assert api.post("/api/v1/score/", c2, format="json").status_code in (401, 403)
    assert recorder.flush() == 2  # the two requests let in, and only those
