from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def grant_admin_role_all_permissions(**kwargs: Any) -> None:
    """The ``admin`` role runs everything through the Django admin, so it holds every permission.

    Done after each migrate, so permissions of models added later are granted too.
    """
    from django.contrib.auth.models import Group, Permission

    from rewardhub.roles import ADMIN

    group, _ = Group.objects.get_or_create(name=ADMIN)
    group.permissions.set(Permission.objects.all())


class RewardHubConfig(AppConfig):
    name = "rewardhub"
    verbose_name = "RewardHub"

    def ready(self) -> None:
        from django.conf import settings

        # Make the project's Celery app the current one, so shared tasks use its broker.
        import rewardhub.celery  # noqa: F401
        from rewardhub.cache_limits import apply_cache_limits

        apply_cache_limits(settings.CACHE_LIMITS)  # the scoring core's and analyzer's caches
        post_migrate.connect(grant_admin_role_all_permissions, dispatch_uid="rh-admin-perms")
