"""Health probes for load balancers and orchestrators: no authentication, no details.

Every check runs with a deadline (``RESILIENCE["PROBE_TIMEOUT_SECONDS"]``): during an outage
a connection attempt waits for the pool (``DATABASE_POOL_TIMEOUT``) or the connect timeout,
seconds a load balancer should not wait to learn that the database is gone. A check that has
not answered by then counts as unavailable; it finishes in the background, and until it does a
new probe waits on the same check rather than starting another (at most one per check and
process).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.views import LoginView
from django.db import connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from core.forms import LoginForm
from core.roles import DEMO_USERS

_executor = ThreadPoolExecutor(max_workers=3, thread_name_prefix="probe")
_lock = threading.Lock()
_running: dict[str, Future[str]] = {}


def _closing_connection(check: Callable[[], str]) -> Callable[[], str]:
    def run() -> str:
        try:
            return check()
        finally:  # this thread's connection goes back to the pool (or is closed)
            connections.close_all()

    return run


def _start(name: str, check: Callable[[], str]) -> Future[str]:
    """The check still running from an earlier probe, or a new one."""
    with _lock:
        future = _running.get(name)
        if future is None or future.done():
            future = _running[name] = _executor.submit(_closing_connection(check))
        return future


def _answer(future: Future[str], until: float) -> str:
    """The check's answer, or ``"unavailable"`` if it raised or is not done by ``until``."""
    try:
        return future.result(timeout=max(0.0, until - time.monotonic()))
    except FutureTimeout:
        return "unavailable"
    except Exception:
        return "unavailable"


def _deadline() -> float:
    return time.monotonic() + float(settings.RESILIENCE["PROBE_TIMEOUT_SECONDS"])


def _database_answers() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _database_migrated() -> str:
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections["default"])
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return "ok" if not pending else f"{len(pending)} migrations pending"


def _broker_answers() -> str:
    from celery import current_app  # the project's app (rewardhub.celery)

    with current_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=0, timeout=2)
    return "ok"


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database answers and has every migration; the broker, if configured.

    Scoring does not need the broker, so a broker outage is reported but keeps the API ready.
    """
    until = _deadline()
    database = _start("migrations", _database_migrated)
    broker = None if settings.CELERY_TASK_ALWAYS_EAGER else _start("broker", _broker_answers)
    checks = {
        "database": _answer(database, until),
        "broker": "in-process" if broker is None else _answer(broker, until),
    }
    ready = checks["database"] == "ok"
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks},
                        status=200 if ready else 503)  # fmt: skip


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database readiness, for load balancers; no authentication, no details."""
    if _answer(_start("database", _database_answers), _deadline()) == "ok":
        return JsonResponse({"status": "ok"})
    return JsonResponse({"status": "unavailable"}, status=503)


class SignInView(LoginView):
    """Django's sign-in with the throttle's form; in the embedded mode (SQLite, `make run`) it
    lists the demo accounts that exist, so a newcomer knows how to get in."""

    authentication_form = LoginForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        demo: list[tuple[str, str]] = []
        if getattr(settings, "EMBEDDED", False):
            present = set(
                get_user_model()
                .objects.filter(username__in=[u for u, _, _ in DEMO_USERS])
                .values_list("username", flat=True)
            )
            demo = [(u, role) for u, role, _ in DEMO_USERS if u in present]
        context["demo_logins"] = demo
        return context
