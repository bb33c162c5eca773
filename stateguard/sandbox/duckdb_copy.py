"""A DuckDB connection in a checkpoint: a copy of its tables and views, so a restore rewinds them.

A connection is a live resource that does not pickle. Without this module a checkpoint skips it
and a restore keeps the live one, so the tables the cells rebuilt since the checkpoint stay as
they are now: a rollback, or a worker's redo of a turn from its save point, would read the new
tables under the old Python values. A connection is copied instead when everything it holds can
be rebuilt exactly from a copy:

- an in-memory database, the only one attached, with nothing outside the `main` schema;
- plain tables (no constraints, no column defaults, no indexes) and plain views, none of them
  temporary (a registered data frame is a temporary view over a Python object);
- no sequences, macros, user types, and settings as a fresh connection with the same `threads`
  has them;
- a connection busy with an unfinished result is read through a cursor, which does not see its
  temporary objects: those are not in the copy (`copy_connection` says why).

Each table travels as an Arrow table with its declared column types; on restore the types are
cast back (Arrow has no UUID, ENUM or HUGEINT: they arrive as text or decimals). A column type
that does not survive that round trip (BIT, BIGNUM, UNION, ...) keeps the whole connection out
of the checkpoint, as before. Only a connection bound to top-level names is copied, and only when
it is the one connection there: two connections may share a database (`con.cursor()`), and two
separate copies would not.

The copy runs in the kernel process, like the rest of `snapshot.py`; the restored connection is
a new object with the copied tables and views.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["ConnectionCopy", "connection_names", "copy_connection"]

# Settings that change what is shown, never what a query returns (a cursor does not inherit the
# progress bar its connection detected for the terminal).
_DISPLAY_SETTINGS = frozenset({"enable_progress_bar", "enable_progress_bar_print", "progress_bar_time"})

# Column types that Arrow cannot carry back even with a cast to the declared type (as whole words:
# a struct's field named `habit` is no BIT).
_UNSAFE_TYPES = re.compile(r"\b(?:BIT|BIGNUM|VARINT|UNION|VARIANT|GEOMETRY)\b", re.IGNORECASE)

_EXTRAS = """
SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary OR schema_name <> 'main'
            OR database_name <> current_database())
     + (SELECT count(*) FROM duckdb_views() WHERE NOT internal AND (temporary OR schema_name <> 'main'
            OR database_name <> current_database()))
     + (SELECT count(*) FROM duckdb_schemas() WHERE NOT internal AND schema_name <> 'main')
     + (SELECT count(*) FROM duckdb_sequences())
     + (SELECT count(*) FROM duckdb_indexes())
     + (SELECT count(*) FROM duckdb_constraints())
     + (SELECT count(*) FROM duckdb_types() WHERE NOT internal)
     + (SELECT count(*) FROM duckdb_columns() WHERE column_default IS NOT NULL)
     + (SELECT count(*) FROM duckdb_functions() WHERE NOT internal)
"""


@dataclass
class ConnectionCopy:
    """What a restore rebuilds a connection from (pickled in the checkpoint in its place)."""

    threads: str
    tables: list[tuple[str, list[tuple[str, str]], Any]]  # name, (column, declared type), Arrow table
    views: list[str]  # CREATE VIEW statements, in the order they were created

    def reopen(self) -> Any:
        import duckdb

        con = duckdb.connect(config={"threads": int(self.threads)})
        for name, columns, data in self.tables:
            con.register("__stateguard_copy__", data)
            cast = ", ".join(f"CAST(s.{_quote(c)} AS {t}) AS {_quote(c)}" for c, t in columns)
            con.execute(f"CREATE TABLE {_quote(name)} AS SELECT {cast} FROM __stateguard_copy__ AS s")
            con.unregister("__stateguard_copy__")
        for sql in self.views:
            con.execute(sql)
        return con


def _connection_type() -> type | None:
    module = sys.modules.get("duckdb")
    return getattr(module, "DuckDBPyConnection", None) if module is not None else None


def connection_names(values: dict[str, Any]) -> dict[str, Any]:
    """Top-level names bound to a DuckDB connection (name -> connection); empty when duckdb was
    never imported."""
    kind = _connection_type()
    if kind is None:
        return {}
    return {name: value for name, value in values.items() if isinstance(value, kind)}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _settings(con: Any) -> dict[str, Any]:
    return dict(con.sql("SELECT name, value FROM duckdb_settings()").fetchall())


def _fresh_settings(threads: str) -> dict[str, Any]:
    """The settings a connection opened now would have (not cached: a process-wide default set
    since, such as the progress bar's, would make every later copy differ)."""
    import duckdb

    fresh = duckdb.connect(config={"threads": int(threads)})
    try:
        return _settings(fresh)
    finally:
        fresh.close()


def copy_connection(con: Any) -> tuple[ConnectionCopy | None, str]:
    """(the copy, "") or (None, why the connection cannot be copied exactly).

    The catalog is read on the connection itself, which also shows its temporary objects. A
    connection that holds an unfinished result (`con.execute("CREATE TABLE ...")` leaves one, its
    row count) refuses any other query, and fetching that result for it would change what the
    cells see; it is read through a cursor instead, which shares the database but not the
    connection's temporary objects: those (TEMP tables, registered frames) are then not in the copy.
    """
    try:
        con.sql("SELECT 1").fetchall()
    except Exception as exc:
        if "ResourceInUse" not in type(exc).__name__:
            return None, f"{type(exc).__name__}: {exc}"[:300]
        try:
            cursor = con.cursor()
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300]
        try:
            return _copy(cursor)
        finally:
            cursor.close()
    return _copy(con)


def _copy(con: Any) -> tuple[ConnectionCopy | None, str]:
    try:
        settings = _settings(con)
        threads = str(settings.get("threads", "1"))
        fresh = _fresh_settings(threads)
        changed = sorted(k for k, v in settings.items() if fresh.get(k) != v and k not in _DISPLAY_SETTINGS)
        if changed:
            return None, f"settings differ from a fresh connection's: {', '.join(changed[:5])}"
        databases = con.sql("SELECT path FROM duckdb_databases() WHERE NOT internal").fetchall()
        if len(databases) != 1 or databases[0][0] is not None:
            return None, "not one in-memory database (a file or an attached database)"
        if con.sql(_EXTRAS).fetchall()[0][0]:
            return None, (
                "holds more than plain tables and views (temporary or registered objects, other schemas, "
                "sequences, indexes, constraints, defaults, macros or types)"
            )
        rows = con.sql(
            "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c JOIN duckdb_tables() t "
            "ON c.table_oid = t.table_oid ORDER BY t.table_oid, c.column_index"
        ).fetchall()
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in rows:
            if _UNSAFE_TYPES.search(kind):
                return None, f"column {table}.{column} of type {kind} does not survive a copy"
            columns.setdefault(table, []).append((column, kind))
        tables = [(name, cols, con.table(_quote(name)).to_arrow_table()) for name, cols in columns.items()]
        views = [
            sql
            for (sql,) in con.sql(
                "SELECT sql FROM duckdb_views() WHERE NOT internal ORDER BY view_oid"
            ).fetchall()
        ]
    except Exception as exc:  # an unfinished result, a closed connection, ...
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return ConnectionCopy(threads=threads, tables=tables, views=views), ""
