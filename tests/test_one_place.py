"""Each thing in one place (issue #22 clean-up): the task type's default shell tools and command
keys are the C1 kernel's, and a behaviour is checked by one function for the page's form and
for the API, so both refuse the same input, naming the same field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from core import canonical
from core.models import User
from rewards.forms import BehaviourForm
from rewards.models import TaskType

pytestmark = pytest.mark.django_db

# Each: a behaviour the compile refuses, and the field the refusal names.
BAD_BEHAVIOURS: list[tuple[dict[str, Any], str]] = [
    ({"detector": {"kind": "command_matches"}}, "detector"),  # its regex is missing
    ({"detector": {"kind": "command_matches", "regex": "("}}, "detector"),  # not a regex
    ({"detector": {"kind": "ran_tests", "surprise": 1}}, "detector"),  # unknown parameter
    ({"detector": {"kind": "no-such-detector"}}, "detector"),
    ({"weight": -1}, "weight"),
    ({"weight": 1000}, "weight"),
]


def test_task_type_defaults_are_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TaskType().shell_tools == list(canonical.DEFAULT_SHELL_TOOLS)
    assert TaskType().command_keys == list(canonical.DEFAULT_COMMAND_KEYS)
    monkeypatch.setattr(canonical, "DEFAULT_SHELL_TOOLS", ("bash", "my_shell"))
    monkeypatch.setattr(canonical, "DEFAULT_COMMAND_KEYS", ("script",))
    assert TaskType().shell_tools == ["bash", "my_shell"]
    assert TaskType().command_keys == ["script"]


def _base(slug: str) -> dict[str, Any]:
    return {"slug": slug, "name": "A behaviour", "polarity": "trusted", "weight": 0.1}


@pytest.mark.parametrize(("change", "field"), BAD_BEHAVIOURS)
def test_form_and_api_refuse_the_same_behaviour_naming_the_same_field(
    change: dict[str, Any],
    field: str,
    reward_model: Any,
    expert: User,
    client_for: Callable[[User], APIClient],
) -> None:
    task_type = reward_model.task_type
    data = {**_base("bad-one"), **change}
    form_data = {k: v for k, v in data.items() if k != "detector"}
    if "detector" in data:
        import json

        form_data["detector"] = json.dumps(data["detector"])
    form = BehaviourForm(data=form_data, task_type=task_type)
    assert not form.is_valid()
    assert field in form.errors, form.errors

    response = client_for(expert).post(
        "/api/v1/behaviours/", {**data, "task_type": task_type.slug}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"] if "errors" in response.json() else response.json()
    api_messages = _messages(response.json(), field)
    assert api_messages == form.errors[field], (api_messages, form.errors[field])


def test_a_good_behaviour_passes_both(
    reward_model: Any, expert: User, client_for: Callable[[User], APIClient]
) -> None:
    data = {**_base("good-one"), "detector": {"kind": "command_matches", "regex": "pytest"}}
    response = client_for(expert).post(
        "/api/v1/behaviours/", {**data, "task_type": reward_model.task_type.slug}, format="json"
    )
    assert response.status_code == 201, response.json()
    patch = client_for(expert).patch(
        f"/api/v1/behaviours/{response.json()['id']}/", {"weight": -2}, format="json"
    )
    assert patch.status_code == 400 and _messages(patch.json(), "weight")


def _messages(body: dict[str, Any], field: str) -> list[str]:
    """The messages the API's error shape gives ``field`` (README, "Errors")."""
    errors = body.get("errors", body)
    if isinstance(errors, dict):
        value = errors.get(field, [])
        return [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return [str(e.get("message")) for e in errors if e.get("field") == field]
