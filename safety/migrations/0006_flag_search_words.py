"""The flag queue's text search: a GIN index over command, rule and message (PostgreSQL only)."""

from django.db import migrations

# A frozen copy of safety.selectors.FLAG_WORDS_SQL (tests check the queue's search uses it).
FLAG_WORDS_SQL = (
    "to_tsvector('simple'::regconfig, translate("
    "left(command, 20000) || ' ' || rule_id || ' ' || message, '-./@:~+', '       '))"
)


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS flag_search_words ON safety_flag USING gin ({FLAG_WORDS_SQL})"
        )


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS flag_search_words")


class Migration(migrations.Migration):
    dependencies = [("safety", "0005_merge_0004_flag_queue_and_search_0004_scan_hardening")]

    operations = [migrations.RunPython(create, drop)]
