"""Roles are Django groups; this module is the one place that names them."""

from __future__ import annotations

from typing import Final

EXPERT: Final = "expert"
SAFETY_LEAD: Final = "safety_lead"
ADMIN: Final = "admin"
ALL_ROLES: Final = (EXPERT, SAFETY_LEAD, ADMIN)


def user_roles(user: object) -> frozenset[str]:
    """The role names a user holds; superusers hold every role."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    if getattr(user, "is_superuser", False):
        return frozenset(ALL_ROLES)
    cached = getattr(user, "_rewardhub_roles", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        user._rewardhub_roles = cached  # type: ignore[attr-defined]
    return cached


def has_role(user: object, *roles: str) -> bool:
    """True when the user holds any of ``roles`` (admins hold them all)."""
    held = user_roles(user)
    return ADMIN in held or any(role in held for role in roles)


# The demo accounts `manage.py seed_demo` creates (username, role, is admin); the sign-in page
# lists them in the embedded mode.
DEMO_USERS: tuple[tuple[str, str, bool], ...] = (
    ("expert", EXPERT, False),
    ("safety", SAFETY_LEAD, False),
    ("admin", ADMIN, True),
)
