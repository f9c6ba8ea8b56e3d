"""How a rescan's rate scales with scan workers (issue #25): a rescan of a kept scale hub
(``bench_scale.py --keep``), split into parts (``RH_SCAN_PART_SIZE``), run by 1, 2, ... real
Celery workers (one process each, ``--pool solo``) on a real Redis broker; trajectories a
second for each worker count. The rescan uses the default policy's latest version, so it
changes no flag (a scan is idempotent); run it on a bench database, not a live hub.

    .venv/bin/python bench/bench_rescan.py --db rewardhub_scale_s --workers 1,2
    .venv/bin/python bench/bench_rescan.py --db rewardhub_scale_s --task-type swe-feature \\
        --part-size 250 --redis redis://127.0.0.1:6379/14

Each worker is a process with one pool slot, so N workers use at most N cores: on a machine
with 2 cores shared with other work, 2 workers are the most that can help.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "var" / "bench_rescan"  # the workers' logs
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", required=True, help="a kept bench database on 127.0.0.1")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--task-type", default="", help="rescan only this task type's trajectories")
    parser.add_argument("--part-size", type=int, default=500)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    if not counts or min(counts) < 1:
        raise SystemExit("--workers: one or more positive counts, e.g. 1,2")
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{args.db}",
        "DATABASE_POOL": "false",
        "CELERY_BROKER_URL": args.redis,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
        "RH_SCAN_PART_SIZE": str(args.part_size),
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a database kept from an older checkout

    from safety import services
    from safety.models import ScanJob
    from safety.tasks import queue_scan_job

    redis.Redis.from_url(args.redis).flushdb()  # this bench's own broker database
    version = services.default_policy_version()
    results = []
    for n in counts:
        job = services.scan_job_create(policy_version=version, user=None, task_type=args.task_type)
        OUT.mkdir(parents=True, exist_ok=True)
        logs = [(OUT / f"worker-{n}-{i}.log").open("wb") for i in range(n)]
        command = [sys.executable, "-m", "celery", "-A", "rewardhub", "worker", "-Q", "scan",
                   "--pool", "solo", "--without-gossip", "--without-mingle",
                   "--without-heartbeat", "-l", "warning"]  # fmt: skip
        workers = [
            subprocess.Popen(
                [*command, "-n", f"bench{n}-{i}@%h"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for i, log in enumerate(logs)
        ]
        time.sleep(8)  # the workers start (Django, the analyzer registry) before the clock
        started = time.perf_counter()
        queue_scan_job(job.pk)
        while (state := ScanJob.objects.get(pk=job.pk).state) not in ("done", "failed"):
            time.sleep(0.5)
        took = time.perf_counter() - started
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=30)
        for log in logs:
            log.close()
        job.refresh_from_db()
        results.append((n, job.done, took, state, job.parts.count()))
        rate = job.done / took
        print(f"{n} worker(s): {job.done} trajectories in {took:.1f} s, {rate:.0f}/s, "
              f"{job.parts.count()} parts, {state}", flush=True)  # fmt: skip
    base = results[0][1] / results[0][2]
    print(f"\nrescan on {args.db}, load average {os.getloadavg()}")
    for n, done, took, _state, _parts in results:
        print(f"  {n} worker(s): {done / took:7.0f} trajectories/s  ({done / took / base:.2f}x)")


if __name__ == "__main__":
    main()
