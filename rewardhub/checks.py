"""System checks (``manage.py check``) for what settings alone cannot show."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning, register


@register()
def compiled_core_is_current(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A compiled module older than its source runs old code: say so before it serves."""
    from rewardhub.compiled import stale_modules

    return [
        Warning(
            f"The compiled build of {module} is older than its source and runs old code.",
            hint="Run `make compiled` (or scripts/build_compiled.py) to rebuild it.",
            id="rewardhub.W010",
        )
        for module in stale_modules()
    ]
