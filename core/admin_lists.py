"""Admin changelists over tables of millions of rows at the cost of one page.

Django's changelist counts its whole result (and, unless told not to, the whole table again)
on every page, pages by ``OFFSET`` (page 1,000 reads 100,000 rows to throw them away), and
builds filter menus with a ``DISTINCT`` over the table. ``LargeTableAdmin`` counts with
PostgreSQL's estimate for an unfiltered list and up to ``COUNT_LIMIT`` rows for a filtered one,
never counts the table again, reads the related rows a page shows without their JSON, and
``IndexedValuesFilter`` lists a column's values with a loose index scan.

Deep pages: as search engines and large admin consoles do, a list offers its first
``MAX_PAGES`` pages only (``COUNT_LIMIT`` rows); a page asked past them shows the last of them
with a message, and the last one links to the rows after it by key (``?id__lt=...``, a filter
the changelist already understands), so going deeper costs one page at any depth. Filters and
search narrow a list to what one is looking for.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html

from core.queries import ESTIMATE_FROM, count_upto, distinct_values, estimated_rows

# A filtered changelist is counted up to this many rows (its pages stop there: narrow it).
COUNT_LIMIT = 10_000
# Pages reachable by number: COUNT_LIMIT rows at the admin's 100 a page. Deeper rows are
# reached by key (the link on the last page) or by narrowing the list.
MAX_PAGES = 100


class EstimatedCountPaginator(Paginator):
    """Counts an unfiltered big table by estimate, anything else up to ``COUNT_LIMIT``, and
    numbers at most ``MAX_PAGES`` pages (so no page link reads deeper by ``OFFSET``)."""

    @cached_property
    def num_pages(self) -> int:
        return min(super().num_pages, MAX_PAGES)

    @cached_property
    def count(self) -> int:
        qs = self.object_list
        if not qs.query.where:
            estimate = estimated_rows(qs)
            if estimate is not None and estimate >= ESTIMATE_FROM:
                return estimate
        return min(count_upto(qs, COUNT_LIMIT), COUNT_LIMIT)


class BoundedDepthChangeList(ChangeList):
    """A changelist whose deepest numbered page is ``MAX_PAGES``; past it, rows by key."""

    def get_results(self, request: HttpRequest) -> None:
        asked = self.page_num
        self.page_num = min(asked, MAX_PAGES)
        super().get_results(request)
        if self.page_num < MAX_PAGES or self.result_count <= MAX_PAGES * self.list_per_page:
            return
        rows = list(self.result_list)  # the page's rows, read once (the template reuses them)
        after = self._rows_after(request, rows[-1].pk) if rows else None
        text = (
            f"Page {asked} is past the {MAX_PAGES} pages this list numbers. "
            if asked > MAX_PAGES
            else f"This is the last of the {MAX_PAGES} pages this list numbers. "
        )
        if after is None:
            messages.warning(request, text + "Narrow it with a filter or a search.")
        else:
            messages.warning(
                request,
                format_html(
                    '{}<a href="{}" id="rows-after">Continue after this page</a>, or narrow it '
                    "with a filter or a search.",
                    text,
                    after,
                ),
            )

    def _rows_after(self, request: HttpRequest, last: Any) -> str | None:
        """The query string of the rows after ``last`` in this list's order, when the order
        is by primary key (descending or ascending); None for any other order."""
        ordering = self.get_ordering(request, self.queryset)
        pk = self.model._meta.pk.name
        first = ordering[0] if ordering else None
        lookup = {f"-{pk}": "lt", "-pk": "lt", pk: "gt", "pk": "gt"}.get(str(first))
        if lookup is None:
            return None
        params = {k: v for k, v in request.GET.items() if k not in (PAGE_VAR, f"{pk}__{lookup}")}
        params[f"{pk}__{lookup}"] = str(last)
        return "?" + urlencode(params)


class LargeTableAdmin(admin.ModelAdmin):
    """For append-mostly tables that grow with the hub (trajectories, steps, labels, flags,
    scoring records, audit events): newest first by key, counted by estimate, numbered to
    ``MAX_PAGES`` pages and continued by key. ``changelist_defer``: fields of the list's
    related rows (JSON documents) not loaded; read on demand on the one object a change page
    shows."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering: Any = ("-pk",)
    changelist_defer: tuple[str, ...] = ()

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BoundedDepthChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        qs = super().get_queryset(request)
        if self.changelist_defer:
            related = self.list_select_related
            if isinstance(related, list | tuple) and related:
                qs = qs.select_related(*related)
            qs = qs.defer(*self.changelist_defer)
        return qs


class IndexedValuesFilter(admin.AllValuesFieldListFilter):
    """A column's values as filter choices, read by a loose index scan of that column (of the
    related model for a ``relation__field`` path) instead of a ``DISTINCT`` over this table."""

    def __init__(self, field: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(field, *args, **kwargs)
        self.lookup_choices = distinct_values(field.model, field.name, limit=500, skip=())
