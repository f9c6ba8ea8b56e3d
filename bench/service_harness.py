"""What the load test, the soak and the burst bench share: a prepared database, gunicorn as
``make serve`` runs it (rewardhub/gunicorn_conf.py), wrk with a Lua script that counts status
codes, and RSS sampling of gunicorn's workers. Everything on 127.0.0.1, every process stopped
on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_score_http import PG, free_port, run, stop  # noqa: E402

HOST = "127.0.0.1"
REWARD_MODEL = "swe-bugfix-default"


_SECRET_KEY = secrets.token_urlsafe(50)


def bench_secret_key() -> str:
    """The served processes run with DEBUG off, which refuses the repository's development
    key: the environment's key, or one made for this run (the same for every process)."""
    return os.environ.get("DJANGO_SECRET_KEY") or _SECRET_KEY


def service_env(db_name: str, **extra: str) -> dict[str, str]:
    """Production-like settings from the environment (as in bench_score_http), own database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": bench_secret_key(),
            "DATABASE_URL": f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{db_name}",
            "DATABASE_POOL": "true",
            "WHITENOISE_AUTOREFRESH": "false",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),  # as scripts/serve.sh
        }
    )
    env.update(extra)
    return env


def prepare_database(env: dict[str, str], db_name: str) -> str:
    """Create (if missing), migrate and seed the database; return a fresh ``score`` API key."""
    pg = ["-h", PG["host"], "-p", PG["port"], "-U", PG["user"]]
    if subprocess.run(["pg_isready", *pg, "-q"], check=False).returncode != 0:
        raise SystemExit(f"PostgreSQL is not answering on {PG['host']}:{PG['port']}")
    query = f"SELECT 1 FROM pg_database WHERE datname='{db_name}'"  # noqa: S608 (an argument)
    if run(["psql", *pg, "-tAc", query], env).strip() != "1":
        run(["createdb", *pg, db_name], env)
    python = sys.executable
    run([python, "manage.py", "migrate", "--noinput"], env)
    run([python, "manage.py", "seed_demo"], env)
    return run([python, "manage.py", "create_api_key", "load", "--scopes", "score"], env).strip()


@dataclass
class Server:
    base: str
    pid: int  # the master, also the process group id
    log: Path

    def worker_pids(self) -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    stat = (entry / "stat").read_text()
                    if int(stat[stat.rindex(")") + 2 :].split()[1]) == self.pid:
                        found.append(int(entry.name))
        return sorted(found)


@contextlib.contextmanager
def gunicorn(
    env: dict[str, str], workers: int | None = None, threads: int | None = None
) -> Iterator[Server]:
    """gunicorn as scripts/serve.sh runs it (``-c python:rewardhub.gunicorn_conf``: the shipped
    worker class, shedding, backlog and access log), in its own process group, killed on exit.
    ``workers`` / ``threads`` override ``RH_WEB_WORKERS`` / ``RH_WEB_THREADS``."""
    port = free_port()
    env = {**env, "RH_BIND": f"{HOST}:{port}"}
    if workers:
        env["RH_WEB_WORKERS"] = str(workers)
    if threads:
        env["RH_WEB_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory(prefix="rh-service-") as tmp:
        log = Path(tmp) / "gunicorn.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("gunicorn")), "rewardhub.wsgi:application",
                 "-c", "python:rewardhub.gunicorn_conf", "--graceful-timeout", "5"],
                env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        base = f"http://{HOST}:{port}"
        try:
            deadline = time.monotonic() + 60
            while get(f"{base}/healthz") != 200:
                if proc.poll() is not None:
                    raise SystemExit(f"gunicorn exited:\n{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise SystemExit("gunicorn did not answer /healthz within 60 s")
                time.sleep(0.2)
            yield Server(base, proc.pid, log)
        finally:
            stop(proc)


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (127.0.0.1 only)
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def post_status(url: str, key: str, body: bytes, timeout: float = 10) -> int:
    req = urllib.request.Request(  # noqa: S310 (127.0.0.1 only)
        url, data=body, method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            resp.read()
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


# One body (``templates`` with one entry) or several templates split on ``__N__``, filled with
# a per-request counter so every request scores a different trajectory.
WRK_LUA = """
local key, delay_ms, templates = {key}, {delay_ms}, {templates}
local threads = {{}}
local parts = {{}}
for i, path in ipairs(templates) do
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  local pieces, start = {{}}, 1
  while true do
    local a, b = string.find(text, "__N__", start, true)
    if not a then table.insert(pieces, string.sub(text, start)); break end
    table.insert(pieces, string.sub(text, start, a - 1))
    start = b + 1
  end
  parts[i] = pieces
end
local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}}
local counter = 0
tid = 0  -- a global: setup() sets each thread's own value

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  counts = {{}}
end

function request()
  counter = counter + 1
  local n = tostring(tid * 1000000000 + counter)
  local pieces = parts[(counter % #parts) + 1]
  return wrk.format("POST", nil, headers, table.concat(pieces, n))
end

if delay_ms > 0 then
  function delay() return delay_ms end
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {{}}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("counts")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local items = {{}}
  for status, n in pairs(total) do
    table.insert(items, string.format("\\"%d\\": %d", status, n))
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT {{\\"requests\\": %d, \\"duration_us\\": %d, \\"p50\\": %d, \\"p99\\": %d, "
    .. "\\"max\\": %d, \\"connect\\": %d, \\"read\\": %d, \\"write\\": %d, \\"timeout\\": %d, "
    .. "\\"status\\": {{%s}}}}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.timeout, table.concat(items, ", ")))
end
"""


@dataclass
class WrkResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    status: dict[int, int]
    socket_errors: int
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def count(self, low: int, high: int, *, but: tuple[int, ...] = ()) -> int:
        return sum(n for s, n in self.status.items() if low <= s <= high and s not in but)


def lua_script(tmp: Path, name: str, key: str, bodies: list[str], delay_ms: int = 0) -> Path:
    paths = []
    for i, body in enumerate(bodies):
        path = tmp / f"{name}-{i}.json"
        path.write_text(body)
        paths.append(json.dumps(str(path)))
    script = tmp / f"{name}.lua"
    script.write_text(
        WRK_LUA.format(
            key=json.dumps(key), delay_ms=int(delay_ms), templates="{" + ", ".join(paths) + "}"
        )
    )
    return script


def wrk_command(
    url: str, script: Path, seconds: float, connections: int, threads: int
) -> list[str]:
    return [
        "wrk", "--threads", str(max(1, min(threads, connections))),
        "--connections", str(connections), "--duration", f"{max(1, round(seconds))}s",
        "--timeout", "10s", "--script", str(script), url,
    ]  # fmt: skip


def parse_wrk(stdout: str, stderr: str = "") -> WrkResult:
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            raw = json.loads(line[len("RESULT ") :])
            return WrkResult(
                requests=raw["requests"],
                seconds=raw["duration_us"] / 1e6,
                p50_ms=raw["p50"] / 1000,
                p99_ms=raw["p99"] / 1000,
                status={int(k): v for k, v in raw["status"].items()},
                socket_errors=raw["connect"] + raw["read"] + raw["write"] + raw["timeout"],
            )
    raise SystemExit(f"wrk gave no result:\n{stdout}\n{stderr}")


def wrk(url: str, script: Path, seconds: float, connections: int, threads: int = 2) -> WrkResult:
    cmd = wrk_command(url, script, seconds, connections, threads)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, check=False)
    return parse_wrk(out.stdout, out.stderr)


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var * 60


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"
