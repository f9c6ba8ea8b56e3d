from __future__ import annotations

from django.apps import AppConfig


def cap_pool_reconnect_delay(seconds: float) -> None:
    """Retry a lost PostgreSQL at a steady pace instead of backing off exponentially.

    psycopg_pool retries a failed connection after 1 s, then 2, 4, 8 s and so on. After a
    restart that took a few seconds, a process could sit out the rest of such a delay while its
    requests time out with 503, long after PostgreSQL and the other processes were serving
    again. A fixed delay of ``seconds`` (±10% jitter, as psycopg_pool adds) bounds that: every
    process is back within about ``seconds`` of PostgreSQL. The pool still gives up after its
    ``reconnect_timeout``. Each process then tries once per ``seconds`` during an outage."""
    from psycopg_pool.base import AttemptWithBackoff

    AttemptWithBackoff.INITIAL_DELAY = seconds
    AttemptWithBackoff.DELAY_BACKOFF = 1.0


class ProjectConfig(AppConfig):
    """The project itself: wires the apps together once they are all loaded. No models."""

    name = "rewardhub"
    label = "project"
    verbose_name = "RewardHub"

    def ready(self) -> None:
        from django.conf import settings

        # Make the project's Celery app the current one, so shared tasks use its broker.
        import rewardhub.celery  # noqa: F401
        from rewardhub import checks  # noqa: F401  (registers the project's system checks)
        from rewardhub.audited import register_audited_models
        from rewardhub.cache_limits import apply_cache_limits

        apply_cache_limits(settings.CACHE_LIMITS)  # the scoring core's and analyzer's caches
        from django.contrib import admin

        from core.admin import bound_json_inputs

        bound_json_inputs(admin.site)  # every app's admin is registered by now (autodiscover)
        # Every analyzer of the process (the safety service's and the scorers') takes its time
        # bound per command from here unless its config names one.
        from safety.analyzer import config as analyzer_config

        analyzer_config.COMMAND_SECONDS = settings.SAFETY["COMMAND_SECONDS"]
        cap_pool_reconnect_delay(settings.DATABASE_POOL_RECONNECT_SECONDS)
        register_audited_models()
