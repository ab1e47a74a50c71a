"""``UPDATE`` and ``MERGE INTO`` statements for Hudi's SQL, built from plain values (no I/O).

Hudi runs both on the server (``UpdateHoodieTableCommand``, ``MergeIntoHoodieTableCommand``), addressing the
table by its catalog name; the merge's source is a temporary view of the caller's DataFrame. The builder is
delta-spark's ``DeltaMergeBuilder`` in shape:

    (table.merge(updates, "t.id = s.id")
          .when_matched_update(set={"amount": "s.amount"})
          .when_not_matched_insert_all()
          .execute())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from hudi_connect.core.format.timeline import Instant

ClauseKind = Literal["update", "update_all", "delete", "insert", "insert_all"]


def sql_identifier(name: str) -> str:
    """A column or view name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def assignments(values: Mapping[str, str]) -> str:
    """``col = expression, ...``; expressions are SQL text (``"s.amount * 2"``, ``"'paris'"``)."""
    if not values:
        raise ValueError("name at least one column to set")
    return ", ".join(f"{sql_identifier(column)} = {expression}" for column, expression in values.items())


def update_statement(table: str, values: Mapping[str, str], condition: str | None) -> str:
    """Hudi's ``UPDATE``: the columns of ``values`` set in every record matching ``condition`` (all without)."""
    where = f" WHERE {condition}" if condition else ""
    return f"UPDATE {table} SET {assignments(values)}{where}"


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN [NOT] MATCHED [AND condition] THEN ...`` clause."""

    kind: ClauseKind
    condition: str | None = None
    values: tuple[tuple[str, str], ...] = ()  # (column, expression) of update and insert

    @property
    def matched(self) -> bool:
        """Whether the clause acts on rows that match a record (update, delete) or on those that match none."""
        return self.kind in ("update", "update_all", "delete")

    def sql(self, condition: str | None) -> str:
        """The clause with ``condition`` (the caller's, made exclusive of earlier clauses') in place of its own."""
        head = "WHEN MATCHED" if self.matched else "WHEN NOT MATCHED"
        if condition:
            head += f" AND {condition}"
        action = {"update_all": "UPDATE SET *", "delete": "DELETE", "insert_all": "INSERT *"}.get(self.kind)
        if self.kind == "update":
            action = f"UPDATE SET {assignments(dict(self.values))}"
        elif self.kind == "insert":
            action = (f"INSERT ({', '.join(sql_identifier(c) for c, _ in self.values)}) "
                      f"VALUES ({', '.join(e for _, e in self.values)})")
        return f"{head} THEN {action}"


def merge_statement(table: str, source_view: str, on: str, clauses: tuple[MergeClause, ...], *,
                    target_alias: str = "t", source_alias: str = "s") -> str:
    """Hudi's ``MERGE INTO``: matched clauses first, as Spark's grammar orders them."""
    if not clauses:
        raise ValueError("a merge needs at least one when_matched_* or when_not_matched_* clause")
    matched = [c for c in clauses if c.matched]
    not_matched = [c for c in clauses if not c.matched]
    return (f"MERGE INTO {table} AS {sql_identifier(target_alias)} USING {sql_identifier(source_view)} AS "
            f"{sql_identifier(source_alias)} ON {on} "
            + " ".join(c.sql(cond) for c, cond in zip(matched, first_match_conditions(matched), strict=True))
            + (" " if matched and not_matched else "")
            + " ".join(c.sql(cond) for c, cond in zip(not_matched, first_match_conditions(not_matched),
                                                         strict=True)))


def first_match_conditions(clauses: list[MergeClause]) -> list[str | None]:
    """Each clause's condition made to exclude the rows an earlier clause takes: SQL's rule (the first clause
    whose condition holds acts) whatever order Hudi evaluates them in. Hudi's ``ExpressionPayload`` tries the
    update clauses before the delete clauses, so ``when_matched_delete(c)`` then ``when_matched_update()``
    would otherwise update the rows ``c`` should delete. A NULL condition does not hold (``COALESCE``)."""
    conditions: list[str | None] = []
    earlier: list[str] = []
    if any(clause.condition is None for clause in clauses[:-1]):
        raise ValueError("only the last when_matched_* (and the last when_not_matched_*) clause may go without a "
                         "condition: a clause after it would never act")
    for clause in clauses:
        parts = [f"NOT COALESCE(({c}), FALSE)" for c in earlier]
        if clause.condition:
            parts.append(f"({clause.condition})")
        conditions.append(" AND ".join(parts) or None)
        earlier.append(clause.condition or "TRUE")
    return conditions


def has_partial_update(clauses: tuple[MergeClause, ...], columns: tuple[str, ...]) -> bool:
    """Whether a ``when_matched_update`` sets only some of the table's ``columns``."""
    wanted = {c.lower() for c in columns}
    return any(c.kind == "update" and not wanted <= {name.lower() for name, _ in c.values} for c in clauses)


