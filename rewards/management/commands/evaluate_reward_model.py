"""evaluate_reward_model SLUG: a version's evaluation on the attached sets beside the active
version's, case by case; ``--activate`` goes through the same gate as the browser and the API."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from core.models import User
from rewards.models import EvaluationSet, RewardModel
from rewards.services import evaluation as ev
from rewards.services.rewards import reward_model_activate


def _rate(metric: dict[str, Any] | None) -> str:
    if not metric or metric.get("rate") is None:
        return "-"
    lo, hi = metric["ci"]
    return f"{metric['k']}/{metric['n']} = {metric['rate']:.3f} [{lo:.3f}, {hi:.3f}]"


def _summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if k != "outcomes"}


class Command(BaseCommand):
    help = "Evaluate a reward model version on its attached evaluation sets (and gate activation)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("reward_model", help="reward model slug")
        parser.add_argument("--number", type=int, help="the version number (default: the newest)")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            help="an evaluation set slug to evaluate on as well as the attached ones (repeatable)",
        )
        parser.add_argument(
            "--draft",
            action="store_true",
            help="measure the current inputs with the draft (unpublished) policy instead",
        )
        parser.add_argument("--activate", action="store_true", help="then activate, gated")
        parser.add_argument("--override-reason", default="", help="an expert's written reason")
        parser.add_argument("--user", default="", help="who acts (needed for an override)")
        parser.add_argument("--check", action="store_true", help="exit 1 on a regression")
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        reward_model = (
            RewardModel.objects.select_related("active_version")
            .filter(slug=options["reward_model"])
            .first()
        )
        if reward_model is None:
            raise CommandError(f"unknown reward model {options['reward_model']!r}")
        versions = reward_model.versions.order_by("-number")
        if options["number"] is not None:
            versions = versions.filter(number=options["number"])
        version = versions.first()
        if version is None:
            raise CommandError(f"{reward_model.slug} has no such version")
        if options["draft"]:
            self._draft(reward_model, options)
            return
        user = None
        if options["user"]:
            user = User.objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"unknown user {options['user']!r}")
        set_versions = ev.attached_set_versions(reward_model)
        for slug in options["set"]:
            extra = EvaluationSet.objects.filter(slug=slug).first()
            latest = ev.latest_set_version(extra) if extra else None
            if latest is None:
                raise CommandError(f"unknown or empty evaluation set {slug!r}")
            if latest not in set_versions:
                set_versions.append(latest)
        if not set_versions:
            raise CommandError(f"no evaluation set is attached to {reward_model.slug}")
        baseline = reward_model.active_version
        report = []
        total = sum(s.case_count for s in set_versions) * (2 if baseline else 1)
        with tqdm(
            total=total, unit="case", file=sys.stderr, disable=options["no_progress"] or None
        ) as bar:
            for set_version in set_versions:
                results = {}
                for name, which in (("version", version), ("active", baseline)):
                    if which is None:
                        continue
                    seen = [0]

                    def progress(done: int, _total: int, seen: list[int] = seen) -> None:
                        bar.update(done - seen[0])
                        seen[0] = done

                    results[name] = ev.evaluate_version_on_set(
                        version=which, set_version=set_version, progress=progress
                    )
                    bar.update(set_version.case_count - seen[0])
                diff = {"newly_caught": [], "newly_missed": []}
                if "active" in results and baseline.pk != version.pk:  # type: ignore[union-attr]
                    diff = ev.compare_outcomes(
                        results["version"].metrics["outcomes"],
                        results["active"].metrics["outcomes"],
                    )
                report.append((set_version, results, diff))
        regressed = self._print(reward_model, version, baseline, report, options["json"])
        if options["activate"]:
            try:
                reward_model_activate(
                    reward_model=reward_model,
                    version=version,
                    user=user,
                    override_reason=options["override_reason"],
                )
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
            self.stdout.write(f"{reward_model.slug} v{version.number} is active.")
        elif options["check"] and regressed:
            raise CommandError(f"v{version.number} newly misses {regressed} case(s)")

    def _draft(self, reward_model: RewardModel, options: dict[str, Any]) -> None:
        try:
            rows = ev.draft_comparison(reward_model=reward_model)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        regressed = 0
        for row in rows:
            outcomes = row["metrics"]["outcomes"]
            missed = [k for k in row["newly_missed"] if outcomes[k]["kind"] in ev.GATING_KINDS]
            regressed += len(missed)
            metrics = row["metrics"]
            self.stdout.write(f"draft policy on {row['set_version']}")
            self.stdout.write(f"  {'recall':14} {_rate(metrics['commands']['recall'])}")
            self.stdout.write(f"  {'FPR':14} {_rate(metrics['commands']['fpr'])}")
            self.stdout.write(f"  {'pair accuracy':14} {_rate(metrics['pairs']['accuracy'])}")
            for key in row["newly_missed"]:
                self.stdout.write(f"  newly missed: {key}")
            for key in row["newly_caught"]:
                self.stdout.write(f"  newly caught: {key}")
        if options["check"] and regressed:
            raise CommandError(f"the draft policy newly misses {regressed} case(s)")

    def _print(self, reward_model, version, baseline, report, as_json) -> int:  # type: ignore[no-untyped-def]
        regressed = 0
        out = []
        for set_version, results, diff in report:
            outcomes = results["version"].metrics["outcomes"]
            gating = [k for k in diff["newly_missed"] if outcomes[k]["kind"] in ev.GATING_KINDS]
            regressed += len(gating)
            out.append(
                {
                    "set": str(set_version),
                    "version": {
                        k: v for k, v in results["version"].metrics.items() if k != "outcomes"
                    },
                    "active": (
                        {k: v for k, v in results["active"].metrics.items() if k != "outcomes"}
                        if "active" in results
                        else None
                    ),
                    **diff,
                }
            )
        if as_json:
            self.stdout.write(json.dumps(out, indent=1, sort_keys=True))
            return regressed
        base = f"v{baseline.number}" if baseline else "none"
        self.stdout.write(f"{reward_model.slug} v{version.number} against the active {base}")
        for item in out:
            self.stdout.write(f"\n{item['set']}")
            for label, path in (
                ("recall", ("commands", "recall")),
                ("FPR", ("commands", "fpr")),
                ("pair accuracy", ("pairs", "accuracy")),
            ):
                mine = item["version"][path[0]][path[1]]
                theirs = item["active"][path[0]][path[1]] if item["active"] else None
                self.stdout.write(f"  {label:14} {_rate(mine):40} {_rate(theirs)}")
            steps = item["version"]["steps"]
            self.stdout.write(f"  {'step AUC':14} {steps['auc']} {steps['auc_ci']}")
            self.stdout.write(f"  {'step kappa':14} {steps['kappa']} {steps['kappa_ci']}")
            for key in item["newly_missed"]:
                self.stdout.write(f"  newly missed: {key}")
            for key in item["newly_caught"]:
                self.stdout.write(f"  newly caught: {key}")
        return regressed
