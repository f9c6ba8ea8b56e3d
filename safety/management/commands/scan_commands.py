"""scan_commands [--policy SLUG] [--workspace DIR] [--input FILE] (CONTRACTS C4).

Reads commands one per line, or JSON lines ``{"cmd": "..."}`` for multi-line commands, and
writes one JSON line per command, in order. Without ``--policy`` it needs no database.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser

from safety.analyzer import Analyzer, load_default_policy


def read_commands(stream: TextIO) -> Iterator[tuple[int, str | None, str | None]]:
    """Yield (line number, command, error). A line is JSON only if it decodes to {"cmd": ...}."""
    for number, raw in enumerate(stream, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                decoded = json.loads(line)
            except json.JSONDecodeError:
                decoded = None  # e.g. a brace group `{ make; }`: a plain command
            except (ValueError, RecursionError):  # JSON, but too deep or a number too long
                yield number, None, f"line {number}: JSON that cannot be read (nested too deeply?)"
                continue
            if isinstance(decoded, dict) and "cmd" in decoded:
                cmd = decoded["cmd"]
                if isinstance(cmd, str):
                    yield number, cmd, None
                else:
                    yield number, None, f"line {number}: 'cmd' must be a string"
                continue
        yield number, line, None


class Command(BaseCommand):
    help = "Statically analyze shell commands (never runs them); one JSON line out per command."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--policy", help="policy slug or slug@N (default: built-in policy)")
        parser.add_argument(
            "--workspace", action="append", help="workspace root (repeatable; default /testbed)"
        )
        parser.add_argument("--input", help="file to read (default: stdin)")

    def _analyzer(self, options: dict[str, Any]) -> Analyzer:
        workspace = options.get("workspace")
        if workspace and any(not w.startswith("/") for w in workspace):
            raise CommandError("--workspace must be an absolute path")
        if options.get("policy"):
            from safety import selectors, services

            version = selectors.version_by_ref(options["policy"])
            if version is None:
                raise CommandError(f"unknown policy or version {options['policy']!r}")
            return services.analyzer_for(version, workspace)
        from safety.services import analyzer_config

        return Analyzer(load_default_policy(), analyzer_config(workspace))

    def handle(self, *args: Any, **options: Any) -> None:
        analyzer = self._analyzer(options)
        try:
            stream: TextIO = (
                open(options["input"], encoding="utf-8", errors="replace")  # noqa: SIM115
                if options.get("input")
                else sys.stdin
            )
        except OSError as exc:
            raise CommandError(f"cannot read {options['input']}: {exc}") from exc
        out = self.stdout
        errors = 0
        with stream:
            for _line, command, error in read_commands(stream):
                if error is not None:
                    errors += 1
                    self.stderr.write(error)
                    continue
                assert command is not None
                analysis = analyzer.analyze(command)
                record = {
                    "command": command,
                    "verdict": analysis.verdict,
                    "findings": [
                        {
                            "rule": f.rule,
                            "category": f.category,
                            "severity": f.severity,
                            "action": f.action,
                            "span": [f.span[0], f.span[1]],
                            "message": f.message,
                        }
                        for f in analysis.findings
                    ],
                }
                out.write(json.dumps(record, ensure_ascii=False))
        if errors:
            raise CommandError(f"{errors} input line(s) could not be read")
