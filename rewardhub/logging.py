"""Logging helpers: API keys never reach a log line, whatever logs the request path."""

from __future__ import annotations

import logging
import re

_KEY = re.compile(r"rh_[0-9a-f]{6,}_[A-Za-z0-9_\-]+")
# The OpenRLHF endpoint takes the key as the path segment after the reward model (C3): that
# segment is a secret whatever its shape (a mistyped key is still most of a key).
_PATH_KEY = re.compile(r"(/api/v\d+/openrlhf/[^/?#\s\"']+/)[^/?#\s\"']+")
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',]+", re.I)
# Basic credentials carry the key as their password (base64, so no key shape to match), and a
# URL's user part (``http://user:KEY@host``) is the same secret before a client encodes it.
_BASIC = re.compile(r"(Basic\s+)[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])", re.I)
_USERINFO = re.compile(r"(://[^/@\s:\"']*:)[^/@\s\"']+@")


def redact(text: str) -> str:
    """``text`` without API keys (cheap when there is nothing to redact: substring checks)."""
    if "openrlhf/" in text:
        text = _PATH_KEY.sub(r"\1[redacted]", text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(r"\1[redacted]", text)
    if "asic" in text or "ASIC" in text:
        text = _BASIC.sub(r"\1[redacted]", text)
    if "@" in text:
        text = _USERINFO.sub(r"\1[redacted]@", text)
    if "rh_" in text:
        text = _KEY.sub("rh_[redacted]", text)
    return text


class RedactApiKeysFilter(logging.Filter):
    """Replaces anything shaped like a RewardHub key in the formatted message and its args."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        redacted = redact(message)
        if redacted != message:
            record.msg = redacted
            record.args = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line (``LOG_FORMAT=json``), for log shippers in production."""

    def format(self, record: logging.LogRecord) -> str:
        import json
        from datetime import UTC, datetime

        payload = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False)
