"""The REST API: DRF, the OpenAPI schema, throttles, and the limits on what a request may carry."""

from __future__ import annotations

from rewardhub.settings.environment import env

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "core.pagination.DefaultCursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_VERSIONING_CLASS": "rest_framework.versioning.URLPathVersioning",
    "ALLOWED_VERSIONS": ["v1"],
    "DEFAULT_VERSION": "v1",
    "DEFAULT_SCHEMA_CLASS": "core.schema.AutoSchema",
    # JSON only, size- and depth-limited before it reaches a view (core.parsers).
    "DEFAULT_PARSER_CLASSES": ["core.parsers.JSONParser"],
    # DRF's JSON, written through orjson where that gives the same JSON (core.renderers).
    "DEFAULT_RENDERER_CLASSES": [
        "core.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "score": env.str("THROTTLE_SCORE", default="6000/min"),
        "write": env.str("THROTTLE_WRITE", default="600/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RewardHub API",
    "DESCRIPTION": "Trajectories, safety analysis and composite rewards for agentic RL.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Served from our own static files: no CDN, so the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Limits (explicit, so bad input gets a clear 400/413 instead of exhausting the server) ----
REWARDHUB_LIMITS = {
    "MAX_MESSAGES": env.int("RH_MAX_MESSAGES", default=5000),
    "MAX_TRAJECTORY_BYTES": env.int("RH_MAX_TRAJECTORY_BYTES", default=20_000_000),
    "MAX_COMMAND_CHARS": env.int("RH_MAX_COMMAND_CHARS", default=100_000),
    "MAX_MESSAGE_CHARS": env.int("RH_MAX_MESSAGE_CHARS", default=2_000_000),
    "MAX_BULK_RECORDS": env.int("RH_MAX_BULK_RECORDS", default=500),
    # Nesting levels of any JSON body or document (deeper input is a 400, never a stack overflow).
    "MAX_JSON_DEPTH": env.int("RH_MAX_JSON_DEPTH", default=100),
    # A training run's config (JSON bytes) and the metrics per reported step: a 400 naming the
    # field over either.
    "MAX_RUN_CONFIG_BYTES": env.int("RH_MAX_RUN_CONFIG_BYTES", default=65_536),
    "MAX_RUN_METRICS": env.int("RH_MAX_RUN_METRICS", default=200),
    # Steps of a training run's metric series per detail response (a long run has many
    # thousands); ``steps_next`` links the next page.
    "MAX_RUN_DETAIL_STEPS": env.int("RH_MAX_RUN_DETAIL_STEPS", default=1000),
    # Shell analysis per API request (analyze, score, batch, OpenRLHF): commands and their total
    # characters over all its trajectories; past either, a 413 before the rest is analyzed.
    # Worst cases measured at about 3.6 ms per command and 110 ms per 19,000-character command.
    "MAX_REQUEST_COMMANDS": env.int("RH_MAX_REQUEST_COMMANDS", default=2000),
    "MAX_REQUEST_COMMAND_CHARS": env.int("RH_MAX_REQUEST_COMMAND_CHARS", default=400_000),
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("RH_MAX_REQUEST_BYTES", default=50_000_000)
