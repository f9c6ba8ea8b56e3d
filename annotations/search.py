"""Full-text search over trajectories with PostgreSQL's own text search.

Each trajectory has one row in ``TrajectorySearch``: a ``tsvector`` (configuration ``simple``:
no stemming and no stop words, which suits code, commands and ids) of its external id and task
type, every step's text, reasoning, commands, tool calls and tool output (each piece cut at
20,000 characters), and the rule, category and message of every flag. Text and query alike are
split at the punctuation that glues words into paths, file names, ids and flags (``SPLIT``), so
``module.py`` finds ``src/pkg/module.py`` and ``103321`` finds ``scale-103321``. A GIN index finds
the trajectories holding rare words; common words are checked row by row in page order.
Triggers keep it current on every insert of a trajectory, a step or a flag, however they are
written (``TRIGGERS``; the flag's in the safety app's migrations). Trajectories stored before
are given theirs by ``manage.py search_backfill`` (minutes per 200k trajectories; the service
runs meanwhile, and searches find them as it proceeds).

A query is a phrase: its words in that order, the last one as a prefix (what is being typed),
which is what the list's substring search matched, at word boundaries. Limits: phrases are
matched by word positions, which PostgreSQL counts up to 16,383 per vector, so a phrase far
into a very long trajectory may be missed (single words never are); a vector cannot pass 1 MB
(words past that are left out, with a warning in the database log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.postgres.search import SearchVectorField
from django.db import transaction
from django.db.models import Lookup

# The punctuation read like spaces, in text and queries (one character each in ``translate``).
SPLIT = "-./@:~+"

# One step as text for the vector (IMMUTABLE: the same row always gives the same words).
STEP_DOCUMENT = """
CREATE OR REPLACE FUNCTION rh_step_document(
    body text, reasoning text, tool_calls jsonb, commands jsonb, tool_results jsonb
) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT concat_ws(' ',
    left(body, 20000),
    left(reasoning, 20000),
    (SELECT string_agg(left(e ->> 'command', 20000), ' ')
       FROM jsonb_array_elements(CASE jsonb_typeof(commands) WHEN 'array' THEN commands
                                 ELSE '[]'::jsonb END) e),
    (SELECT string_agg(left(concat_ws(' ', e #>> '{function,name}',
                                      e #>> '{function,arguments}'), 20000), ' ')
       FROM jsonb_array_elements(CASE jsonb_typeof(tool_calls) WHEN 'array' THEN tool_calls
                                 ELSE '[]'::jsonb END) e),
    (SELECT string_agg(left(e ->> 'content', 20000), ' ')
       FROM jsonb_array_elements(CASE jsonb_typeof(tool_results) WHEN 'array' THEN tool_results
                                 ELSE '[]'::jsonb END) e))
$$;

CREATE OR REPLACE FUNCTION rh_search_words(document text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT to_tsvector('simple', translate(document, '-./@:~+', '       '))
$$;

CREATE OR REPLACE FUNCTION rh_trajectory_words(external_id text, task_type text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT rh_search_words(concat_ws(' ', external_id, task_type))
$$;

CREATE OR REPLACE FUNCTION rh_step_words(
    body text, reasoning text, tool_calls jsonb, commands jsonb, tool_results jsonb
) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT rh_search_words(rh_step_document(body, reasoning, tool_calls, commands, tool_results))
$$;

CREATE OR REPLACE FUNCTION rh_flag_words(rule_id text, category text, message text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT rh_search_words(concat_ws(' ', rule_id, category, left(message, 2000)))
$$;

DO $$ BEGIN
    CREATE AGGREGATE rh_tsvector_agg (tsvector) (
        SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = ''
    );
EXCEPTION WHEN duplicate_function THEN NULL;
END $$;
"""

# Insert-time upkeep: each statement adds the words of the rows it inserted (``ON CONFLICT``:
# whichever comes first creates the row). A vector that would pass PostgreSQL's 1 MB limit is
# left as it was, with a warning: a search miss, never a failed import.
TRIGGERS = """
CREATE OR REPLACE FUNCTION rh_search_trajectories_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO annotations_trajectorysearch AS s (trajectory_id, vector)
    SELECT n.id, rh_trajectory_words(n.external_id, n.task_type) FROM new_rows n
    ON CONFLICT (trajectory_id) DO UPDATE
        SET vector = coalesce(s.vector, ''::tsvector) || excluded.vector;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION rh_search_steps_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO annotations_trajectorysearch AS s (trajectory_id, vector)
        SELECT n.trajectory_id,
               rh_tsvector_agg(rh_step_words(n.text, n.reasoning, n.tool_calls, n.commands,
                                             n.tool_results))
        FROM new_rows n GROUP BY n.trajectory_id
        ON CONFLICT (trajectory_id) DO UPDATE
            SET vector = coalesce(s.vector, ''::tsvector) || excluded.vector;
    EXCEPTION WHEN program_limit_exceeded THEN
        RAISE WARNING 'search words of some steps left out: %', SQLERRM;
    END;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS trajectory_search_words ON annotations_trajectory;
CREATE TRIGGER trajectory_search_words AFTER INSERT ON annotations_trajectory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION rh_search_trajectories_inserted();
DROP TRIGGER IF EXISTS step_search_words ON annotations_step;
CREATE TRIGGER step_search_words AFTER INSERT ON annotations_step
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION rh_search_steps_inserted();
"""

DROP = """
DROP TRIGGER IF EXISTS trajectory_search_words ON annotations_trajectory;
DROP TRIGGER IF EXISTS step_search_words ON annotations_step;
DROP FUNCTION IF EXISTS rh_search_trajectories_inserted();
DROP FUNCTION IF EXISTS rh_search_steps_inserted();
"""

# The findings' words, installed by the safety app's migrations (flags live there).
FLAG_TRIGGER = """
CREATE OR REPLACE FUNCTION rh_search_flags_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO annotations_trajectorysearch AS s (trajectory_id, vector)
        SELECT n.trajectory_id, rh_tsvector_agg(rh_flag_words(n.rule_id, n.category, n.message))
        FROM new_rows n GROUP BY n.trajectory_id
        ON CONFLICT (trajectory_id) DO UPDATE
            SET vector = coalesce(s.vector, ''::tsvector) || excluded.vector;
    EXCEPTION WHEN program_limit_exceeded THEN
        RAISE WARNING 'search words of some findings left out: %', SQLERRM;
    END;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS flag_search_words ON safety_flag;
CREATE TRIGGER flag_search_words AFTER INSERT ON safety_flag
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION rh_search_flags_inserted();
"""

FLAG_TRIGGER_DROP = """
DROP TRIGGER IF EXISTS flag_search_words ON safety_flag;
DROP FUNCTION IF EXISTS rh_search_flags_inserted();
"""

INDEX = """
CREATE INDEX IF NOT EXISTS trajectory_search_vector ON annotations_trajectorysearch
    USING gin (vector);
"""

# Trajectories' vectors from what is stored, for an id range (the backfill after the migration,
# and bulk loads that bypass triggers): a bounded piece of work per statement.
REBUILD = """
INSERT INTO annotations_trajectorysearch AS s (trajectory_id, vector)
SELECT t.id,
       rh_trajectory_words(t.external_id, t.task_type)
       || coalesce((SELECT rh_tsvector_agg(rh_step_words(st.text, st.reasoning, st.tool_calls,
                                                         st.commands, st.tool_results))
                    FROM annotations_step st WHERE st.trajectory_id = t.id), ''::tsvector)
       || coalesce((SELECT rh_tsvector_agg(rh_flag_words(f.rule_id, f.category, f.message))
                    FROM safety_flag f WHERE f.trajectory_id = t.id), ''::tsvector)
FROM annotations_trajectory t
WHERE t.id > %s AND t.id <= %s
ON CONFLICT (trajectory_id) DO UPDATE SET vector = excluded.vector
"""

REBUILD_CHUNK = 2_000


def search_rebuild(
    connection: Any,
    *,
    after: int = 0,
    chunk: int = REBUILD_CHUNK,
    progress: Callable[[int, int, int], None] | None = None,
) -> int:
    """Compute the vectors of the trajectories with ids above ``after`` (PostgreSQL only),
    ``chunk`` ids per transaction, so it runs beside the service and resumes where it stopped
    (``progress(last id done, highest id, vectors written)``); returns how many it wrote."""
    if connection.vendor != "postgresql":
        return 0
    done = 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM annotations_trajectory")
        high = cursor.fetchone()[0] or 0
        start = after
        while start < high:
            end = min(start + chunk, high)
            with transaction.atomic(using=connection.alias):
                cursor.execute(REBUILD, [start, end])
                done += max(cursor.rowcount, 0)
            if progress is not None:
                progress(end, high, done)
            start = end
    return done


# The trajectories matching a query, at most ``most`` of them, from the GIN index alone. The
# function's own setting forbids sequential scans while its query is planned: PostgreSQL
# guesses a fixed share of matches for a prefix query, and for a rare word (an id, a host name)
# that guess made it test every vector in page order (2 s at 200k trajectories) where the index
# answers in a millisecond.
HITS_FUNCTION = """
CREATE OR REPLACE FUNCTION rh_search_hits(query tsquery, most integer) RETURNS SETOF bigint
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$ SELECT trajectory_id FROM annotations_trajectorysearch WHERE vector @@ query LIMIT most $$;
"""
DROP_HITS_FUNCTION = "DROP FUNCTION IF EXISTS rh_search_hits(tsquery, integer);"


def query_sql(placeholder: str) -> str:
    """The tsquery of the words in ``placeholder``: a phrase, the last word a prefix."""
    spaces = " " * len(SPLIT)
    phrase = f"phraseto_tsquery('simple', translate({placeholder}, '{SPLIT}', '{spaces}'))"
    prefix = f"regexp_replace({phrase}::text, '''$', ''':*')"
    return f"to_tsquery('simple', {prefix})"


def search_hits(connection: Any, words: str, most: int) -> list[int]:
    """Ids of up to ``most`` trajectories matching ``words`` (PostgreSQL), in no order."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rh_search_hits({query_sql('%s')}, %s)", [words, most])
        return [row[0] for row in cursor.fetchall()]


@SearchVectorField.register_lookup
class Matches(Lookup):
    """``vector__matches="some words"``: the words as a phrase, the last one a prefix."""

    lookup_name = "matches"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} @@ {query_sql(rhs)}", [*lhs_params, *rhs_params]
