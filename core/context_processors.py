"""Template context every page shares: the areas (Review, Rewards, Safety) the user may open,
so each area's pages link to the others."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from core.roles import EXPERT, SAFETY_LEAD, has_role

# (label, URL name, roles that may open it; admins hold every role)
AREAS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Review", "review:dashboard", (EXPERT, SAFETY_LEAD)),
    ("Rewards", "rewards:reward_models", (EXPERT, SAFETY_LEAD)),
    ("Safety", "safety:flags", (SAFETY_LEAD,)),
)


def areas(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"areas": []}
    out = []
    for label, name, roles in AREAS:
        if has_role(user, *roles):
            url = reverse(name)
            prefix = "/" + url.strip("/").split("/")[0] + "/"
            out.append({"label": label, "url": url, "active": request.path.startswith(prefix)})
    return {"areas": out}
