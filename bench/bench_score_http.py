"""HTTP scoring throughput and latency under gunicorn, driven by wrk from a second process.

    .venv/bin/python bench/bench_score_http.py [--seconds 10] [--rounds 3] [--connections 8]

What it does, all on 127.0.0.1 and bounded in time:

1. creates the dedicated PostgreSQL database ``rewardhub_bench`` (or ``RH_BENCH_DATABASE``) if
   missing (trust auth), migrates it, runs ``seed_demo`` (reward model ``swe-bugfix-default``)
   and creates a ``score`` API key;
2. measures the baseline in this process: the warm in-process scorer (same compiled spec the
   server uses, ``score(C1 dict) + to_dict``) on one core, traj/s, best of 5;
3. for each gunicorn worker class (``sync`` and ``gthread``, gunicorn's own; ``shed-sync`` and
   ``shed-gthread``, rewardhub.gunicorn_workers; ``prod``, gunicorn started with
   rewardhub/gunicorn_conf.py as scripts/serve.sh starts it: its worker class, backlog and
   redacted access log; 2 workers, production-like settings from the environment: DEBUG off,
   connection pool on, no access log but prod's, whitenoise autorefresh off, the throttle
   rate of scope ``score`` raised so it does not cap the bench) it starts gunicorn on a free
   port, waits for ``/healthz`` and checks one response of each endpoint; then wrk (a Lua
   script generated into a temp dir) drives ``POST /api/v1/score/`` (the 30-step trajectory
   of ``bench_scorer``) and ``POST /api/v1/score/batch/`` (16 of them). Every class runs at
   once (idle when not measured): a short warm-up of each, then ``--rounds`` rounds of
   ``--seconds`` each, alternating between every class and mode; the best round by req/s is
   reported with its own p50/p99 (exact percentiles from wrk's latency histogram in Lua
   ``done``), and each class's ratio to plain ``sync`` on single and batch requests;
4. stops gunicorn (its whole process group) at the end, also on error or Ctrl-C.

The machine's load (``uptime``) is printed with the table: other work on the box lowers the
numbers, so compare runs only at similar load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_scorer import build_trajectory, rate  # noqa: E402

HOST = "127.0.0.1"
PG = {"host": "127.0.0.1", "port": "5432", "user": "postgres"}
# RH_BENCH_DATABASE: another name, so benches of two checkouts on one server do not share it
DB_NAME = os.environ.get("RH_BENCH_DATABASE", "rewardhub_bench")
REWARD_MODEL = "swe-bugfix-default"
# Far above what two workers serve; per second, so DRF's throttle history (a list of timestamps
# pickled in and out of the cache on every request) stays ~1 s long instead of 60 s.
THROTTLE = "1000000/s"
# "prod" is what `make serve` runs (rewardhub/gunicorn_conf.py's worker_class); "shed-sync" is
# gunicorn's sync worker shedding from the kernel's accept queue, "shed-gthread" gthread with a
# bounded queue and connections closed after slow requests (rewardhub.gunicorn_workers);
# "sync" and "gthread" are gunicorn's own, for comparison.
WORKER_CLASSES = {
    "inline": "rewardhub.gunicorn_workers.SheddingInlineWorker",
    "shed-sync": "rewardhub.gunicorn_workers.SheddingSyncWorker",
    "shed-gthread": "rewardhub.gunicorn_workers.SheddingThreadWorker",
}
THREADED = {"gthread", "shed-gthread"}


def prod_worker_class(env: dict[str, str]) -> str:
    """The worker class rewardhub/gunicorn_conf.py ships under ``env`` (its own reading)."""
    code = "import rewardhub.gunicorn_conf as c; print(c.worker_class)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"rewardhub/gunicorn_conf.py did not load:\n{done.stderr[-2000:]}")
    return done.stdout.strip()


TARGET_RPS, TARGET_P99_MS, TARGET_BATCH_RATIO, TARGET_INPROC = 300, 50.0, 3.0, 1000
TARGET_VS_SYNC = 0.9  # the shipped run mode against plain sync workers, single and batch

WRK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. {key}
local f = assert(io.open({body}, "rb"))
wrk.body = f:read("*a")
f:close()

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT {{\\"requests\\": %d, \\"duration_us\\": %d, \\"p50\\": %d, \\"p90\\": %d, "
    .. "\\"p99\\": %d, \\"max\\": %d, \\"connect\\": %d, \\"read\\": %d, \\"write\\": %d, "
    .. "\\"status\\": %d, \\"timeout\\": %d}}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
"""


