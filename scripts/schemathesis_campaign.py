"""The large schemathesis campaign (`make schemathesis`; the default suite runs a small one).

    .venv/bin/python scripts/schemathesis_campaign.py [--max-examples 100] [--roles admin,...]
                                                      [--seed 0] [--phases ...] [--port 0]

It builds a throwaway PostgreSQL database (CAMPAIGN_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/rewardhub_schemathesis; dropped and created anew), seeds the
demo data, issues an API key per scope, logs each person in through the real login form, serves
the API under gunicorn on loopback and runs `schemathesis run` against /api/schema/ once per role
(anonymous, expert, safety lead, admin, a key of each scope) with every phase (examples,
coverage, fuzzing, stateful), valid and invalid data. Checks: no 5xx, documented status codes,
content types, headers and response bodies. Prints the counts per role and in total; the exit
status is 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")
BIN = ROOT / ".venv" / "bin"
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/rewardhub_schemathesis"
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_headers_conformance,response_schema_conformance"
)
SCOPES = ("read", "write", "analyze", "score")
PEOPLE = {"expert": "expert", "safety_lead": "safety", "admin": "admin"}  # role -> demo login
ROLES = ("anonymous", *PEOPLE, *(f"key:{s}" for s in SCOPES))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, cwd=ROOT, text=True, check=True, **kw)


def _fresh_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    args = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432)]
    args += ["-U", parts.username or "postgres"]
    env = {**os.environ}
    if parts.password:
        env["PGPASSWORD"] = parts.password
    subprocess.run(["dropdb", "--if-exists", *args, name], env=env, check=True)
    subprocess.run(["createdb", *args, name], env=env, check=True)


def _prepare(env: dict[str, str]) -> dict[str, dict[str, str]]:
    """Migrate, seed, issue keys; return the headers each key role sends."""
    _run([PY, "manage.py", "migrate", "--noinput"], env, stdout=subprocess.DEVNULL)
    _run([PY, "manage.py", "seed_demo"], env, stdout=subprocess.DEVNULL)
    headers: dict[str, dict[str, str]] = {"anonymous": {}}
    for scope in SCOPES:
        out = _run(
            [PY, "manage.py", "create_api_key", f"campaign-{scope}", "--scopes", scope],
            env,
            capture_output=True,
        )
        headers[f"key:{scope}"] = {"Authorization": f"Bearer {out.stdout.strip()}"}
    return headers


def _login(base: str, username: str, password: str) -> dict[str, str]:
    """Log in through the login form, as a browser does; return the session's headers."""
    import requests

    session = requests.Session()
    page = session.get(f"{base}/accounts/login/", timeout=30)
    page.raise_for_status()
    token = session.cookies["csrftoken"]
    done = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
        allow_redirects=False,
        timeout=30,
    )
    if "sessionid" not in session.cookies:
        raise SystemExit(f"login as {username} failed ({done.status_code})")
    cookies = session.cookies.get_dict()
    return {
        "Cookie": f"sessionid={cookies['sessionid']}; csrftoken={cookies['csrftoken']}",
        "X-CSRFToken": cookies["csrftoken"],
    }


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "rewardhub.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--worker-class",
            "gthread",
            "--timeout",
            "120",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(ROOT / "var" / "schemathesis" / "gunicorn.log", "wb"),  # noqa: SIM115
    )
    import requests

    for _ in range(120):
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).ok:
                return server
        except requests.RequestException:
            pass
        if server.poll() is not None:
            raise SystemExit("gunicorn exited; see var/schemathesis/gunicorn.log")
        time.sleep(0.5)
    server.send_signal(signal.SIGTERM)
    raise SystemExit("gunicorn did not answer /healthz")


