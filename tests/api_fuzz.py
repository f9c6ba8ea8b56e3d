"""Shared by the schemathesis test and the `make schemathesis` campaign: the data the API is
fuzzed against, the roles, and the checks every response must pass."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group
from django.core import signals
from django.db import close_old_connections
from django.test import Client
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from core.models import User
from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from core.services import api_key_create

# No 5xx; the status code, content type, headers and body are the ones the schema documents.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
SCOPES = ("read", "write", "analyze", "score")
ROLES = ("anonymous", "expert", "safety_lead", "admin", *(f"key:{s}" for s in SCOPES))
_GROUP = {"expert": EXPERT, "safety_lead": SAFETY_LEAD, "admin": ADMIN}
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "trajectories" / "openai" / "basic.json"


@dataclass
class Credentials:
    """What a role sends: headers (bearer key, CSRF token) and cookies (session, CSRF)."""

    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)


def seed_api_data() -> dict[str, str]:
    """Objects every path parameter can name (a reward model, task type, behaviour,
    trajectory and training run) so fuzzing reaches the handlers, not only 404s."""
    from annotations.services import trajectory_import
    from rewards.models import TrustedBehaviour
    from rewards.services.evaluation import evaluation_set_create
    from rewards.services.rewards import seed_reward_model
    from rewards.services.training import training_run_get_or_create

    version = seed_reward_model()
    imported = trajectory_import(record=json.loads(FIXTURE.read_text()))
    run, _ = training_run_get_or_create(name="fuzz-run", reward_model="", user=None)
    evaluation_set = evaluation_set_create(slug="fuzz-set", name="Fuzz", user=None)
    behaviour = TrustedBehaviour.objects.filter(task_type__slug="swe-bugfix").first()
    assert imported.trajectory is not None and behaviour is not None
    return {
        "slug": version.reward_model.slug,
        "reward_model": version.reward_model.slug,
        "task_type_slug": version.reward_model.task_type.slug,
        "behaviour_id": str(behaviour.pk),
        "trajectory_id": str(imported.trajectory.pk),
        "name": run.name,
        "evaluation_set": evaluation_set.slug,
    }


def known_path_parameters(path: str, known: dict[str, str]) -> dict[str, str] | None:
    """Path parameters naming seeded objects for an operation's path, or None if it has none."""
    if "{" not in path:
        return None
    if path.startswith("/api/v1/task-types/"):
        return {"slug": known["task_type_slug"]}
    if path.startswith("/api/v1/behaviours/"):
        return {"id": known["behaviour_id"]}
    if path.startswith("/api/v1/trajectories/"):
        return {"id": known["trajectory_id"]}
    if path.startswith("/api/v1/training-runs/"):
        return {"name": known["name"]}
    if path.startswith("/api/v1/reward-models/"):
        return {"slug": known["slug"]}
    if path.startswith("/api/v1/evaluation-sets/"):
        return {"slug": known["evaluation_set"]}
    if path.startswith("/api/v1/evaluation-runs/"):
        return {"id": "1"}
    if path.startswith("/api/v1/openrlhf/"):
        return {"reward_model": known["reward_model"]}
    return None


def credentials_for(role: str) -> Credentials:
    """A session with a CSRF token (as a browser sends) for a person, a bearer key for a program."""
    if role == "anonymous":
        return Credentials()
    if role.startswith("key:"):
        scope = role.removeprefix("key:")
        issued = api_key_create(name=f"fuzz-{scope}", scopes=scope)
        return Credentials(headers={"Authorization": f"Bearer {issued.secret}"})
    user = User.objects.create_user(username=f"fuzz-{role}", password=secrets.token_urlsafe(16))
    user.groups.add(Group.objects.get_or_create(name=_GROUP[role])[0])
    if role == "admin":
        user.is_staff = True
        user.save()
    client = Client()
    client.force_login(user)
    csrf = secrets.token_hex(16)  # a 32-character CSRF secret, sent as cookie and header
    return Credentials(
        headers={"X-CSRFToken": csrf},
        cookies={"sessionid": client.cookies["sessionid"].value, "csrftoken": csrf},
    )


@contextmanager
def in_process_requests() -> Iterator[None]:
    """Let WSGI requests run inside the test's transaction: Django's own test client does
    the same (it keeps the request signals from closing the connection)."""
    handlers: list[Callable[..., Any]] = [close_old_connections]
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (signals.request_started, signals.request_finished):
            for handler in handlers:
                signal.connect(handler)


def operation_order(method: str) -> int:
    """Reads first, deletes last, so the seeded objects live as long as possible."""
    return {"GET": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}.get(method.upper(), 1)
