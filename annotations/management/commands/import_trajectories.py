"""import_trajectories FILE [--format ...] [--task-type SLUG] (CONTRACTS C4)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from annotations.importers import FORMATS, iter_records
from annotations.services import trajectory_import


class Command(BaseCommand):
    help = "Import trajectories from a JSON object, a JSON array or JSONL file (or - for stdin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])
        parser.add_argument("--task-type", default=None)
        parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc

        counts = {"imported": 0, "duplicate": 0, "rejected": 0}
        rejected: list[str] = []
        warnings: list[str] = []
        records = list(iter_records(text))
        # The file's place names what its content may not: an instance id, aider's workspace.
        source = None if path == "-" else str(Path(path).resolve())
        bar = tqdm(
            records, unit="rec", file=self.stderr._out, disable=options["no_progress"] or None
        )
        for parsed in bar:
            if parsed.error is not None:
                counts["rejected"] += 1
                rejected.append(parsed.error)
                continue
            result = trajectory_import(
                record=parsed.record,
                fmt=options["format"],
                task_type=options["task_type"],
                line=parsed.line,
                source=source,
            )
            counts[result.status] += 1
            warnings.extend(f"line {parsed.line}: {w}" for w in result.warnings)
            if result.status == "rejected":
                detail = "; ".join(f"{k}: {' '.join(v)}" for k, v in result.errors.items())
                rejected.append(f"line {parsed.line}: {detail}")
        for message in rejected:
            self.stderr.write(f"rejected {message}")
        for message in warnings:
            self.stderr.write(f"warning {message}")
        self.stdout.write(
            f"imported {counts['imported']}, duplicate {counts['duplicate']}, "
            f"rejected {counts['rejected']}"
        )
        if counts["rejected"] and not counts["imported"] and not counts["duplicate"]:
            raise CommandError("no record could be imported")
