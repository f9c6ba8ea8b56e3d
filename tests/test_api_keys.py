"""API keys: random, shown once, stored hashed, scoped, revocable, with a last-used time."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.test import APIClient

from core.models import ApiKey
from core.services import api_key_authenticate, api_key_create, api_key_revoke, hash_api_key

pytestmark = pytest.mark.django_db


def test_key_is_stored_only_as_digest() -> None:
    issued = api_key_create(name="trainer", scopes="score")
    row = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.secret not in (row.key_digest, row.prefix, row.name)
    assert row.key_digest == hash_api_key(issued.secret)
    assert row.user.is_service_account and not row.user.has_usable_password()


def test_two_keys_differ_and_authenticate_to_themselves() -> None:
    a = api_key_create(name="a", scopes="score")
    b = api_key_create(name="b", scopes="read")
    assert a.secret != b.secret
    assert api_key_authenticate(a.secret).pk == a.api_key.pk
    assert api_key_authenticate(b.secret).pk == b.api_key.pk
    # Right prefix, wrong secret: refused.
    assert api_key_authenticate(a.secret[:-2] + "xx") is None


def test_last_used_is_recorded() -> None:
    issued = api_key_create(name="t", scopes="read")
    assert issued.api_key.last_used_at is None
    api_key_authenticate(issued.secret)
    assert ApiKey.objects.get(pk=issued.api_key.pk).last_used_at is not None


def test_unknown_scope_is_rejected_with_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        api_key_create(name="t", scopes="score,root")
    assert "scopes" in err.value.message_dict


def test_revoked_key_gets_401() -> None:
    issued = api_key_create(name="t", scopes="read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert client.get("/api/v1/trajectories/").status_code == 200
    api_key_revoke(api_key=issued.api_key)
    response = client.get("/api/v1/trajectories/")
    assert response.status_code == 401
    assert "errors" in response.json()


def test_scope_is_enforced(key_client) -> None:  # type: ignore[no-untyped-def]
    score_only = key_client("score")
    response = score_only.get("/api/v1/trajectories/")
    assert response.status_code == 403
    assert "scope this endpoint needs: 'read'" in str(response.json()["errors"])  # #23.13
    response = score_only.post("/api/v1/trajectories/", {}, format="json")
    assert response.status_code == 403
    assert "'write'" in str(response.json()["errors"])


def test_create_api_key_command_prints_only_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("create_api_key", "ci-trainer", "--scopes", "score,read")
    out = capsys.readouterr().out.strip()
    assert out.startswith("rh_") and "\n" not in out
    key = api_key_authenticate(out)
    assert key is not None and key.scopes == ["read", "score"]


# --- The per-process authentication cache (core.services) ----------------------------


@pytest.fixture
def key_cache(settings):  # type: ignore[no-untyped-def]
    from core.services import api_key_cache_clear

    settings.RH_API_KEY_CACHE_SECONDS = 5
    api_key_cache_clear()
    yield
    api_key_cache_clear()


def _advance_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    import time

    from core import services as keys

    now = time.monotonic() + seconds
    monkeypatch.setattr(keys.time, "monotonic", lambda: now)


def test_cached_key_needs_no_query(key_cache, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    issued = api_key_create(name="t", scopes="score")
    assert api_key_authenticate(issued.secret) is not None  # lookup + last_used UPDATE
    with django_assert_num_queries(0):
        key = api_key_authenticate(issued.secret)
    assert key is not None and key.pk == issued.api_key.pk and key.has_scope("score")
    # A wrong secret with the same prefix never hits the cache entry of the right one.
    assert api_key_authenticate(issued.secret[:-2] + "xx") is None


def test_revocation_elsewhere_takes_effect_within_the_ttl(key_cache, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    issued = api_key_create(name="t", scopes="score")
    assert api_key_authenticate(issued.secret) is not None
    # Another process revokes it (a SQL update: no signal reaches this process's cache).
    ApiKey.objects.filter(pk=issued.api_key.pk).update(revoked_at=timezone.now())
    assert api_key_authenticate(issued.secret) is not None  # still cached, for at most the TTL
    _advance_clock(monkeypatch, 5.01)
    assert api_key_authenticate(issued.secret) is None


def test_revocation_in_this_process_is_immediate(key_cache) -> None:  # type: ignore[no-untyped-def]
    issued = api_key_create(name="t", scopes="score")
    assert api_key_authenticate(issued.secret) is not None
    api_key_revoke(api_key=ApiKey.objects.get(pk=issued.api_key.pk))
    assert api_key_authenticate(issued.secret) is None
    # Deactivating the user (any User save) also clears the cache at once.
    other = api_key_create(name="u", scopes="score")
    assert api_key_authenticate(other.secret) is not None
    user = other.api_key.user
    user.is_active = False
    user.save(update_fields=["is_active"])
    assert api_key_authenticate(other.secret) is None


def test_expiry_is_checked_on_cached_keys(key_cache, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from django.utils import timezone

    issued = api_key_create(
        name="t", scopes="score", expires_at=timezone.now() + timedelta(seconds=30)
    )
    assert api_key_authenticate(issued.secret) is not None
    later = timezone.now() + timedelta(seconds=31)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert api_key_authenticate(issued.secret) is None


def test_ttl_zero_disables_the_cache(key_cache, settings, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    settings.RH_API_KEY_CACHE_SECONDS = 0
    issued = api_key_create(name="t", scopes="score")
    assert api_key_authenticate(issued.secret) is not None
    with django_assert_num_queries(1):
        assert api_key_authenticate(issued.secret) is not None


def test_every_cached_hit_checks_expiry_and_the_user_without_a_query(  # type: ignore[no-untyped-def]
    key_cache, monkeypatch, django_assert_num_queries
) -> None:
    """README: expiry and a deactivated user are checked on every request, cached keys too.
    The check reads the cached key and its user (no query); a lookup-only check fails this."""
    from datetime import timedelta

    from django.utils import timezone

    issued = api_key_create(
        name="t", scopes="score", expires_at=timezone.now() + timedelta(seconds=30)
    )
    cached = api_key_authenticate(issued.secret)
    assert cached is not None
    cached.user.is_active = False  # the cached copy's user, as a request would see it
    with django_assert_num_queries(0):
        assert api_key_authenticate(issued.secret) is None
    cached.user.is_active = True
    later = timezone.now() + timedelta(seconds=31)
    monkeypatch.setattr(timezone, "now", lambda: later)
    with django_assert_num_queries(0):
        assert api_key_authenticate(issued.secret) is None


def test_user_deactivated_elsewhere_is_refused_within_the_ttl(key_cache, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from core.models import User

    issued = api_key_create(name="t", scopes="score")
    assert api_key_authenticate(issued.secret) is not None
    # Another process deactivates the owner (a SQL update: no signal reaches this cache).
    User.objects.filter(pk=issued.api_key.user_id).update(is_active=False)
    assert api_key_authenticate(issued.secret) is not None  # still cached, for at most the TTL
    _advance_clock(monkeypatch, 5.01)
    assert api_key_authenticate(issued.secret) is None
