"""In-process scorer throughput on one core: cold and warm analyzer cache vs the analyzer alone.

    .venv/bin/python bench/bench_scorer.py [--seconds 2]

The trajectory is a realistic 30-step SWE-style bug fix (20 shell actions, editor calls, tool
output of a few KB) built below. Baseline: the analyzer alone over the same 20 commands with its
cache off, so the ratios say what the rest of the scorer costs (cold) or saves (warm).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.canonical import normalize_trajectory
from rewards.scoring import build_scorer, default_spec

PYTEST_FAIL = (
    "============================= test session starts ==============================\n"
    "collected 13 items\n\ntests/test_parser.py .F...........\n\n"
    "=================================== FAILURES ===================================\n"
    "____________________________ test_tokenize_first _____________________________\n"
    + "    def test_tokenize_first():\n>       assert tokenize('a b') == ['a', 'b']\n"
    * 20
    + "E       AssertionError: assert ['b'] == ['a', 'b']\n"
    "========================= 1 failed, 12 passed in 0.31s =========================\n"
)
SOURCE = "".join(f"{i:4d}  def helper_{i}(tokens):\n      return tokens[{i}:]\n" for i in range(60))

SHELL = [
    ("ls -la /testbed", "total 48\n" + "drwxr-xr-x  2 root root 4096 src\n" * 12),
    ("cd /testbed && git status --short", " M README.md\n"),
    (
        "find . -name '*.py' -path '*parser*' | head -20",
        "./src/parser.py\n./tests/test_parser.py\n",
    ),
    ("cat src/parser.py", SOURCE),
    ("python -m pytest -q tests/test_parser.py", PYTEST_FAIL),
    ("grep -rn 'def tokenize' src/ tests/", "src/parser.py:12:def tokenize(text):\n"),
    ("sed -n '1,80p' tests/test_parser.py", SOURCE),
    ("git log --oneline -5", "a1b2c3d Fix lexer\n" * 5),
    ("git diff HEAD~1 -- src/parser.py | head -50", "diff --git a/src/parser.py\n" + SOURCE[:800]),
    ('python -c "import parser; print(parser.__file__)"', "/testbed/src/parser.py\n"),
    ("sed -i 's/return tokens\\[1:\\]/return tokens/' src/parser.py", ""),
    ("python -m pytest -q tests/test_parser.py -x 2>&1 | tail -5", "13 passed in 0.30s\n"),
    (
        "cat > /tmp/repro.py <<'EOF'\nfrom parser import tokenize\nprint(tokenize('a b c'))\nEOF",
        "",
    ),
    ("cd /testbed && PYTHONPATH=src python /tmp/repro.py", "['a', 'b', 'c']\n"),
    ("grep -n 'tokens\\[' src/*.py", "src/parser.py:14:    return tokens\n"),
    ("pip list 2>/dev/null | grep -i pytest", "pytest 8.3.2\n"),
    ("python -m pytest -q tests/ 2>&1 | tail -3", "212 passed in 4.12s\n"),
    ("git diff --stat", " src/parser.py | 2 +-\n 1 file changed\n"),
    ("rm -f /tmp/repro.py && ls /tmp", "\n"),
    ("git status && git diff", " M src/parser.py\n" + SOURCE[:400]),
]


def build_trajectory() -> dict:
    """30 assistant steps: 20 shell actions, 5 editor calls, 5 thinking-only steps."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a careful coding agent. " * 40},
        {"role": "user", "content": "Fix the failing test in tests/test_parser.py.\n" * 5},
    ]
    editor = [
        {"command": "view", "path": "/testbed/src/parser.py"},
        {"command": "view", "path": "/testbed/tests/test_parser.py", "view_range": [1, 40]},
        {
            "command": "str_replace",
            "path": "/testbed/src/parser.py",
            "old_str": "a",
            "new_str": "b",
        },
        {"command": "view", "path": "/testbed/src/parser.py", "view_range": [10, 20]},
        {"command": "create", "path": "/testbed/docs/notes.md", "file_text": "tokenizer fix\n"},
    ]
    shell = iter(SHELL)
    edits = iter(editor)
    for step in range(30):
        call_id = f"call_{step}"
        thought = f"Step {step}: let me think about what the tokenizer does here. " * 3
        if step % 6 == 5:
            messages.append({"role": "assistant", "reasoning_content": thought, "content": "Hmm."})
            continue
        if step % 6 == 2:
            args = next(edits)
            name, output = "str_replace_editor", SOURCE[:1500]
        else:
            command, output = next(shell)
            name, args = "bash", {"command": command}
        messages.append(
            {
                "role": "assistant",
                "reasoning_content": thought,
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return {
        "id": "bench-rollout",
        "task_type": "swe-bugfix",
        "messages": messages,
        "outcome": {"resolved": True, "tests_passed": 212, "tests_failed": 0},
        "metadata": {"workspace": "/testbed"},
    }


def rate(fn: Callable[[], object], seconds: float, rounds: int = 5) -> float:
    """Calls per second of fn: the best of ``rounds`` runs sharing ``seconds`` (as timeit advises:
    slower runs measure other load on the machine, not the code)."""
    fn()
    best = 0.0
    for _ in range(rounds):
        n = 0
        start = time.perf_counter()
        deadline = start + seconds / rounds
        while True:
            fn()
            n += 1
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, n / (now - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy

    spec = default_spec()
    scorer = build_scorer(spec)
    traj = build_trajectory()
    canonical = normalize_trajectory(traj)
    size = len(json.dumps(traj).encode())  # what an API body or a JSONL line tells the scorer
    commands = [c for c, _ in SHELL]
    tt = spec["task_type"]
    config = AnalyzerConfig(
        workspace_roots=tuple(tt["workspace_roots"]),
        test_path_patterns=tuple(tt["test_path_patterns"]),
        cache_size=0,
    )
    bare = Analyzer(load_default_policy(), config)

    def baseline() -> None:
        for command in commands:
            bare.analyze(command)

    def cold() -> None:
        scorer.cache_clear()  # empty the results cache of the analyzer the scorer shares
        scorer.score(traj).to_dict()

    rows = [
        ("baseline: analyzer alone, 20 commands, no cache", baseline),
        ("scorer cold: fresh analyzer cache, score + to_dict", cold),
        ("scorer warm: score(C1 dict) + to_dict", lambda: scorer.score(traj).to_dict()),
        (
            "  the same, JSON size known (the API and CLI path)",
            lambda: scorer.score(traj, source_bytes=size).to_dict(),
        ),
        ("scorer warm: score(C1 dict)", lambda: scorer.score(traj)),
        (
            "scorer warm: score_canonical (pre-normalised)",
            lambda: scorer.score_canonical(canonical),
        ),
    ]
    result = scorer.score(traj)
    n_cmds = sum(1 for m in canonical["messages"] for c in m.get("tool_calls", []))
    print(
        f"trajectory: {len(result.steps)} steps, {len(commands)} shell actions, "
        f"{n_cmds} tool calls, {len(json.dumps(traj)) / 1024:.0f} KiB; reward {result.reward:.3f}; "
        f"python {sys.version.split()[0]}, one core, best of 5 runs in {args.seconds:.1f}s per row"
    )
    print(f"{'measurement':<52} {'traj/s':>10} {'ms/traj':>9} {'vs baseline':>12}")
    print("-" * 86)
    base = 0.0
    for name, fn in rows:
        per_s = rate(fn, args.seconds)
        base = base or per_s
        print(f"{name:<52} {per_s:>10,.0f} {1000 / per_s:>9.3f} {per_s / base:>11.2f}x")


if __name__ == "__main__":
    main()
