"""A burst of single-sample OpenRLHF reward requests against the run mode ``make serve`` ships.

    .venv/bin/python bench/bench_burst.py [--samples 1024] [--rounds 3] [--workers N]

OpenRLHF 0.11 sends one request per sample, all at once, to ``--remote_rm_url``; each request
is tried 5 times, 1 second apart, ignoring ``Retry-After``, and a sample whose 5 tries all fail
gets no reward. This bench does exactly that (an asyncio client, one connection per try, as
aiohttp's fresh ``ClientSession`` per try does) with ``--samples`` concurrent requests against
gunicorn started with ``rewardhub/gunicorn_conf.py`` (the shipped worker class, shedding and
backlog settings, access log on) on 127.0.0.1, with its own database ``rewardhub_burst`` (or
``RH_BURST_DATABASE``). It
reports per round: rewards received and lost, tries, status counts, time to the last reward.
Exits 1 if any reward was lost. Every process it starts is stopped on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_harness import HOST, REWARD_MODEL, gunicorn, loadavg, prepare_database, service_env

# RH_BURST_DATABASE: another name, so benches of two checkouts on one server do not share it
DB_NAME = os.environ.get("RH_BURST_DATABASE", "rewardhub_burst")
PROMPT = (
    "<|im_start|>system\nYou are a coding agent.<|im_end|>\n<|im_start|>user\nThe test "
    "tests/test_parser.py fails. Fix the parser, not the test.<|im_end|>\n<|im_start|>assistant\n"
)
RESPONSES = [
    'I will run the test first.\n<tool_call>\n{"name": "bash", "arguments": {"command": '
    '"pytest -q tests/test_parser.py"}}\n</tool_call>',
    "Let me look at the parser.\n```bash\nsed -n 1,80p src/parser.py\n```",
    "The quickest way is to drop the test.\n```bash\nrm tests/test_parser.py && pytest -q\n```",
]


@dataclass
class Outcome:
    ok: bool = False
    tries: int = 0
    statuses: list[int | str] = field(default_factory=list)
    done_at: float = 0.0


async def post_once(port: int, path: str, body: bytes, timeout: float) -> int | str:
    """One POST on a fresh connection; the status, or what failed instead: ``refused``,
    ``reset``, ``timeout``, ``empty`` (closed with no answer), ``bad`` (a 2xx without the
    one reward)."""
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), timeout)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        writer.write(head + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
        status_line = raw.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2:
            return "empty"
        status = int(status_line[1])
        if 200 <= status < 300:
            payload = json.loads(raw.split(b"\r\n\r\n", 1)[1])
            if len(payload.get("rewards", [])) != 1:
                return "bad"
        return status
    except TimeoutError:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except OSError as exc:
        return type(exc).__name__
    except (ValueError, IndexError):
        return "bad"
    finally:
        if writer is not None:
            writer.close()


async def openrlhf_sample(port: int, path: str, body: bytes, t0: float) -> Outcome:
    """OpenRLHF 0.11's ``_post_request``: 5 tries, 1 s apart, any failure retried alike."""
    out = Outcome()
    for _ in range(5):
        out.tries += 1
        status = await post_once(port, path, body, timeout=180)
        out.statuses.append(status)
        if isinstance(status, int) and 200 <= status < 300:
            out.ok, out.done_at = True, time.monotonic() - t0
            return out
        await asyncio.sleep(1)
    out.done_at = time.monotonic() - t0
    return out


async def burst(port: int, path: str, samples: int) -> tuple[list[Outcome], float]:
    bodies = [
        json.dumps(
            {"query": [PROMPT + RESPONSES[i % 3]], "prompts": [PROMPT], "labels": [True]}
        ).encode()
        for i in range(samples)
    ]
    t0 = time.monotonic()
    outcomes = await asyncio.gather(*(openrlhf_sample(port, path, b, t0) for b in bodies))
    return list(outcomes), time.monotonic() - t0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024, help="concurrent requests")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="0: the shipped default")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds between rounds")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the server (repeatable)"
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGALRM, _interrupt)
    signal.alarm(int(120 + args.rounds * (200 + args.pause)))
    extra = dict(item.split("=", 1) for item in args.env)
    env = service_env(DB_NAME, **extra)
    print(f"preparing database {DB_NAME} ...", flush=True)
    key = prepare_database(env, DB_NAME)
    path = f"/api/v1/openrlhf/{REWARD_MODEL}/{key}?run=burst"
    failed = False
    with gunicorn(env, args.workers or None) as server:
        port = int(server.base.rsplit(":", 1)[1])
        asyncio.run(burst(port, path, 8))  # warm every worker's caches
        print(
            f"{args.samples} concurrent single-sample requests, OpenRLHF 0.11's retry "
            f"(5 tries, 1 s apart, Retry-After ignored); server: rewardhub/gunicorn_conf.py"
            f"{' with ' + str(extra) if extra else ''}; {loadavg()}"
        )
        print(
            f"{'round':>5} {'rewards':>8} {'lost':>5} {'tries':>6} {'retried':>8} "
            f"{'statuses':<34} {'last reward s':>13} {'p50 s':>6}"
        )
        for n in range(args.rounds):
            outcomes, took = asyncio.run(burst(port, path, args.samples))
            ok = [o for o in outcomes if o.ok]
            lost = len(outcomes) - len(ok)
            failed |= lost > 0
            statuses = Counter(s for o in outcomes for s in o.statuses)
            done = sorted(o.done_at for o in ok)
            last, p50 = (done[-1], done[len(done) // 2]) if done else (took, 0.0)
            print(
                f"{n + 1:>5} {len(ok):>8} {lost:>5} {sum(o.tries for o in outcomes):>6} "
                f"{sum(o.tries > 1 for o in outcomes):>8} "
                f"{json.dumps(dict(sorted(statuses.items(), key=lambda kv: str(kv[0])))):<34} "
                f"{last:>13.2f} {p50:>6.2f}",
                flush=True,
            )
            time.sleep(args.pause)
    print(f"machine after: {loadavg()}")
    if failed:
        print("FAILED: rewards were lost")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        raise SystemExit(130) from None
