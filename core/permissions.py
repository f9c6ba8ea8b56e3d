"""Permission classes. Every view names one of these (or DRF's) explicitly."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.models import ApiKey
from core.roles import ADMIN, EXPERT, SAFETY_LEAD, has_role


def _api_key(request: Request) -> ApiKey | None:
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKey) else None


class ScopedAccess(BasePermission):
    """An API key needs ``scope``; a browser session needs one of ``roles``.

    Subclasses set both; this keeps "which program may do what" and "which person may do what"
    side by side for each endpoint.
    """

    scope: str = ""
    roles: tuple[str, ...] = ()

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        key = _api_key(request)
        if key is not None:
            if self.scope and key.has_scope(self.scope):
                return True
            # DRF answers the 403 with this message: the key's owner learns what to ask for.
            self.message = (
                f"This API key lacks the scope this endpoint needs: {self.scope!r}."
                if self.scope
                else "This endpoint takes a signed-in person, not an API key."
            )
            return False
        if has_role(user, *self.roles):
            return True
        self.message = "This needs one of the roles: " + ", ".join(self.roles) + "."
        return False


class CanReadTrajectories(ScopedAccess):
    scope = "read"
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanImportTrajectories(ScopedAccess):
    scope = "write"
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanAnalyzeCommands(ScopedAccess):
    scope = "analyze"
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanScore(ScopedAccess):
    scope = "score"
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanReadRewards(ScopedAccess):
    scope = "read"
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanEditRewards(ScopedAccess):
    """Experts define task types, behaviours and reward models; no API key may edit them."""

    scope = ""
    roles = (EXPERT, ADMIN)


class CanCompileRewards(ScopedAccess):
    """Compile, activate, roll back: experts, and safety leads, whose policy is an input."""

    scope = ""
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanEditEvaluationSets(ScopedAccess):
    """Experts and safety leads build evaluation sets from what they review; held-out sets are
    further limited to experts and admins where they are looked up. No API key edits them."""

    scope = ""
    roles = (EXPERT, SAFETY_LEAD, ADMIN)


class CanOverrideGate(ScopedAccess):
    """Only an expert (or an admin) may activate a version that regresses on its sets."""

    scope = ""
    roles = (EXPERT, ADMIN)
