"""Load shedding under overload: the score API at its sustainable rate, at 10x, and after.

    .venv/bin/python bench/loadtest.py [--rate 330] [--factor 10] [--seconds 15]

gunicorn runs as ``make serve`` runs it (2 workers x 4 threads of the shedding gthread worker,
``RH_SHED_QUEUE_SECONDS``), against its own database (``rewardhub_loadtest``, created and seeded
on first use). wrk drives ``POST /api/v1/score/`` (the 30-step trajectory of bench_scorer) from
a second process; a Lua script counts the status of every response.

Plain wrk has no fixed-rate mode (wrk2's), so the rate is approximated: ``--connections`` each
wait ``delay`` ms between requests, the delay chosen from a warm-up so that the connections
together send ``--rate`` requests per second; the overload phase opens ``--factor`` times as
many connections with the same delay. The table shows the rate actually sent next to the target
(a closed loop sends less when answers slow down, which is the point of shedding quickly).

Phases: sustainable -> overload -> recovery (time from the end of the burst until a normal
request is answered 200 again) -> sustainable again. Exits 1 if any response was a 5xx other
than 503, or the server logged an internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scorer import build_trajectory
from service_harness import (
    REWARD_MODEL,
    WrkResult,
    gunicorn,
    loadavg,
    lua_script,
    post_status,
    prepare_database,
    service_env,
    wrk,
)

DB_NAME = "rewardhub_loadtest"
SCORE = "/api/v1/score/"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def row(phase: str, conns: int, target: float, r: WrkResult) -> str:
    ok = r.count(200, 299)
    return (
        f"{phase:<12} {conns:>6} {target:>8,.0f} {r.rate:>8,.0f} {ok / r.seconds:>7,.0f} "
        f"{ok:>7} {r.status.get(429, 0):>6} {r.status.get(503, 0):>7} "
        f"{r.count(500, 599, but=(503,)):>6} {r.socket_errors:>6} {r.p50_ms:>8.1f} {r.p99_ms:>8.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="sustainable req/s (default: 80%% of the capacity measured first, which follows "
        "the machine's current load; ~330 on an idle 2-core machine)",
    )
    parser.add_argument("--probe-connections", type=int, default=4, help="for the capacity")
    parser.add_argument("--factor", type=float, default=10.0, help="overload = factor x rate")
    parser.add_argument("--seconds", type=float, default=15.0, help="duration of each phase")
    parser.add_argument("--connections", type=int, default=32, help="connections at --rate")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument(
        "--throttle",
        default="1000000/s",
        help="THROTTLE_SCORE for the run (default: high, so the shedding, not the per-key "
        "throttle, is what answers the overload; e.g. 100/s to see 429s)",
    )
    parser.add_argument("--db", default=DB_NAME)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)

    env = service_env(args.db, THROTTLE_SCORE=args.throttle)
    print(f"preparing database {args.db} (migrate, seed_demo, API key) ...", flush=True)
    key = prepare_database(env, args.db)
    body = json.dumps({"reward_model": REWARD_MODEL, "trajectory": build_trajectory()})
    load_before = loadavg()
    rows: list[str] = []
    bad = 0
    with (
        tempfile.TemporaryDirectory(prefix="rh-loadtest-") as tmpdir,
        gunicorn(env, args.workers, args.threads) as server,
    ):
        tmp = Path(tmpdir)
        url = server.base + SCORE
        if post_status(url, key, body.encode()) != 200:
            raise SystemExit("a single score request failed before the load test")
        unpaced = lua_script(tmp, "unpaced", key, [body])
        wrk(url, unpaced, 2, args.probe_connections, args.wrk_threads)  # warm caches and pools
        probe = wrk(url, unpaced, 5, args.probe_connections, args.wrk_threads)
        capacity = probe.count(200, 299) / probe.seconds
        rate = args.rate or 0.8 * capacity
        delay = max(0, math.floor(args.connections * 1000 / rate - probe.p50_ms))
        script = lua_script(tmp, "paced", key, [body], delay)
        overload = max(args.connections, round(args.connections * args.factor))
        print(f"capacity {capacity:,.0f} req/s ({args.probe_connections} connections, p50 "
              f"{probe.p50_ms:.1f} ms); sustainable rate {rate:,.0f} req/s; "
              f"per-connection delay {delay} ms", flush=True)  # fmt: skip

        before = wrk(url, script, args.seconds, args.connections, args.wrk_threads)
        rows.append(row("capacity", args.probe_connections, capacity, probe))
        rows.append(row("sustainable", args.connections, rate, before))
        burst = wrk(url, script, args.seconds, overload, args.wrk_threads)
        ended = time.monotonic()
        rows.append(row(f"{args.factor:g}x", overload, rate * args.factor, burst))
        while post_status(url, key, body.encode()) != 200:
            if time.monotonic() - ended > 60:
                raise SystemExit("no 200 within 60 s after the burst: the service did not recover")
            time.sleep(0.02)
        recovery = time.monotonic() - ended
        after = wrk(url, script, args.seconds, args.connections, args.wrk_threads)
        rows.append(row("after", args.connections, rate, after))
        for r in (before, burst, after):
            bad += r.count(500, 599, but=(503,))
        log = server.log.read_text(errors="replace")
        internal = log.count("Internal Server Error")

    print()
    print(
        f"Score API under gunicorn ({args.workers} workers x {args.threads} threads, shedding "
        f"gthread worker), wrk {args.wrk_threads} threads, {args.seconds:.0f} s per phase, "
        f"per-connection delay {delay} ms; THROTTLE_SCORE={args.throttle}, "
        f"RH_SHED_MAX_QUEUE={env.get('RH_SHED_MAX_QUEUE', '32 (default)')}, "
        f"RH_SHED_QUEUE_SECONDS={env.get('RH_SHED_QUEUE_SECONDS', '0.5 (default)')}.\n"
        f"Machine: {load_before} before, {loadavg()} after."
    )
    header = (
        f"{'phase':<12} {'conns':>6} {'target/s':>8} {'sent/s':>8} {'2xx/s':>7} {'2xx':>7} "
        f"{'429':>6} {'503':>7} {'5xx*':>6} {'sock':>6} {'p50 ms':>8} {'p99 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    print("\n".join(rows))
    print(
        "capacity: unpaced closed loop (its 'target' is what it achieved); 5xx*: server errors "
        "other than 503; sock: wrk connect/read/write errors and timeouts; p50/p99 over all "
        "responses of the phase. A closed loop sends less than its target once answers slow "
        "down: 'sent/s' is what the server had to answer or refuse."
    )
    print(f"recovery after the burst: first 200 after {recovery * 1000:.0f} ms")
    print(f"server log: {internal} internal server errors")
    if bad or internal:
        print(f"FAIL: {bad} responses were 5xx other than 503")
        return 1
    print("OK: overload was shed with 429/503 only, never a 500")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        raise SystemExit(130) from None
