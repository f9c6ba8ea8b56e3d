"""Admin for accounts and API keys."""

from __future__ import annotations

from typing import Any

from django import forms
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers

from core.models import ApiKey, ApiKeyScope, User
from core.services import api_key_create, api_key_revoke


def _secret_session_key(pk: int | str) -> str:
    return f"rewardhub.new-api-key.{pk}"


@admin.register(User)
class RewardHubUserAdmin(UserAdmin):
    list_display = [
        "username",
        "email",
        "is_service_account",
        "is_staff",
        "is_active",
        "last_login",
    ]
    list_filter = ["is_service_account", "is_staff", "is_active", "groups"]
    fieldsets = (*UserAdmin.fieldsets, ("RewardHub", {"fields": ("is_service_account",)}))


class ApiKeyForm(forms.ModelForm):
    """Scopes and reward models as checkboxes (the model's ``clean()`` checks both)."""

    scopes = forms.MultipleChoiceField(
        choices=ApiKeyScope.choices, widget=forms.CheckboxSelectMultiple
    )
    reward_models = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Restrict the key to these reward models (scoring and reads); none: all.",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "user", "scopes", "reward_models", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        reward_model = apps.get_model("rewards", "RewardModel")  # core imports no domain app
        slugs = reward_model.objects.order_by("slug").values_list("slug", flat=True)
        known = {*slugs, *(self.instance.reward_models or [])}
        self.fields["reward_models"].choices = [(s, s) for s in sorted(known)]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "user", "scope_list", "created_at", "last_used_at", "active"]
    list_filter = ["revoked_at", "created_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["prefix", "key_digest", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    form = ApiKeyForm

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return ["name", "user", "scopes", "reward_models", "expires_at"]
        return ["name", "user", "scopes", "reward_models", "expires_at", *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            user=form.cleaned_data["user"],
            expires_at=form.cleaned_data.get("expires_at"),
            reward_models=form.cleaned_data.get("reward_models") or [],
        )
        obj.pk = issued.api_key.pk
        # Never in a message: messages travel in a signed, unencrypted cookie. The session is
        # stored server-side (the database); the secret page shows it once and deletes it.
        request.session[_secret_session_key(obj.pk)] = issued.secret

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        return redirect(reverse("admin:rewardhub_apikey_secret", args=[obj.pk]))

    def get_urls(self) -> list[URLPattern]:
        secret = path(
            "<path:object_id>/secret/",
            self.admin_site.admin_view(self.secret_view),
            name="rewardhub_apikey_secret",
        )
        return [secret, *super().get_urls()]

    def secret_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The new key's secret, once: taken out of the session as it is shown."""
        key = self.get_object(request, object_id)
        if key is None:  # as the admin's own pages answer a missing object
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_or_change_permission(request, key):
            raise PermissionDenied
        secret = request.session.pop(_secret_session_key(key.pk), None)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": key,
            "title": f"API key {key}",
            "secret": secret,
            "change_url": reverse("admin:rewardhub_apikey_change", args=[key.pk]),
        }
        response = TemplateResponse(request, "admin/rewardhub/apikey/secret.html", context)
        add_never_cache_headers(response)
        response["Cache-Control"] = "no-store, " + response["Cache-Control"]
        return response

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    @admin.display(boolean=True)
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


class BoundedJSONFormField(forms.JSONField):
    """A JSON input of the admin that reads bad JSON as the field's error: Django's own field
    only catches ``JSONDecodeError``, so a number Python will not convert (5,000 digits) or
    nesting too deep for the parser was a 500 (issue #22, item 13)."""

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except (ValueError, RecursionError) as exc:
            raise forms.ValidationError(
                f"Enter valid JSON ({str(exc)[:80]}).", code="invalid", params={"value": value}
            ) from exc

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except (ValueError, RecursionError):
            return forms.fields.InvalidJSONInput(data)


def bound_json_inputs(site: admin.AdminSite) -> None:
    """Every JSON field of every registered admin (and its inlines) reads through
    ``BoundedJSONFormField``: one place, whichever app registered the model."""
    from django.db import models

    override = {models.JSONField: {"form_class": BoundedJSONFormField}}
    for model_admin in site._registry.values():
        model_admin.formfield_overrides = {**model_admin.formfield_overrides, **override}
        for inline in model_admin.inlines:
            inline.formfield_overrides = {**inline.formfield_overrides, **override}