def partial_update_loses_columns(clauses: tuple[MergeClause, ...], columns: tuple[str, ...], *,
                                 merge_on_read: bool, table_version: int,
                                 source_has_unmatched_rows: Callable[[], bool]) -> str | None:
    """Why Hudi would write a partial ``when_matched_update``'s record wrongly, or None.

    On MERGE_ON_READ tables Hudi keeps a partial update's other columns only through partial-update log blocks
    (``MergeIntoHoodieTableCommand``), from table version 8 on, while the update clauses together leave some
    column unset. Measured on Hudi 1.2, it writes such a record wrongly (NULL in the columns it leaves out, or
    its values in the wrong columns) when the update clauses set every column between them, and when the
    source holds rows that match no record. ``source_has_unmatched_rows`` is asked only when it matters.
    """
    if not merge_on_read or not has_partial_update(clauses, columns):
        return None  # a copy-on-write merge rewrites each record from the stored one
    wanted = {c.lower() for c in columns}
    updates = [c for c in clauses if c.kind in ("update", "update_all")]
    set_anywhere = set().union(*(wanted if c.kind == "update_all" else {n.lower() for n, _ in c.values}
                                 for c in updates))
    if table_version < 8:
        return f"table version {table_version} has no partial-update log blocks: the other columns become NULL"
    if wanted <= set_anywhere:
        return ("the update clauses together set every column, so Hudi writes whole records, and the partial "
                "clause's records get NULL in the columns it leaves out")
    if source_has_unmatched_rows():
        return ("the source has rows that match no record, beside which Hudi writes the partial update's records "
                "with their values in the wrong columns")
    return None


class MergeBuilder:
    """The clauses of one merge, gathered in order, then run by :meth:`execute` (delta-spark's shape).

    Conditions and values are Spark SQL text over the target's alias (``t``) and the source's (``s``)."""

    def __init__(self, run: Callable[[tuple[MergeClause, ...]], Instant | None]) -> None:
        self._run = run
        self._clauses: tuple[MergeClause, ...] = ()

    def _with(self, clause: MergeClause) -> MergeBuilder:
        self._clauses = (*self._clauses, clause)
        return self

    def when_matched_update(self, set: Mapping[str, str], condition: str | None = None) -> MergeBuilder:
        """Set these columns of a matched record (a partial update: the others keep their values)."""
        return self._with(MergeClause("update", condition, tuple(set.items())))

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        """Replace a matched record with the source's row (same columns)."""
        return self._with(MergeClause("update_all", condition))

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete a matched record."""
        return self._with(MergeClause("delete", condition))

    def when_not_matched_insert(self, values: Mapping[str, str], condition: str | None = None) -> MergeBuilder:
        """Insert a record built from these column values for a source row matching none."""
        return self._with(MergeClause("insert", condition, tuple(values.items())))

    def when_not_matched_insert_all(self, condition: str | None = None) -> MergeBuilder:
        """Insert the source's row where it matches none."""
        return self._with(MergeClause("insert_all", condition))

    def execute(self) -> Instant | None:
        """Run the merge as one Hudi commit; returns it (None when the merge changed nothing)."""
        return self._run(self._clauses)
