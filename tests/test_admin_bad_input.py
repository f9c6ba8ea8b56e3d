"""The admin's add forms on bad input (issue #22, item 13, found by RH_FORM_CAMPAIGN=full):
every JSON field of every registered admin answers a number of 5,000 digits or nesting too
deep with the field's error, not a 500; rows only the service creates (trajectories, steps,
flags, training runs) have no add form (403), since any hand-made one crashed on save."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from django.contrib import admin
from django.db import models, transaction
from django.test import Client

from core.models import User
from tests.test_form_campaign import FormParser

pytestmark = pytest.mark.django_db

SERVICE_MADE = ("annotations/trajectory", "annotations/step", "safety/flag", "rewards/trainingrun")
BAD_JSON = ("9" * 5000, "[" * 5000 + "]" * 5000, '{"a": ' + "9" * 5000 + "}")


@pytest.fixture
def admin_client(make_user: Callable[..., User]) -> Client:
    user = make_user("root", staff=True)
    user.is_superuser = True
    user.save()
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("model", SERVICE_MADE)
def test_rows_only_the_service_makes_have_no_add_form(admin_client: Client, model: str) -> None:
    assert admin_client.get(f"/admin/{model}/add/").status_code == 403
    assert admin_client.post(f"/admin/{model}/add/", {}).status_code == 403


def test_no_json_field_of_an_admin_add_form_is_a_server_error(admin_client: Client) -> None:
    sent, failures = 0, []
    for model, model_admin in admin.site._registry.items():
        path = f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/"
        if not model_admin.has_add_permission(_request(admin_client)):
            continue
        page = admin_client.get(path)
        if page.status_code != 200:
            continue
        parser = FormParser(path)
        parser.feed(page.content.decode())
        json_fields = {f.name for f in model._meta.fields if isinstance(f, models.JSONField)}
        for form in parser.forms:
            if form.method != "post" or urlsplit(form.action).path not in (path, ""):
                continue
            for name in sorted(json_fields & set(form.fields)):
                for value in BAD_JSON:
                    with transaction.atomic():
                        response = admin_client.post(path, {**form.fields, name: value})
                        transaction.set_rollback(True)
                    sent += 1
                    if response.status_code >= 500:
                        failures.append(f"{response.status_code} {path} {name}")
                    else:
                        assert response.status_code == 200  # the form again, with the error
                        assert name in response.context["adminform"].form.errors, (path, name)
    assert sent >= 30, sent
    assert not failures, failures


def _request(client: Client):  # type: ignore[no-untyped-def]
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = User.objects.get(username="root")
    return request
