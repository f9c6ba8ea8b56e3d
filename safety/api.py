"""REST: analyze a list of shell commands against a policy (never runs them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_errors import PayloadTooLarge
from core.permissions import CanAnalyzeCommands
from safety import selectors, services
from safety.analyzer import deadline


class AnalyzeInputSerializer(serializers.Serializer):
    commands = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), allow_empty=False
    )
    policy = serializers.CharField(
        required=False, help_text="slug or slug@N; default policy if absent"
    )
    workspace = serializers.ListField(
        child=serializers.CharField(), required=False, allow_empty=False
    )

    def validate_commands(self, value: list[str]) -> list[str]:
        limit = settings.SAFETY["MAX_ANALYZE_COMMANDS"]
        if len(value) > limit:
            raise serializers.ValidationError(f"at most {limit} commands per request")
        return value

    def validate_workspace(self, value: list[str]) -> list[str]:
        bad = [w for w in value if not w.startswith("/")]
        if bad:
            raise serializers.ValidationError(f"workspace roots must be absolute paths: {bad}")
        return value


def check_request_work(commands: list[str]) -> None:
    """The request-wide shell-analysis budget (``REWARDHUB_LIMITS["MAX_REQUEST_COMMANDS"]``,
    ``["MAX_REQUEST_COMMAND_CHARS"]``), the one score requests have too: 413 past it."""
    limits = settings.REWARDHUB_LIMITS
    count, chars = len(commands), sum(map(len, commands))
    if 0 <= limits["MAX_REQUEST_COMMANDS"] < count:
        raise PayloadTooLarge(
            f"commands: {count} shell commands is over the limit of "
            f"{limits['MAX_REQUEST_COMMANDS']} shell commands per request"
        )
    if 0 <= limits["MAX_REQUEST_COMMAND_CHARS"] < chars:
        raise PayloadTooLarge(
            f"commands: {chars} characters of shell commands is over the limit of "
            f"{limits['MAX_REQUEST_COMMAND_CHARS']} characters of shell commands per request"
        )


class FindingSerializer(serializers.Serializer):
    rule = serializers.CharField()
    category = serializers.CharField()
    severity = serializers.CharField()
    action = serializers.CharField()
    span = serializers.ListField(child=serializers.IntegerField())
    message = serializers.CharField()
    argv = serializers.ListField(child=serializers.CharField())


class AnalyzeResultSerializer(serializers.Serializer):
    command = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["allow", "review", "block"])
    findings = FindingSerializer(many=True)


class AnalyzeOutputSerializer(serializers.Serializer):
    results = AnalyzeResultSerializer(many=True)
    policy = serializers.DictField()


class AnalyzeCommandsView(APIView):
    """POST a list of commands; get a verdict and findings for each, in order."""

    permission_classes = [CanAnalyzeCommands]
    schema_not_found = True  # unknown policy or version: 404

    @extend_schema(request=AnalyzeInputSerializer, responses=AnalyzeOutputSerializer)
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = AnalyzeInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        check_request_work(data.validated_data["commands"])
        ref = data.validated_data.get("policy")
        if ref:
            version = selectors.version_by_ref(ref)
            if version is None:
                raise NotFound(f"unknown policy or version {ref!r}")
        else:
            version = services.default_policy_version()
        analyzer = services.analyzer_for(version, data.validated_data.get("workspace"))
        results = []
        seconds = settings.SAFETY["REQUEST_SECONDS"]
        with deadline.bounded(seconds if seconds >= 0 else 0):
            for command in data.validated_data["commands"]:
                if seconds >= 0 and deadline.passed():
                    raise PayloadTooLarge(
                        f"commands: analysing them took over the limit of {seconds:g} seconds "
                        "per request; send fewer or shorter commands"
                    )
                analysis = analyzer.analyze(command)
                results.append(
                    {
                        "command": command,
                        "verdict": analysis.verdict,
                        "findings": [finding_dict(f) for f in analysis.findings],
                    }
                )
            if seconds >= 0 and deadline.passed():  # the last one was cut short: not a verdict
                raise PayloadTooLarge(
                    f"commands: analysing them took over the limit of {seconds:g} seconds "
                    "per request; send fewer or shorter commands"
                )
        policy = {"slug": version.policy.slug, "version": version.number, "digest": version.digest}
        return Response({"results": results, "policy": policy})


def finding_dict(finding: Any) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "category": finding.category,
        "severity": finding.severity,
        "action": finding.action,
        "span": [finding.span[0], finding.span[1]],
        "message": finding.message,
        "argv": list(finding.argv),
    }
