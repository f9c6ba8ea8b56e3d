"""No API key reaches any log line: gunicorn started with the production configuration
(rewardhub/gunicorn_conf.py: access log on stdout, the redacting logger class), everything at
debug level, keys sent in the OpenRLHF URL and in headers (bearer and basic), valid,
revoked-looking and odd; then every line the run wrote is read."""

from __future__ import annotations

import base64
import http.client
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.services import api_key_create
from rewardhub.logging import redact
from tests.fault.servers import (
    HOST,
    django_test_database_url,
    free_port,
    service_env,
    stop_group,
    wait_until,
)

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_redact_takes_the_openrlhf_path_segment_whatever_its_shape() -> None:
    line = 'POST /api/v1/openrlhf/swe-bugfix-default/not-a-key-shape?run=a HTTP/1.1" 404'
    assert redact(line) == 'POST /api/v1/openrlhf/swe-bugfix-default/[redacted]?run=a HTTP/1.1" 404'
    assert redact("Authorization: Bearer abc.def") == "Authorization: Bearer [redacted]"
    assert redact("key rh_0123abcd_secretpart") == "key rh_[redacted]"
    assert redact("/api/v1/openrlhf/swe-bugfix-default/") == "/api/v1/openrlhf/swe-bugfix-default/"
    basic = "Authorization: Basic cmV3YXJkaHViOnNlY3JldA=="
    assert redact(basic) == "Authorization: Basic [redacted]"
    assert redact("basic authentication") == "basic authentication"  # words stay
    url = "503 for url: http://rewardhub:S3cret-Token@127.0.0.1:8000/api/v1/openrlhf/m/?run=a"
    assert redact(url) == (
        "503 for url: http://rewardhub:[redacted]@127.0.0.1:8000/api/v1/openrlhf/m/?run=a"
    )
    assert redact("mail a@b.c, see http://host/a@b") == "mail a@b.c, see http://host/a@b"


def _post(port: int, path: str, body: object, headers: dict[str, str] | None = None) -> int:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(body),
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_every_log_line_of_a_run_is_free_of_keys(reward_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = api_key_create(name="openrlhf", scopes="score").secret
    wrong = secret[:-4] + "zzzz"  # shaped like a key, not one
    odd = "Sup3rSecretTokenWithoutPrefix"
    port = free_port()
    log_path = tmp_path / "run.log"
    env = service_env(
        DATABASE_URL=django_test_database_url(),
        DATABASE_POOL="false",
        RH_BIND=f"{HOST}:{port}",
        RH_WEB_WORKERS="1",
        LOG_LEVEL="DEBUG",
        RH_SCORE_REVIEW_SAMPLE_RATE="1",
    )
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "rewardhub.wsgi:application",
             "-c", "python:rewardhub.gunicorn_conf", "--log-level", "debug"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:

        def up() -> bool:
            assert proc.poll() is None, log_path.read_text()
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            try:
                conn.request("GET", "/healthz")
                return conn.getresponse().status == 200
            except OSError:
                return False
            finally:
                conn.close()

        assert wait_until(up, 60, 0.2), log_path.read_text()[-3000:]
        body = {
            "query": ["Fix it.\n```bash\nrm -rf ~/\n```"],
            "prompts": ["Fix it.\n"],
            "labels": [None],
        }
        base = "/api/v1/openrlhf/swe-bugfix-default"
        assert _post(port, f"{base}/{secret}", body) == 200
        assert _post(port, f"{base}/{secret}?run=r1&step=3", body) == 200
        assert _post(port, f"{base}/{wrong}", body) == 401
        assert _post(port, f"{base}/{odd}", body) == 404
        assert _post(port, f"/api/v1/openrlhf/no-such-model/{secret}", body) == 404
        assert _post(port, base + "/", body, {"Authorization": f"Bearer {secret}"}) == 200
        assert _post(port, base + "/", body, {"Authorization": f"Bearer {wrong}"}) == 401
        assert _post(port, base + "/", {"query": "x"}, {"Authorization": f"Bearer {odd}"}) == 401
        for password, status in ((secret, 200), (wrong, 401), (odd, 401)):
            basic = base64.b64encode(f"rewardhub:{password}".encode()).decode()
            assert _post(port, base + "/", body, {"Authorization": f"Basic {basic}"}) == status
    finally:
        stop_group(proc)
    text = log_path.read_text(errors="replace")
    lines = text.splitlines()
    access = [line for line in lines if '"POST /api/v1/openrlhf/' in line]
    assert len(access) >= 11, text[-3000:]
    assert any(f"{base}/[redacted]" in line for line in access)
    for needle in (secret, wrong, odd, secret.split("_")[-1]):
        leaked = [line for line in lines if needle in line]
        assert not leaked, leaked[:3]
