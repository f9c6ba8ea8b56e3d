"""Who is acting right now: the request being served (user or API key, request id, client IP)
or, outside a request, the management command or process that runs the code."""

from __future__ import annotations

import contextvars
import ipaddress
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse


@dataclass(frozen=True)
class AuditContext:
    request: HttpRequest | None = None
    via: str = ""
    user: Any = None
    request_id: str = ""
    ip: str | None = None


_current: contextvars.ContextVar[AuditContext | None] = contextvars.ContextVar(
    "rewardhub_audit_context", default=None
)


def current() -> AuditContext | None:
    return _current.get()


@contextmanager
def audit_context(*, via: str, user: Any = None) -> Iterator[None]:
    """Attribute changes made inside the block to ``user`` through ``via`` (commands, tasks)."""
    token = _current.set(AuditContext(via=via[:60], user=user))
    try:
        yield
    finally:
        _current.reset(token)


def process_via() -> str:
    """Outside a request: ``command:NAME`` under manage.py, else the process kind."""
    argv = sys.argv or [""]
    name = Path(argv[0]).name
    if name in ("manage.py", "django-admin") and len(argv) > 1:
        return f"command:{argv[1]}"[:60]
    if name == "celery":
        return "celery"
    return "system"


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def _client_ip(request: HttpRequest) -> str | None:
    raw = request.META.get("REMOTE_ADDR") or ""
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return None  # unix sockets and the like: an invalid value must never break the request


class AuditContextMiddleware:
    """Make the request visible to the audit log for as long as the view runs.

    A well-formed incoming ``X-Request-ID`` (from a proxy) is kept, else one is made; either
    way the response carries it, so a log line, an audit event and a client report connect.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        token = _current.set(
            AuditContext(request=request, request_id=request_id, ip=_client_ip(request))
        )
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        if "X-Request-ID" not in response:
            response["X-Request-ID"] = request_id
        return response
