"""Shared fixtures: users per role and API clients. One is autouse: see ``fresh_version_cache``."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from core.models import User
from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from core.services import api_key_create


@pytest.fixture(autouse=True)
def fresh_version_cache() -> None:
    """Each test's rolled-back transaction makes ids stale: forget resolved reward-model versions.

    In production versions are never deleted (``ImmutableModel``, ``PROTECT``), so the process
    may keep ``slug@N`` -> id for good; between tests the same ``slug@N`` gets a new id.
    """
    from rewards.services import scoring

    scoring._VERSIONS.clear()
    scoring._PINNED.clear()


TEST_PASSWORD = "pw-for-tests-only"


@functools.cache
def _test_password_hash() -> str:
    """The hash of TEST_PASSWORD, made once: the real hasher costs about a third of a second
    per call by design, and tests create thousands of users. Signing in still checks it."""
    return make_password(TEST_PASSWORD)


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def make(username: str, *roles: str, staff: bool = False) -> User:
        user = User.objects.create_user(username=username)
        user.password = _test_password_hash()
        user.is_staff = staff
        user.save()
        for role in roles:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user

    return make


@pytest.fixture
def expert(make_user: Callable[..., User]) -> User:
    return make_user("ellen", EXPERT)


@pytest.fixture
def safety_lead(make_user: Callable[..., User]) -> User:
    return make_user("sam", SAFETY_LEAD)


@pytest.fixture
def admin_user(make_user: Callable[..., User]) -> User:
    return make_user("ada", ADMIN, staff=True)


@pytest.fixture
def client_for() -> Callable[[User], APIClient]:
    def make(user: User) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=user)
        return client

    return make


@pytest.fixture
def key_client(db: None) -> Callable[[str], APIClient]:
    """An API client authenticated by a freshly issued key with the given scopes."""

    def make(scopes: str) -> APIClient:
        issued = api_key_create(name=f"trainer-{scopes.replace(',', '-')}", scopes=scopes)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
        return client

    return make


@pytest.fixture
def recorder():  # type: ignore[no-untyped-def]
    """The process's scoring recorder, emptied before and after the test."""
    from rewards.services.scoring import recorder as process_recorder

    process_recorder.discard()
    yield process_recorder
    process_recorder.discard()


@pytest.fixture
def reward_model(db: None):  # type: ignore[no-untyped-def]
    """The seeded demo reward model swe-bugfix-default with one active version."""
    from rewards.models import RewardModel
    from rewards.services.rewards import seed_reward_model

    seed_reward_model()
    return RewardModel.objects.select_related("active_version", "task_type").get(
        slug="swe-bugfix-default"
    )
