"""Middleware every request passes: security headers, bidi controls neutralised in pages, and
size and NUL checks at the door."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse, QueryDict

from core.bidi import neutralise_utf8


class ContentSecurityPolicyMiddleware:
    """Send ``settings.CONTENT_SECURITY_POLICY`` unless a view set its own.

    Scripts load only from our origin and never inline, so an injected ``<script>`` or event
    handler in untrusted trajectory text cannot run even if escaping were ever missed.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


class BidiControlMiddleware:
    """Neutralise and mark bidi control characters in every HTML page (``core.bidi``).

    Model output is shown on many pages (viewer, flag queue, lists, the admin): doing it on the
    way out covers them all, attributes and text areas included, and any page added later."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
            return response
        body = response.content
        clean = neutralise_utf8(body)
        if clean is not body:
            response.content = clean
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(clean))
        return response


class RequestGuardMiddleware:
    """Checks at the door, before any view or parser runs.

    - An API request whose ``Content-Length`` is over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413
      without reading the body (DRF reads bodies past Django's own check).
    - A NUL character in the path is a 404 (nothing is named so) and in a query parameter or
      a form field (pages' POSTs) a 400: PostgreSQL cannot compare or store NUL in text, so it
      would fail in the database (a 500). (API bodies are JSON, checked by core.parsers.)

    API paths answer in the API's error shape, naming the parameter; pages name it in text.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from core.api_errors import not_found

        api = request.path.startswith("/api/")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if api and limit is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                message = f"Body of {length} bytes is over the limit of {limit}."
                return JsonResponse({"errors": {"non_field_errors": [message]}}, status=413)
        if "\x00" in request.path:
            return not_found(request)
        fields = _with_nul(request.GET)
        if not api and request.method == "POST" and _is_form(request):
            fields += _with_nul(request.POST)
        if not fields:
            return self.get_response(request)
        message = "Null characters are not allowed."
        if api:
            return JsonResponse({"errors": {name: [message] for name in fields}}, status=400)
        return HttpResponseBadRequest("\n".join(f"{name}: {message}" for name in fields))


def _with_nul(data: QueryDict) -> list[str]:
    """The names of the parameters whose name or a value holds a NUL character."""
    return [
        name.replace("\x00", "\\u0000")
        for name, values in data.lists()
        if "\x00" in name or any(isinstance(v, str) and "\x00" in v for v in values)
    ]


def _is_form(request: HttpRequest) -> bool:
    kind = request.content_type or ""
    return kind in ("application/x-www-form-urlencoded", "multipart/form-data")
