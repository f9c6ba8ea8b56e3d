"""Inputs found by `make fuzz` that made a parser loop forever. Run in a child process with a
timeout, so a regression is a failure instead of a hung test run (and a hung API thread)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_unterminated_brace_in_single_quotes_does_not_hang_bashlex() -> None:
    """bashlex 0.18 looped forever, growing memory, on ``echo '${'x`` (fuzz input 25123)."""
    code = (
        "from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy\n"
        "a = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=0))\n"
        "for s in [\"echo '${'x\", \"'${'e\", \"\\n'${'e\", \"a=1 '${'b c\"]:\n"
        "    r = a.analyze(s)\n"
        "    assert r.parsers.get('bashlex') is not True, (s, r.parsers)\n"
        "print(a.analyze(\"echo '${'x\").verdict)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "allow"  # bash prints ${x; tree-sitter reads it fine
