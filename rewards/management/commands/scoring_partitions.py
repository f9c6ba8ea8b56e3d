"""scoring_partitions convert|ensure|detach|status: scoring records partitioned by month
(``rewards.partitions``; PostgreSQL only)."""

from __future__ import annotations

from datetime import date

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rewards import partitions


def _month(text: str) -> date:
    try:
        year, month = (int(part) for part in text.split("-"))
        return date(year, month, 1)
    except ValueError as exc:
        raise CommandError(f"--before: expected a month as YYYY-MM, got {text!r}") from exc


class Command(BaseCommand):
    help = (
        "Scoring records by month: `convert` the table (once), `ensure` the coming months' "
        "partitions (daily), `detach --before YYYY-MM` old months to archive, `status`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["convert", "ensure", "detach", "status"])
        parser.add_argument(
            "--months-ahead", type=int, default=3, help="convert/ensure: months made ahead (3)"
        )
        parser.add_argument("--before", help="detach: months ending on or before this one")

    def handle(self, *args: object, **options: object) -> None:
        action = options["action"]
        ahead = int(options["months_ahead"])  # type: ignore[call-overload]
        if ahead < 0 or ahead > 120:
            raise CommandError("--months-ahead: expected 0 to 120")
        try:
            if action == "convert":
                for p in partitions.convert(months_ahead=ahead):
                    self.stdout.write(f"{p.name}\t{p.rows} rows")
            elif action == "ensure":
                made = partitions.ensure(months_ahead=ahead)
                self.stdout.write("\n".join(made) if made else "every partition exists")
            elif action == "detach":
                if not options["before"]:
                    raise CommandError("detach needs --before YYYY-MM")
                detached = partitions.detach(before=_month(str(options["before"])))
                for name in detached:
                    self.stdout.write(
                        f"detached {name}: archive it (pg_dump -t {name}), then drop it"
                    )
                if not detached:
                    self.stdout.write("no month partition ends by then")
            else:
                rows = partitions.status()
                if not rows:
                    self.stdout.write(f"{partitions.TABLE} is not partitioned")
                for p in rows:
                    self.stdout.write(f"{p.name}\t{p.start or 'default'}\t{p.rows} rows")
        except partitions.PartitionError as exc:
            raise CommandError(str(exc)) from exc
