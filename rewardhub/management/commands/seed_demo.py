"""seed_demo: idempotent demo data (CONTRACTS C4). Safe to run on every ``make run``."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from annotations.demo_data import demo_trajectories
from annotations.services import trajectory_import
from core.models import User
from core.roles import DEMO_USERS
from review.models import ReviewQueue
from rewards.services.evaluation import seed_evaluation_set
from rewards.services.rewards import seed_reward_model


class Command(BaseCommand):
    help = "Create demo users for each role and demo trajectories (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get("RH_DEMO_PASSWORD", "rewardhub-demo")
        for username, role, is_admin in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
            user.is_staff = is_admin
            user.is_superuser = is_admin
            user.save()
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            note = password if created else "(password unchanged since first seed)"
            self.stdout.write(f"demo login: {username} / {note} ({role})")
        counts = {"imported": 0, "duplicate": 0, "rejected": 0}
        for record in demo_trajectories():
            result = trajectory_import(record=record, fmt="openai")
            counts[result.status] += 1
            if result.status == "rejected":
                self.stderr.write(f"demo trajectory {record.get('id')} rejected: {result.errors}")
        self.stdout.write(
            f"demo trajectories: imported {counts['imported']}, already there {counts['duplicate']}"
        )
        version = seed_reward_model()
        self.stdout.write(f"reward model: {version} active ({version.digest[:19]}…)")
        evaluation = seed_evaluation_set(reward_model=version.reward_model)
        self.stdout.write(
            f"evaluation set: {evaluation} ({evaluation.case_count} cases), attached to "
            f"{version.reward_model.slug}"
        )
        queue, _ = ReviewQueue.objects.get_or_create(
            slug="swe-bugfix-all",
            defaults={
                "name": "swe-bugfix rollouts",
                "description": "Every swe-bugfix rollout, reviewed by two experts, blind.",
                "filters": {"task_type": "swe-bugfix"},
                "overlap": 2,
                "blind": True,
            },
        )
        self.stdout.write(f"review queue: {queue.slug} (k={queue.overlap})")
