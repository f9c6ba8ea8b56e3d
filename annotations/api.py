"""REST endpoints for trajectories: import (one or bulk), list with filters, detail."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from annotations import selectors, services
from annotations.importers import is_single_record_list
from annotations.serializers import (
    ImportResultSerializer,
    TrajectoryDetailSerializer,
    TrajectoryImportInputSerializer,
    TrajectoryListSerializer,
)
from core.api_errors import PayloadTooLarge
from core.outcomes import RESOLVED_HELP
from core.permissions import CanImportTrajectories, CanReadTrajectories


def _split_body(body: Any) -> tuple[list[Any], bool]:
    """Return (records, is_bulk); a bare list is bulk unless it is one trajectory itself
    (an OpenHands event log or a bare message list), the same rule the file importer uses."""
    if isinstance(body, dict) and isinstance(body.get("trajectories"), list):
        return body["trajectories"], True
    if isinstance(body, list):
        if is_single_record_list(body):
            return [body], False
        return body, True
    return [body], False


FILTER_PARAMS = [
    OpenApiParameter("task_type", str),
    OpenApiParameter("source_format", str),
    OpenApiParameter("external_id", str),
    OpenApiParameter("resolved", bool, description=RESOLVED_HELP),
    OpenApiParameter("created_after", str, description="ISO 8601"),
    OpenApiParameter("created_before", str, description="ISO 8601"),
]


class _NoFormatOverride:
    """DRF's settings, except that no query parameter picks the renderer."""

    def __getattr__(self, name: str) -> Any:
        return None if name == "URL_FORMAT_OVERRIDE" else getattr(api_settings, name)


class ImportNegotiation(DefaultContentNegotiation):
    """On an import (POST) ``?format=`` is the old spelling of ``source_format``, not DRF's
    renderer switch (which answered 404 for ``?format=openai``): a POST negotiates on Accept."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        if request.method == "POST":
            plain = DefaultContentNegotiation()
            plain.settings = _NoFormatOverride()  # type: ignore[assignment]
            return plain.select_renderer(request, renderers, format_suffix)
        return super().select_renderer(request, renderers, format_suffix)


def _import_options(params: Any) -> dict[str, Any]:
    """``source_format`` (or its old spelling ``format``), ``task_type`` and ``source`` (the
    file's name) of an import."""
    new, old = params.get("source_format"), params.get("format")
    if new is not None and old is not None and new != old:
        raise ValidationError(
            {"source_format": [f"given twice: source_format={new!r} and format={old!r}"]}
        )
    options: dict[str, Any] = {"format": new if new is not None else old or "auto"}
    for name in ("task_type", "source"):
        if name in params:
            options[name] = params.get(name)
    return options


class TrajectoryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Trajectories. Reading needs the `read` scope (or any role); importing needs `write`.

    Routed as ``rewards.api.ScopedTrajectoryViewSet``, which narrows what API keys read
    (``rewards.scoping``, above this app in the layers)."""

    permission_classes = [CanReadTrajectories]
    content_negotiation_class = ImportNegotiation
    # Each record is checked by the import service, so one bad record rejects only itself.
    unstored_json_fields = True

    def get_permissions(self) -> list[BasePermission]:
        if self.action == "create":
            return [CanImportTrajectories()]
        return [CanReadTrajectories()]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if self.action == "retrieve":
            return selectors.trajectory_detail_queryset()
        try:
            return selectors.trajectory_list(filters=self.request.query_params)
        except selectors.FilterError as exc:
            raise ValidationError(exc.errors) from exc

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return TrajectoryDetailSerializer if self.action == "retrieve" else TrajectoryListSerializer

    @extend_schema(parameters=FILTER_PARAMS)
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        parameters=[
            OpenApiParameter("source_format", str, description="auto (default) or a format name"),
            OpenApiParameter(
                "format", str, description="Deprecated spelling of source_format.", deprecated=True
            ),
            OpenApiParameter("task_type", str),
            OpenApiParameter(
                "source", str, description="the file's name: ids and workspace it names"
            ),
        ],
        request={"application/json": {"type": "object"}},
        responses={201: ImportResultSerializer, 200: ImportResultSerializer(many=True)},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Import one trajectory (any supported format) or a bulk list; a result per record."""
        options = TrajectoryImportInputSerializer(data=_import_options(request.query_params))
        if not options.is_valid():
            errors = dict(options.errors)
            if "format" in errors:  # named as the client spelled it
                used = "format" if "source_format" not in request.query_params else "source_format"
                errors[used] = errors.pop("format")
            raise ValidationError(errors)
        records, bulk = _split_body(request.data)
        limit = settings.REWARDHUB_LIMITS["MAX_BULK_RECORDS"]
        if len(records) > limit:
            raise PayloadTooLarge(f"{len(records)} records is over the bulk limit of {limit}.")
        if bulk and not records:
            raise ValidationError({"trajectories": ["The list is empty."]})
        results = services.trajectories_import(
            records=list(enumerate(records)),
            fmt=options.validated_data["format"],
            task_type=options.validated_data.get("task_type") or None,
            imported_by=request.user,
            source=options.validated_data.get("source") or None,
        )
        payload = []
        for result in results:
            item = result.as_dict()
            item["index"] = item.pop("line", None)
            payload.append(item)
        if not bulk:
            result = results[0]
            if result.status == "rejected":
                return Response({"errors": result.errors}, status=status.HTTP_400_BAD_REQUEST)
            code = status.HTTP_201_CREATED if result.status == "imported" else status.HTTP_200_OK
            return Response(payload[0], status=code)
        summary = {
            s: sum(1 for r in results if r.status == s)
            for s in ("imported", "duplicate", "rejected")
        }
        return Response({"results": payload, "summary": summary}, status=status.HTTP_200_OK)
