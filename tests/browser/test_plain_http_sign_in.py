"""Production settings over plain HTTP on a private network (issue #22, item 8).

gunicorn serves ``rewardhub.settings.production`` with ``DJANGO_SECURE_SSL_REDIRECT=false``;
Chromium reaches it under a host name that is not loopback (mapped to 127.0.0.1 by its own
resolver), so it treats the origin as insecure exactly as on a private network, and drops
Secure cookies there. Signing in must work. With the default (HTTPS behind a proxy) the same
switch makes both cookies Secure and sends HSTS.
"""

from __future__ import annotations

import http.client
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.roles import EXPERT
from tests.browser.conftest import CHROMIUM, FLAGS
from tests.fault.servers import HOST, ROOT, Gunicorn, django_test_database_url, service_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PRIVATE_HOST = "rewardhub.internal"


def _production_env(**extra: str) -> dict[str, str]:
    return service_env(
        DJANGO_SETTINGS_MODULE="rewardhub.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS=f"{PRIVATE_HOST},{HOST}",
        DATABASE_URL=django_test_database_url(),
        DATABASE_POOL="false",
        **extra,
    )


@pytest.fixture(scope="module")
def collected_static() -> None:
    """The production settings serve the manifest of ``collectstatic`` (scripts/serve.sh)."""
    env = service_env(
        DJANGO_SETTINGS_MODULE="rewardhub.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS=HOST,
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr


def _gunicorn(env: dict[str, str], log: Path) -> Gunicorn:
    """gunicorn as ``make serve`` starts it (rewardhub/gunicorn_conf.py), one worker."""
    probe = {"Host": PRIVATE_HOST, "X-Forwarded-Proto": "https"}
    return Gunicorn(env, log, workers=1, make_serve=True, probe_headers=probe)


@pytest.fixture
def plain_http_server(collected_static: None, tmp_path: Path) -> Iterator[int]:
    with _gunicorn(_production_env(DJANGO_SECURE_SSL_REDIRECT="false"), tmp_path / "g.log") as g:
        yield g.port


def test_a_browser_signs_in_over_plain_http_from_a_private_host_name(
    plain_http_server: int, make_user, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (make test installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    make_user("reviewer", EXPERT)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    base = f"http://{PRIVATE_HOST}:{plain_http_server}"
    resolver = f"--host-resolver-rules=MAP {PRIVATE_HOST} {HOST}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, resolver])
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            page.goto(f"{base}/accounts/login/")
            page.fill("input[name=username]", "reviewer")
            page.fill("input[name=password]", "pw-for-tests-only")
            page.click("button[type=submit]")
            page.wait_for_load_state()
            assert page.url == f"{base}/", (page.url, page.content()[:2000])
            cookies = {c["name"]: c for c in page.context.cookies()}
            assert {"sessionid", "csrftoken"} <= set(cookies)
            assert not cookies["sessionid"]["secure"] and cookies["sessionid"]["httpOnly"]
            # Signed in: a page for experts answers, not the sign-in form.
            page.goto(f"{base}/review/")
            assert "/accounts/login/" not in page.url
        finally:
            browser.close()


def test_behind_tls_the_same_switch_makes_cookies_secure_and_sends_hsts(
    collected_static: None, tmp_path: Path
) -> None:
    with _gunicorn(_production_env(), tmp_path / "g.log") as server:
        port = server.port
        plain = _get(port, "/accounts/login/", {})
        assert plain.status == 301 and plain.getheader("Location", "").startswith("https://")
        proxied = _get(port, "/accounts/login/", {"X-Forwarded-Proto": "https"})
        assert proxied.status == 200
        cookies = [v for k, v in proxied.getheaders() if k.lower() == "set-cookie"]
        csrf = [c for c in cookies if c.startswith("csrftoken=")]
        assert csrf and "Secure" in csrf[0]
        assert "max-age=31536000" in (proxied.getheader("Strict-Transport-Security") or "")


def _get(port: int, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("GET", path, headers={"Host": PRIVATE_HOST, **headers})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response
