"""Query helpers whose cost is what they return, not the size of the table they read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connections, models, router
from django.db.models import BooleanField, F, Func, QuerySet


def distinct_values(
    model: type[models.Model], field_name: str, *, limit: int = 100, skip: tuple = ("",)
) -> list:
    """The distinct values of an indexed column, ascending, at most ``limit`` (``skip`` left
    out). On PostgreSQL a loose index scan (a recursive CTE, one index probe per value), so a
    filter menu over 200k trajectories or a million scoring records costs as many probes as it
    has values; elsewhere a plain ``DISTINCT``."""
    field = model._meta.get_field(field_name)
    alias = router.db_for_read(model)
    connection = connections[alias]
    if connection.vendor != "postgresql":
        values = (
            model._default_manager.using(alias)
            .order_by(field_name)
            .values_list(field_name, flat=True)
            .distinct()
        )
        return [v for v in values[: limit + len(skip)] if v not in skip][:limit]
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(field.column)
    sql = (
        f"WITH RECURSIVE v(x) AS ("  # noqa: S608 (names from the model, values as parameters)
        f"(SELECT {column} FROM {table} WHERE {column} IS NOT NULL ORDER BY {column} LIMIT 1) "
        f"UNION ALL SELECT (SELECT {column} FROM {table} WHERE {column} > v.x "
        f"ORDER BY {column} LIMIT 1) FROM v WHERE v.x IS NOT NULL) "
        f"SELECT x FROM v WHERE x IS NOT NULL LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [limit + len(skip)])
        values = [row[0] for row in cursor.fetchall()]
    return [v for v in values if v not in skip][:limit]


def count_upto(qs: QuerySet, limit: int) -> int:
    """How many rows ``qs`` has, counting no further than ``limit`` + 1: a number above
    ``limit`` means "more than ``limit``". The database stops after that many matches."""
    return qs.order_by()[: limit + 1].count()


# Below this many rows (by the planner's estimate) a table is simply counted.
ESTIMATE_FROM = 100_000


def estimated_rows(qs: QuerySet) -> int | None:
    """PostgreSQL's estimate of a table's rows (``pg_class.reltuples``, kept by autovacuum and
    ANALYZE), or None elsewhere or when the table was never analysed."""
    connection = connections[qs.db]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
            [connection.ops.quote_name(qs.model._meta.db_table)],
        )
        row = cursor.fetchone()
    return row[0] if row and row[0] >= 0 else None


def table_size(model: type[models.Model]) -> tuple[int, bool]:
    """(rows, estimated): a big table's estimate, or the exact count of a small one."""
    qs = model._default_manager.all()
    estimate = estimated_rows(qs)
    if estimate is not None and estimate >= ESTIMATE_FROM:
        return estimate, True
    return qs.count(), False


class AnyOf(Func):
    """``field = ANY(%s)``: whether ``field`` is one of ``values``, the values sent as one array
    on PostgreSQL (``IN (...)`` elsewhere). An ``IN`` list of a chunk's 500 ids is 500
    parameters that Django, psycopg and PostgreSQL's parser each handle one at a time, in every
    query of every chunk of an export; an array is one.

    ``qs.filter(AnyOf("step__trajectory_id", ids))`` (a path as ``F`` takes it)."""

    output_field = BooleanField()
    arity = 1

    def __init__(self, field: str, values: Iterable[Any]) -> None:
        super().__init__(F(field))
        self.values = list(values)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        if not self.values:
            return "1 = 0", list(params)
        marks = ", ".join(["%s"] * len(self.values))
        return f"{column} IN ({marks})", [*params, *self.values]

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        return f"{column} = ANY(%s)", [*params, self.values]
