"""Analyzer throughput over the NL2Bash corpus, single core, one table.

    .venv/bin/python bench/bench_analyzer.py [--limit N] [--rounds R] [--no-memory]

Modes, each over every command on one core (best of --rounds runs, the machine may be shared):
bashlex parse only (the baseline), tree-sitter parse only, the full analyzer (both parsers +
resolve + default policy, cache off), the same with bashlex on every command (no plain-text fast
path), the full analyzer with the bashlex cross-check off (and, to show what the plain-text front
end saves, the same with tree-sitter reading plain text too), and repeated commands through the
cache. Peak memory is traced with tracemalloc in one extra run (tracing slows code down).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bashlex  # noqa: E402

from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy  # noqa: E402
from safety.analyzer.frontends import treesitter_fe  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "nl2bash" / "commands.txt"


def bashlex_only(lines: list[str]) -> None:
    for line in lines:
        try:
            bashlex.parse(line)
        except Exception:  # noqa: S112 - the baseline counts failures as parsed
            continue


def treesitter_only(lines: list[str]) -> None:
    parser = treesitter_fe._PARSER
    for line in lines:
        parser.parse(line.encode("utf-8", "surrogatepass"))


def analyzer(config: AnalyzerConfig) -> Callable[[list[str]], None]:
    az = Analyzer(load_default_policy(), config)

    def run(lines: list[str]) -> None:
        for line in lines:
            az.analyze(line)

    return run


def cached(lines: list[str], repeats: int) -> Callable[[list[str]], None]:
    az = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=len(lines) + 1))
    for line in lines:  # warm: an RL run sees the same commands again and again
        az.analyze(line)

    def run(_: list[str]) -> None:
        for _ in range(repeats):
            for line in lines:
                az.analyze(line)

    return run


def measure(
    fn: Callable[[list[str]], None], lines: list[str], memory: bool, rounds: int
) -> tuple[float, float]:
    """Best wall time of ``rounds`` runs (the machine may be shared), then a traced run."""
    seconds = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(lines)
        seconds = min(seconds, time.perf_counter() - t0)
    peak = float("nan")
    if memory:
        tracemalloc.start()
        fn(lines)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N commands")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeats", type=int, default=10, help="passes for the cached mode")
    ap.add_argument("--rounds", type=int, default=3, help="report the best of N timed runs")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc passes")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    lines = [ln for ln in args.corpus.read_text("utf-8").split("\n") if ln.strip()]
    if args.limit:
        lines = lines[: args.limit]
    load_default_policy()  # policy load and example checks are not part of the rates
    n = len(lines)
    modes: list[tuple[str, Callable[[list[str]], None], int]] = [
        ("bashlex parse only (baseline)", bashlex_only, n),
        ("tree-sitter parse only", treesitter_only, n),
        ("full analyzer (both parsers, default policy)", analyzer(AnalyzerConfig(cache_size=0)), n),
        (
            "full analyzer, bashlex on every command",
            analyzer(AnalyzerConfig(cache_size=0, bashlex_fast_path=False)),
            n,
        ),
        (
            "full analyzer, bashlex cross-check off",
            analyzer(AnalyzerConfig(cache_size=0, use_bashlex=False)),
            n,
        ),
        (
            "  the same, tree-sitter for plain text too",
            analyzer(AnalyzerConfig(cache_size=0, use_bashlex=False, plain_fast_path=False)),
            n,
        ),
        (
            f"cached repeats ({args.repeats} passes, warm)",
            cached(lines, args.repeats),
            n * args.repeats,
        ),
    ]
    print(
        f"NL2Bash commands: {n}  (python {sys.version.split()[0]}, one core, "
        f"best of {args.rounds} runs; peak MB = tracemalloc peak of one more run)"
    )
    header = f"{'mode':48s} {'commands':>9s} {'seconds':>8s} {'cmd/s':>10s} {'vs bashlex':>10s}"
    print(header + f" {'peak MB':>8s}")
    print("-" * (len(header) + 9))
    base = 0.0
    for name, fn, count in modes:
        seconds, peak = measure(fn, lines, not args.no_memory, args.rounds)
        rate = count / seconds
        base = base or rate
        print(f"{name:48s} {count:9d} {seconds:8.2f} {rate:10.0f} {rate / base:9.0%} {peak:8.1f}")
    if not args.no_memory:
        tracemalloc.start()
        az = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=n + 1))
        for line in lines:
            az.analyze(line)
        cache_mb = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.stop()
        print(f"result cache holding all {n} analyses: {cache_mb:.1f} MB (tracemalloc)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {rss:.0f} MB")


if __name__ == "__main__":
    main()
