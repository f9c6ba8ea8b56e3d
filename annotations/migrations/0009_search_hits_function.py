"""PostgreSQL: ``rh_search_hits``, the search index's matches for a rare word (see
``annotations.search.HITS_FUNCTION``). SQLite searches the columns instead."""

from django.db import migrations

from annotations import search


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(search.HITS_FUNCTION)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(search.DROP_HITS_FUNCTION)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0008_trajectory_search")]

    operations = [migrations.RunPython(install, uninstall)]
