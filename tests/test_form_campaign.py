"""A schemathesis-style campaign over the HTML pages (issue #22, item 13): every page and form
of the project, found from the URL patterns, the permission matrix's probes, the forms in the
pages' HTML and the parameters each view reads, gets a generated set of bad values (NUL, huge
and unicode digits, NaN and infinities, out-of-range datetimes ...) in each path id, query
parameter and form field, as each role. No answer may be a 5xx: bad input is a 400 naming the
field, or a 404.

The default run is small (two roles, a few values); ``RH_FORM_CAMPAIGN=full`` sends every value
as every role, the admin's add forms included.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from django.db import transaction
from django.urls import Resolver404, resolve

from core.roles import ADMIN, EXPERT, SAFETY_LEAD
from tests.security_world import NO_ROLE, World, build_world
from tests.test_permission_matrix import ADMIN_SITE, MATRIX, Probe, _fill

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

FULL = os.environ.get("RH_FORM_CAMPAIGN", "") == "full"

BAD_VALUES: dict[str, str] = {
    "nul": "a\x00b",
    "huge-int": "9" * 5000,
    "int64-overflow": "99999999999999999999",
    "int-1e30": "1" + "0" * 30,
    "unicode-digit": "²",
    "arabic-digits": "١٢٣",
    "word": "abc",
    "negative": "-1",
    "nan": "NaN",
    "infinity": "Infinity",
    "float-overflow": "1e400",
    "offset-datetime": "2024-01-01T00:00:00+99:00",
    "far-datetime": "99999-12-31T23:59:59",
    "zero-datetime": "0000-00-00T00:00:00",
    "empty": "",
    "long": "x" * 5000,
    "json-nan": '{"a": NaN}',
    "replacement": "\ufffd",
}
DEFAULT_VALUES = ("nul", "huge-int", "int64-overflow", "unicode-digit", "nan", "float-overflow",
                  "offset-datetime")  # fmt: skip
VALUES = [BAD_VALUES[name] for name in (BAD_VALUES if FULL else DEFAULT_VALUES)]
BAD_IDS = ("abc", "²", "0", "9" * 5000, "99999999999999999999") if FULL else ("²", "9" * 5000)
ROLES = (NO_ROLE, EXPERT, SAFETY_LEAD, ADMIN) if FULL else (EXPERT, ADMIN)


# --- finding the forms and parameters -----------------------------------------------------------


@dataclass
class Form:
    method: str
    action: str
    fields: dict[str, str] = field(default_factory=dict)  # name -> a value the page offers


class FormParser(HTMLParser):
    """The forms of a page: method, action and each named input, select and textarea."""

    def __init__(self, page_path: str) -> None:
        super().__init__()
        self.page_path = page_path
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            method = a.get("method") or ("post" if a.get("hx-post") else "get")
            method = method.lower()
            action = a.get("action") or a.get("hx-post") or a.get("hx-get") or self.page_path
            self._form = Form(method, action)
            self.forms.append(self._form)
        elif self._form is not None and tag in ("input", "textarea", "select"):
            name = a.get("name")
            if name and name != "csrfmiddlewaretoken":
                self._form.fields.setdefault(name, a.get("value", ""))
                if tag == "select":
                    self._select = name
        elif tag == "option" and self._form is not None and self._select:
            self._form.fields[self._select] = self._form.fields[self._select] or a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


_READS = re.compile(
    r"""(?:request\.(?:GET|POST)|query_params)(?:\.get(?:list)?\(\s*|\[)\s*["'](\w+)["']"""
)
_HELPER = re.compile(r"\b(_\w+)\(request\b")
_FILTERS = re.compile(r"\b((?:\w+\.)?[A-Z_]+_FILTERS)\b")


def parameters_read_by(path: str) -> set[str]:
    """The query and form parameters the view of ``path`` reads (its source, the module's
    helpers it calls with the request, and the ``*_FILTERS`` tuples it names)."""
    try:
        func = inspect.unwrap(resolve(urlsplit(path).path).func)
    except Resolver404:
        return set()
    func = getattr(func, "view_class", None) or getattr(func, "cls", None) or func
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return set()
    namespace = getattr(func, "__globals__", None) or vars(inspect.getmodule(func))
    sources = [source]
    for helper in set(_HELPER.findall(source)):
        if inspect.isfunction(namespace.get(helper)):
            sources.append(inspect.getsource(namespace[helper]))
    names: set[str] = set()
    for text in sources:
        names.update(_READS.findall(text))
        for dotted in _FILTERS.findall(text):
            head, _, tail = dotted.partition(".")
            value = namespace.get(head)
            value = getattr(value, tail, None) if tail else value
            if isinstance(value, tuple | list | frozenset | set):
                names.update(str(v) for v in value)
    return names


@functools.cache
def _api_query_parameters() -> list[tuple[re.Pattern[str], frozenset[str]]]:
    """Per API path (as a regex), the query parameters its GET documents in the schema."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    out = []
    for template, operations in schema["paths"].items():
        names = {
            p["name"] for p in operations.get("get", {}).get("parameters", []) if p["in"] == "query"
        }
        pattern = re.sub(r"\\{\w+\\}", "[^/]+", re.escape(template))
        out.append((re.compile(pattern + "$"), frozenset(names)))
    return out


def documented_parameters(path: str) -> set[str]:
    route = urlsplit(path).path
    return {n for pattern, names in _api_query_parameters() if pattern.match(route) for n in names}


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    data: dict[str, Any] | None
    label: str


def _pages_and_posts(world: World) -> tuple[list[Probe], list[Probe]]:
    probes = [p for ps in MATRIX.values() for p in ps]
    if FULL:
        probes += [p for ps in ADMIN_SITE.values() for p in ps]
    allowed = [p for p in probes if world.principal in p.allowed]
    # The API's query strings too (its bodies are JSON: tests/test_api_schemathesis.py).
    pages = [p for p in allowed if p.method == "get"]
    return pages, [p for p in allowed if p.method == "post" and not p.json]


def _with_bad_ids(path: str, world: World) -> Iterator[str]:
    """``path`` with each id the world put in it replaced by a malformed one."""
    for value in {str(v) for k, v in world.ids.items() if k != "rule_definition"}:
        segment = f"/{value}/"
        if segment in path:
            for bad in BAD_IDS:
                yield path.replace(segment, f"/{bad}/", 1)


def campaign(world: World) -> Iterator[Case]:
    pages, posts = _pages_and_posts(world)
    forms: list[Form] = []
    for probe in pages:
        path = world.url(probe.path)
        for bad_path in _with_bad_ids(path, world):
            yield Case("get", bad_path, None, "path id")
        response = world.client.get(path)
        if response.status_code != 200 or getattr(response, "streaming", False):
            continue
        parser = FormParser(urlsplit(path).path)
        parser.feed(response.content.decode(errors="replace"))
        forms += parser.forms
        base = path.partition("?")[0]
        params = (
            parameters_read_by(path)
            | documented_parameters(path)
            | {name for f in parser.forms if f.method == "get" for name in f.fields}
        )
        for name in sorted(params):
            for value in VALUES:
                yield Case("get", f"{base}?{urlencode({name: value})}", None, f"?{name}")
    for probe in posts:
        path = world.url(probe.path)
        default = _fill(probe.data, world) or {}
        for bad_path in _with_bad_ids(path, world):
            yield Case("post", bad_path, default, "path id")
        fields = set(default) | {
            name
            for f in forms
            if f.method == "post" and urlsplit(f.action).path == urlsplit(path).path
            for name in f.fields
        }
        for name in sorted(fields):
            for value in VALUES:
                yield Case("post", path, {**default, name: value}, name)
    if FULL:
        yield from _admin_add_forms(world)


def _admin_add_forms(world: World) -> Iterator[Case]:
    """Every admin add form the principal may use (staff only), each field with each value."""
    from django.contrib import admin

    if world.principal != ADMIN:
        return
    for model in admin.site._registry:
        path = f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/"
        response = world.client.get(path)
        if response.status_code != 200:
            continue
        parser = FormParser(path)
        parser.feed(response.content.decode(errors="replace"))
        for form in parser.forms:
            if form.method != "post":
                continue
            for name in sorted(form.fields):
                for value in VALUES:
                    yield Case("post", path, {**form.fields, name: value}, name)


# --- the campaign -------------------------------------------------------------------------------


def _send(world: World, case: Case) -> int:
    method = getattr(world.client, case.method)
    with transaction.atomic():
        response = method(case.path) if case.data is None else method(case.path, case.data)
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        transaction.set_rollback(True)
    return int(response.status_code)


@pytest.mark.parametrize("principal", ROLES)
def test_no_bad_value_in_a_page_or_form_is_a_server_error(
    principal: str, make_user, recorder
) -> None:  # type: ignore[no-untyped-def]
    world = build_world(principal, make_user)
    world.client.raise_request_exception = False  # a server error is an answer to count here
    cookies = copy.deepcopy(world.client.cookies)
    failures: list[str] = []
    sent = 0
    for case in campaign(world):
        world.client.cookies = copy.deepcopy(cookies)
        status = _send(world, case)
        sent += 1
        if status >= 500:
            shown = {k: (v[:40] + "…" if isinstance(v, str) and len(v) > 40 else v)
                     for k, v in (case.data or {}).items()}  # fmt: skip
            failures.append(
                f"{status} {case.method.upper()} {case.path[:160]} {case.label} {shown}"
            )
    print(f"form campaign, {principal}: {sent} cases, {len(failures)} server errors")  # -s
    assert sent > 100
    assert not failures, f"{principal}: {len(failures)} of {sent}:\n" + "\n".join(failures)