def _campaign(
    role: str, headers: dict[str, str], base: str, args: argparse.Namespace, out: Path
) -> dict[str, Any]:
    report = out / f"{role.replace(':', '-')}.ndjson"
    cmd = [
        str(BIN / "schemathesis"),
        "run",
        f"{base}/api/schema/",
        "--checks",
        CHECKS,
        "--phases",
        args.phases,
        "--mode",
        "all",
        "--max-examples",
        str(args.max_examples),
        "--seed",
        str(args.seed),
        "--workers",
        str(args.workers),
        "--request-timeout",
        "60",
        "--suppress-health-check",
        "all",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(report),
        "--continue-on-failure",
    ]
    for name, value in headers.items():
        cmd += ["--header", f"{name}: {value}"]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    (out / f"{role.replace(':', '-')}.log").write_text(done.stdout + done.stderr)
    counts = _counts(report, done.stdout)
    counts.update(role=role, wall=wall, exit=done.returncode)
    return counts


def _counts(report: Path, output: str) -> dict[str, Any]:
    """Test cases (from the run's summary), operations and failing operations (from its NDJSON
    event stream: one ScenarioFinished per operation and phase)."""
    operations: set[str] = set()
    failures: set[str] = set()
    errors = 0
    if report.exists():
        for line in report.read_text().splitlines():
            event = json.loads(line)
            if "ScenarioFinished" in event:
                body = event["ScenarioFinished"]
                label = (body.get("recorder") or {}).get("label") or "?"
                if body.get("status") != "skip":
                    operations.add(label)
                if body.get("status") in ("failure", "error"):
                    failures.add(f"{label}: {body['status']} in phase {body.get('phase')}")
            elif "NonFatalError" in event:
                errors += 1
                failures.add(f"error: {str(event['NonFatalError'])[:200]}")
    match = re.search(r"Test cases:\s*\n\s*(\d+) generated(.*)", output)
    cases = int(match.group(1)) if match else 0
    return {
        "cases": cases,
        "summary": match.group(2).strip(", ") if match else "no summary",
        "operations": len(operations),
        "failures": sorted(failures),
        "errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful")
    parser.add_argument("--workers", type=int, default=1, help="schemathesis workers per role")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    roles = [r for r in args.roles.split(",") if r]
    unknown = set(roles) - set(ROLES)
    if unknown:
        parser.error(f"unknown roles {sorted(unknown)}; known: {', '.join(ROLES)}")

    database = os.environ.get("CAMPAIGN_DATABASE_URL", DEFAULT_DB)
    password = secrets.token_urlsafe(12)
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},  # tasks in-process
        "DATABASE_URL": database,
        "DATABASE_POOL": "false",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
        "RH_DEMO_PASSWORD": password,
        "LOG_LEVEL": "WARNING",
    }
    out = ROOT / "var" / "schemathesis"
    out.mkdir(parents=True, exist_ok=True)
    _fresh_database(database)
    headers = _prepare(env)
    port = args.port or _free_port()
    base = f"http://127.0.0.1:{port}"
    server = _serve(env, port)
    try:
        for role, login in PEOPLE.items():
            headers[role] = _login(base, login, password)
        print(
            f"schemathesis campaign: {args.max_examples} examples per operation, phases "
            f"{args.phases}, seed {args.seed}, {len(roles)} role(s), server {base}"
        )
        results = []
        for role in roles:
            result = _campaign(role, headers[role], base, args, out)
            results.append(result)
            print(
                f"  {role:<12} operations {result['operations']:>3}  test cases "
                f"{result['cases']:>7,} ({result['summary']})  failures "
                f"{len(result['failures']):>3}  [{result['wall']:.0f} s]",
                flush=True,
            )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    total_cases = sum(r["cases"] for r in results)
    failures = [(r["role"], f) for r in results for f in r["failures"]]
    bad_exit = [r["role"] for r in results if r["exit"] != 0 and not r["failures"]]
    print(f"total: {total_cases:,} test cases, {len(failures)} failures")
    for role, failure in failures[:50]:
        print(f"  {role}: {failure}")
    for role in bad_exit:
        print(f"  {role}: schemathesis exited non-zero; see var/schemathesis/")
    ok = not failures and not bad_exit and total_cases > 0
    print("OK" if ok else "FAILED (logs and NDJSON reports in var/schemathesis/)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