@dataclass
class Row:
    mode: str
    rps: float
    traj_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_ms: float  # gunicorn CPU time (all workers, user + system) per request


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of every live process in the process group (gunicorn's).

    CPU per request barely moves with other load on a shared machine, unlike req/s, so it is
    the number to compare between two runs of this bench."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:  # fields[0] is state; pgrp is the 5th field of the line
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def bench_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
            "DATABASE_URL": f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{DB_NAME}",
            "DATABASE_POOL": "true",
            "THROTTLE_SCORE": THROTTLE,
            "WHITENOISE_AUTOREFRESH": "false",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def run(cmd: list[str], env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def prepare_database(env: dict[str, str]) -> str:
    """Creates, migrates and seeds the bench database; returns a fresh ``score`` API key."""
    pg = ["-h", PG["host"], "-p", PG["port"], "-U", PG["user"]]
    if subprocess.run(["pg_isready", *pg, "-q"], check=False).returncode != 0:
        raise SystemExit(f"PostgreSQL is not answering on {PG['host']}:{PG['port']}")
    query = f"SELECT 1 FROM pg_database WHERE datname='{DB_NAME}'"  # noqa: S608 (a constant)
    exists = run(["psql", *pg, "-tAc", query], env)
    if exists.strip() != "1":
        run(["createdb", *pg, DB_NAME], env)
    python = sys.executable
    run([python, "manage.py", "migrate", "--noinput"], env)
    run([python, "manage.py", "seed_demo"], env)
    return run([python, "manage.py", "create_api_key", "bench", "--scopes", "score"], env).strip()


def inprocess_baseline(env: dict[str, str], seconds: float) -> float:
    """Warm scorer traj/s on one core, with the spec of the active version the server scores."""
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")})
    os.environ["DATABASE_POOL"] = "false"
    import django

    django.setup()
    from django.db import connections

    from rewards.services import scoring as scoring_services

    version = scoring_services.resolve_reward_model(REWARD_MODEL)
    connections.close_all()
    scorer = scoring_services.scorer_for(version)
    traj = build_trajectory()
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        if cpus:
            os.sched_setaffinity(0, {sorted(cpus)[0]})
        return rate(lambda: scorer.score(traj).to_dict(), seconds)
    finally:
        if cpus:
            os.sched_setaffinity(0, cpus)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def post(url: str, key: str, body: bytes, timeout: float = 30) -> tuple[int, dict]:
    req = urllib.request.Request(  # noqa: S310 (127.0.0.1 only)
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read()[:500].decode("utf-8", "replace")}


@contextlib.contextmanager
def gunicorn(
    env: dict[str, str], worker_class: str, workers: int, threads: int
) -> Iterator[tuple[str, int]]:
    """Runs gunicorn in its own process group; always kills the whole group on exit."""
    port = free_port()
    prod = worker_class == "prod"
    # "prod" runs gunicorn exactly as scripts/serve.sh does (its configuration file: worker
    # class, backlog, access log with redaction); the others name their class and log nothing.
    cmd = [
        str(Path(sys.executable).with_name("gunicorn")),
        "rewardhub.wsgi:application",
        *(["-c", "python:rewardhub.gunicorn_conf"] if prod else []),
        "--bind",
        f"{HOST}:{port}",
        "--workers",
        str(workers),
        *([] if prod else ["--worker-class", WORKER_CLASSES.get(worker_class, worker_class)]),
        "--timeout",
        "60",
        "--graceful-timeout",
        "5",
        "--log-level",
        "warning",
    ]
    if worker_class in THREADED or (prod and "Thread" in prod_worker_class(env)):
        cmd += ["--threads", str(threads)]
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise SystemExit(f"gunicorn exited ({proc.returncode}):\n{log.read()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as resp:  # noqa: S310
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit("gunicorn did not answer /healthz within 60 s")
            time.sleep(0.2)
        yield base, proc.pid  # the process group id (start_new_session)
    finally:
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wrk(url: str, script: Path, seconds: float, connections: int) -> dict:
    cmd = [
        "wrk",
        "--threads",
        "1",
        "--connections",
        str(connections),
        "--duration",
        f"{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "--script",
        str(script),
        url,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise SystemExit(f"wrk gave no result ({out.returncode}):\n{out.stdout}\n{out.stderr}")


def one_round(
    mode: str, url: str, pgid: int, script: Path, per_request: int, args: argparse.Namespace
) -> Row:
    cpu = group_cpu_seconds(pgid)
    r = wrk(url, script, args.seconds, args.connections)
    cpu_ms = (group_cpu_seconds(pgid) - cpu) * 1000 / max(1, r["requests"])
    rps = r["requests"] / (r["duration_us"] / 1e6)
    errors = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
    return Row(mode, rps, rps * per_request, r["p50"] / 1000, r["p99"] / 1000, errors, cpu_ms)


def measure(targets: list[tuple[str, str, Path, int, int]], args: argparse.Namespace) -> list[Row]:
    """The best round of each (name, url, script, trajectories per request, pgid) target.

    Rounds alternate between the targets (every worker class runs at once, idle when not
    measured), so when the machine's speed drifts (a shared host's does, by a third within
    minutes) every row sees it alike, and their ratios are not an artefact of which ran first."""
    for _name, url, script, _n, _pgid in targets:
        wrk(url, script, args.warmup, args.connections)  # warm caches, pools, both workers
    best: dict[str, Row] = {}
    for _ in range(args.rounds):
        for name, url, script, n, pgid in targets:
            row = one_round(name, url, pgid, script, n, args)
            if name not in best or row.rps > best[name].rps:
                best[name] = row
    return [best[name] for name, *_ in targets]


def split_cpu(single_ms: float, batch_ms: float, n: int) -> tuple[float, float]:
    """Per-request and per-trajectory CPU from the CPU per single request (F + P) and per batch
    request of n (F + n P): the model every ratio below follows."""
    per_traj = max(0.0, (batch_ms - single_ms) / (n - 1)) if n > 1 else batch_ms
    return max(0.0, single_ms - per_traj), per_traj


def max_per_traj(fixed: float, n: int, ratio: float) -> float:
    """The largest P with (F + P) / (P + F / n) >= ratio: P <= F (1 - ratio / n) / (ratio - 1)."""
    return max(0.0, fixed * (1 - ratio / n) / (ratio - 1))


def lua_script(tmp: Path, name: str, key: str, payload: dict) -> Path:
    body = tmp / f"{name}.json"
    body.write_text(json.dumps(payload))
    script = tmp / f"{name}.lua"
    script.write_text(WRK_LUA.format(key=json.dumps(key), body=json.dumps(str(body))))
    return script


def check_endpoints(base: str, key: str, single: Path, batch: Path, size: int) -> None:
    status, body = post(f"{base}/api/v1/score/", key, single.with_suffix(".json").read_bytes())
    if status != 200 or "reward" not in body:
        raise SystemExit(f"single scoring failed: {status} {body}")
    status, body = post(f"{base}/api/v1/score/batch/", key, batch.with_suffix(".json").read_bytes())
    if status != 200 or len(body.get("results", [])) != size:
        raise SystemExit(f"batch scoring failed: {status} {str(body)[:500]}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _overtime(signum: int, frame: object) -> None:
    raise TimeoutError("the bench ran over its time budget (see --budget)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of one wrk round")
    parser.add_argument("--rounds", type=int, default=3, help="wrk rounds per row (best kept)")
    parser.add_argument("--warmup", type=float, default=2.0, help="wrk warm-up before each row")
    parser.add_argument(
        "--connections", type=int, default=4, help="wrk connections (2 per sync worker)"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per threaded worker")
    parser.add_argument("--batch", type=int, default=16, help="trajectories per batch request")
    parser.add_argument(
        "--worker-classes",
        default="sync,prod",
        help="comma-separated gunicorn worker classes (sync, gthread, inline, shed-sync, "
        "shed-gthread, prod: what rewardhub/gunicorn_conf.py ships), each optionally :N workers",
    )
    parser.add_argument("--baseline-seconds", type=float, default=2.0)
    parser.add_argument(
        "--budget",
        type=float,
        default=0,
        help="hard limit in seconds (default: planned time + 5 min)",
    )
    args = parser.parse_args()
    classes = [w.strip() for w in args.worker_classes.split(",") if w.strip()]
    planned = len(classes) * 2 * (args.warmup + args.rounds * args.seconds + 2) + 60
    # A hard stop: whatever hangs (a worker, the scorer, wrk), the finally blocks still run.
    signal.signal(signal.SIGALRM, _overtime)
    signal.alarm(int(args.budget or planned + 300))
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: run scripts/ensure_bench_tools.sh (or make bench)")

    # SIGTERM (e.g. a CI timeout) unwinds like Ctrl-C, so the finally blocks stop gunicorn.
    signal.signal(signal.SIGTERM, _interrupt)
    env = bench_env()
    print(f"preparing database {DB_NAME} (migrate, seed_demo, API key) ...", flush=True)
    key = prepare_database(env)
    baseline = inprocess_baseline(env, args.baseline_seconds)
    load_before = load()

    traj = build_trajectory()
    rows: list[tuple[str, Row]] = []
    with tempfile.TemporaryDirectory(prefix="rh-bench-http-") as tmpdir:
        tmp = Path(tmpdir)
        single = lua_script(tmp, "single", key, {"reward_model": REWARD_MODEL, "trajectory": traj})
        batch = lua_script(
            tmp, "batch", key, {"reward_model": REWARD_MODEL, "trajectories": [traj] * args.batch}
        )
        targets: list[tuple[str, str, Path, int, int]] = []
        with contextlib.ExitStack() as servers:
            for spec in classes:
                # "name:N" runs N workers of that class instead of --workers
                worker_class, _, count = spec.partition(":")
                workers = int(count) if count else args.workers
                print(f"gunicorn {worker_class} x{workers} ...", flush=True)
                base, pgid = servers.enter_context(
                    gunicorn(env, worker_class, workers, args.threads)
                )
                worker_class = spec if count else worker_class
                check_endpoints(base, key, single, batch, args.batch)
                targets += [
                    (f"{worker_class}|single", base + "/api/v1/score/", single, 1, pgid),
                    (
                        f"{worker_class}|batch of {args.batch}",
                        base + "/api/v1/score/batch/",
                        batch,
                        args.batch,
                        pgid,
                    ),
                ]
            print("wrk rounds, alternating between every class and mode ...", flush=True)
            for row in measure(targets, args):
                worker_class, row.mode = row.mode.split("|", 1)
                rows.append((worker_class, row))

    print()
    threads = f" ({args.threads} threads each for gthread and prod)"
    print(
        f"HTTP scoring of the 30-step SWE trajectory (bench_scorer.build_trajectory, "
        f"{len(json.dumps(traj)) / 1024:.0f} KiB) under gunicorn, {args.workers} workers{threads},"
        f"\nwrk from a second process: 1 thread, {args.connections} connections, "
        f"best of {args.rounds} x {args.seconds:.0f} s rounds, single and batch rounds "
        f"alternating (p50/p99 of that round). "
        f"Throttle scope 'score' raised to {THROTTLE} (THROTTLE_SCORE) so it never caps.\n"
        f"Baseline: in-process warm scorer, score(C1 dict) + to_dict, one core, same spec = "
        f"{baseline:,.0f} traj/s (measured in this run).\n"
        f"Machine: {load_before} before the HTTP runs, {load()} after.\n"
        f"CPU ms/req: CPU time of all gunicorn processes per request in that round (not counting "
        f"PostgreSQL or wrk); it moves much less with other load than req/s does."
    )
    header = (
        f"{'workers':<12} {'mode':<12} {'req/s':>8} {'traj/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'errors':>6} {'vs baseline':>11} {'CPU ms/req':>10} {'CPU ms/traj':>11}"
    )
    print(f"prod = rewardhub/gunicorn_conf.py as shipped: {prod_worker_class(env)}")
    print(header)
    print("-" * len(header))
    print(
        f"{'in-proc':<12} {'warm scorer':<12} {'':>8} {baseline:>8,.0f} {'':>7} {'':>7} {'':>6} "
        f"{1.0:>10.2f}x {'':>10} {'':>11}"
    )
    for wc, r in rows:
        print(
            f"{wc:<12} {r.mode:<12} {r.rps:>8,.0f} {r.traj_per_s:>8,.0f} {r.p50_ms:>7.1f} "
            f"{r.p99_ms:>7.1f} {r.errors:>6} {r.traj_per_s / baseline:>10.2f}x "
            f"{r.cpu_ms:>10.2f} {r.cpu_ms * r.rps / r.traj_per_s:>11.2f}"
        )
    print()
    by_class: dict[str, dict[str, Row]] = {}
    for wc, r in rows:
        by_class.setdefault(wc, {})["single" if r.mode == "single" else "batch"] = r
    best_wc = max(by_class, key=lambda wc: by_class[wc]["single"].rps)
    if "sync" in by_class:
        for wc in by_class:
            if wc == "sync":
                continue
            single = by_class[wc]["single"].rps / by_class["sync"]["single"].rps
            batch = by_class[wc]["batch"].rps / by_class["sync"]["batch"].rps
            verdict = "met" if min(single, batch) >= TARGET_VS_SYNC else "NOT met"
            # CPU per request moves far less with other load on the machine than req/s.
            cpu = [by_class["sync"][m].cpu_ms / by_class[wc][m].cpu_ms for m in ("single", "batch")]
            print(
                f"{wc} vs plain sync: single {single:.2f}x, batch {batch:.2f}x "
                f"(target >= {TARGET_VS_SYNC}x on both: {verdict}); by CPU ms/req: "
                f"single {cpu[0]:.2f}x, batch {cpu[1]:.2f}x"
            )
    s, b = by_class[best_wc]["single"], by_class[best_wc]["batch"]
    ratio = b.traj_per_s / s.traj_per_s
    ok = "met" if s.rps >= TARGET_RPS and s.p99_ms < TARGET_P99_MS else "NOT met"
    print(
        f"better worker class: {best_wc} (by single req/s). Target >= {TARGET_RPS} req/s with "
        f"p99 < {TARGET_P99_MS:.0f} ms: {ok} ({s.rps:,.0f} req/s, p99 {s.p99_ms:.1f} ms)"
    )
    print(
        f"batch vs single traj/s ({best_wc}): {b.traj_per_s:,.0f} / {s.traj_per_s:,.0f} = "
        f"{ratio:.2f}x (target >= {TARGET_BATCH_RATIO:.0f}x: "
        f"{'met' if ratio >= TARGET_BATCH_RATIO else 'NOT met'})"
    )
    fixed, per_traj = split_cpu(s.cpu_ms, b.cpu_ms, args.batch)
    ceiling = (fixed + per_traj) / (per_traj + fixed / args.batch)
    print(
        f"CPU split ({best_wc}): {fixed:.2f} ms per request (parse of headers, auth, throttle, "
        f"version lookup, middleware) + {per_traj:.2f} ms per trajectory (body parse, scoring, "
        f"digest, record, response).\n  A CPU-bound batch of {args.batch} can then reach at most "
        f"{ceiling:.2f}x the single rate; {TARGET_BATCH_RATIO:.0f}x needs a per-trajectory cost "
        f"<= {max_per_traj(fixed, args.batch, TARGET_BATCH_RATIO):.2f} ms at this per-request cost."
    )
    print(
        f"in-process warm baseline {baseline:,.0f} traj/s (target >= {TARGET_INPROC:,}: "
        f"{'met' if baseline >= TARGET_INPROC else 'NOT met'})"
    )
    if any(r.errors for _, r in rows):
        print("WARNING: some requests failed (see the errors column); their numbers are not valid")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
