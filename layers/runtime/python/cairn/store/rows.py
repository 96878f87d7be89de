"""Small helpers shared by the repositories: model <-> row, keyset pagination."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from psycopg import sql
from psycopg.types.json import Jsonb
from pydantic import BaseModel

from cairn.store.db import Connection

M = TypeVar("M", bound=BaseModel)
Order = Literal["asc", "desc"]


def to_params(model: BaseModel, json_fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """The model as statement parameters; `json_fields` become jsonb."""
    params = model.model_dump(mode="python", exclude=set(json_fields))
    # One JSON-mode dump for all jsonb fields (not one per field): this runs on every write.
    for name, value in model.model_dump(mode="json", include=set(json_fields)).items():
        params[name] = None if value is None else Jsonb(value)
    return params


def from_row(model: type[M], row: dict[str, Any] | None) -> M | None:
    return None if row is None else model.model_validate(row)


def per_agent(
    conn: Any, statement: str, model: type[M], org_id: str, agent_ids: list[str]
) -> dict[str, list[M]]:
    """What `statement` gives a page of agents (its `of_agent` column says whose), one list
    per agent, in the statement's order: one statement for the page, not one per agent."""
    found: dict[str, list[M]] = {agent_id: [] for agent_id in agent_ids}
    for row in conn.execute(statement, {"org": org_id, "agents": agent_ids}):
        found[row["of_agent"]].append(model.model_validate(row))
    return found


def keyset(
    table: str,
    *,
    order: Order,
    after: str | None,
    before: str | None,
    column: str = "created_at",
) -> tuple[sql.Composable, sql.Composable]:
    """WHERE fragment and ORDER BY for cursor pagination over (column, id).

    `after` / `before` are ids of rows in `table`; they mean *later than* / *earlier than* in
    the chosen order, as Letta's list routes do. An unknown cursor id matches nothing.
    """
    tbl, col = sql.Identifier(table), sql.Identifier(column)
    conditions: list[sql.Composable] = []
    for cursor, later in ((after, True), (before, False)):
        if cursor is None:
            continue
        op = ">" if later == (order == "asc") else "<"
        conditions.append(
            sql.SQL("({col}, id) {op} (SELECT {col}, id FROM {tbl} WHERE id = {cursor})").format(
                col=col, op=sql.SQL(op), tbl=tbl, cursor=sql.Literal(cursor)
            )
        )
    where = sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("TRUE")
    direction = sql.SQL("ASC" if order == "asc" else "DESC")
    order_by = sql.SQL("{col} {d}, id {d}").format(col=col, d=direction)
    return where, order_by


def filtered_page(
    conn: Any,
    statement: str | sql.SQL,
    model: type[M],
    table: str,
    fields: Mapping[str, sql.Composable],
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[M]:
    """One page of a list statement of `table`'s rows: its filters (`fields`) filled in, and
    its `{cursor}`, `{order_by}` and `{limit}` as `keyset` pages."""
    cursor, order_by = keyset(table, order=order, after=after, before=before)
    template = statement if isinstance(statement, sql.SQL) else sql.SQL(statement)
    query = template.format(**fields, cursor=cursor, order_by=order_by, limit=sql.Literal(limit))
    return [model.model_validate(r) for r in conn.execute(query).fetchall()]


PAGE = "SELECT * FROM {table} WHERE organization_id = {org} AND {filters} AND {cursor} ORDER BY {order_by} LIMIT {limit}"  # noqa: E501


def page(
    conn: Any,
    table: str,
    model: type[M],
    org_id: str,
    *,
    equals: dict[str, Any] | None = None,
    any_of: dict[str, list[Any] | None] | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[M]:
    """One page of an organization's rows, filtered by equality on the given columns.

    Filters whose value is None are left out, so optional query parameters pass straight in;
    `any_of` keeps rows whose column is one of the listed values.
    """
    filters = [
        sql.SQL("{} = {}").format(sql.Identifier(column), sql.Literal(value))
        for column, value in (equals or {}).items()
        if value is not None
    ] + [
        sql.SQL("{} = ANY({})").format(sql.Identifier(column), sql.Literal(list(values)))
        for column, values in (any_of or {}).items()
        if values
    ]
    fields = {
        "table": sql.Identifier(table),
        "org": sql.Literal(org_id),
        "filters": sql.SQL(" AND ").join(filters) if filters else sql.SQL("TRUE"),
    }
    return filtered_page(
        conn, PAGE, model, table, fields, after=after, before=before, limit=limit, order=order
    )


def contained(text: str | None) -> str | None:
    """`text` for `ILIKE '%' || it || '%'`: found as written. Its `%` and `_` would be
    wildcards otherwise (a search for `tool_` matched `tools`), so they and the escape
    character are escaped (PostgreSQL's default escape is the backslash)."""
    if text is None:
        return None
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def delete_with_rows(
    conn: Connection, parent: str, rows: tuple[str, ...], key: dict[str, Any]
) -> bool:
    """Delete a row (an agent, a run), then the rows no key removes with it (migration 0042),
    each in its own statement after the parent's: each sees what a writer that held the
    parent row committed meanwhile. False, and nothing else deleted, if the parent was not."""
    if conn.execute(parent, key).rowcount != 1:
        return False
    for statement in rows:
        conn.execute(statement, key)
    return True
