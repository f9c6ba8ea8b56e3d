"""``Authorization: Bearer <key>`` for programs."""

from __future__ import annotations

import base64
import binascii

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from core.models import ApiKey, User
from core.services import api_key_authenticate


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        secret = secret.strip()
        if not secret:
            raise exceptions.AuthenticationFailed("Empty bearer token.")
        key = api_key_authenticate(secret)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key.")
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class PathApiKeyAuthentication(ApiKeyAuthentication):
    """The key as the last path segment, for clients that cannot send headers (OpenRLHF)."""

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        kwargs = getattr(request, "parser_context", {}).get("kwargs", {})
        secret = kwargs.get("api_key")
        if not secret:
            return None
        key = api_key_authenticate(secret)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key.")
        return key.user, key


class BasicApiKeyAuthentication(ApiKeyAuthentication):
    """``Authorization: Basic`` with the key as the password (any user name), for clients that
    take credentials only in the URL's user part (``http://rewardhub:KEY@host/...``): HTTP
    libraries send those as this header and leave them out of the URL they print in errors,
    which a key in the path is not (OpenRLHF logs the URL of every failed try)."""

    keyword = "Basic"

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        header = authentication.get_authorization_header(request)
        scheme, _, encoded = header.partition(b" ")
        if scheme.lower() != b"basic":
            return None
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise exceptions.AuthenticationFailed("Malformed basic credentials.") from exc
        secret = decoded.partition(":")[2].strip()
        if not secret:
            raise exceptions.AuthenticationFailed("Basic credentials need the API key as password.")
        key = api_key_authenticate(secret)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key.")
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="api"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer scheme in the OpenAPI schema."""

    target_class = "core.authentication.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "RewardHub API key (rh_...)"}


class PathApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """OpenAPI has no path-segment scheme: document it as the same bearer key, named apart."""

    target_class = "core.authentication.PathApiKeyAuthentication"
    name = "ApiKeyInPath"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "RewardHub API key, as a header or as the URL's last path segment",
        }


class BasicApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """The key as the password of HTTP basic credentials."""

    target_class = "core.authentication.BasicApiKeyAuthentication"
    name = "ApiKeyAsBasicPassword"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "basic",
            "description": "RewardHub API key as the password (any user name)",
        }
