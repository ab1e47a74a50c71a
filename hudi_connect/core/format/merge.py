"""Merging a file slice's records the way Hudi's readers do, vectorised with Arrow.

The base file holds one record per key; log blocks add newer records and
deletes, in order. Hudi's merge modes (``RecordMergeMode``):

- ``EVENT_TIME_ORDERING``: per key, the record with the greatest ordering
  value wins; on a tie the later one (log over base, later block over earlier).
  A delete carrying no ordering value ("natural" order, as Hudi writes for
  deletes by key) removes the key whatever came before it, the base record
  included; a record logged after it replaces it and then meets the base
  record by ordering value like any other (so a late record after a natural
  delete loses to a newer base record, which comes back: Hudi's
  ``EventTimeRecordMerger`` and ``FileGroupRecordBuffer`` do exactly this).
- ``COMMIT_TIME_ORDERING``: the latest record wins.

Ordering values compare as Hudi's merger compares them (``Comparable.compareTo`` on Java's boxed values,
:func:`comparable_orderings`): a float or double by ``Double.compareTo`` (NaN above every number, -0.0 below
0.0), and a null ordering value of a record as Hudi's default ordering value, the Integer 0, which an int (or a
date, an int of days) compares with and every other type fails to (Hudi's read fails; ours refuses by name).
Several ordering fields compare as Hudi's ``ArrayComparable``: field by field, each by those rules.

Base columns may come dictionary-encoded (:func:`~hudi_connect.core.format.parquet_files.read_parquet`): the
merge takes the rows it keeps by their indices and expands only those.

Imports only pyarrow, numpy and the library's own Arrow-only modules, so it runs inside Python workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.parquet_files import plain_strings

KEY = "__hc_key"
SEQ = "__hc_seq"
ORD = "__hc_ord"
KIND = "__hc_kind"
POS = "__hc_pos"  # a log data record's row among the slice's
DATA, DELETE, NATURAL_DELETE = 0, 1, 2
Positions = npt.NDArray[np.int64]  # row numbers


@dataclass(frozen=True)
class LogRecords:
    """Records of a slice's log blocks in log order: data rows and deletes (keys only)."""

    data: pa.Table  # output-schema columns plus KEY, ORD, SEQ
    deletes: pa.Table  # KEY, ORD (null = natural), SEQ
    # partial-update blocks (IS_PARTIAL): (first SEQ, last SEQ + 1, the output columns their records lack)
    partial_blocks: tuple[tuple[int, int, frozenset[str]], ...] = ()


_SIGN_BITS = 0x7FFF_FFFF_FFFF_FFFF


def _ordering_keys(values: pa.Array) -> pa.Array:
    """Float or double ordering values as int64 keys in ``Double.compareTo``'s order (every NaN the greatest,
    -0.0 below 0.0): the IEEE bits, a negative number's flipped below the sign. Other types as they are."""
    if not pa.types.is_floating(values.type):
        return values
    doubles = values.cast(pa.float64())  # a float widens exactly: -0.0 and NaN keep their places
    doubles = pc.if_else(pc.is_nan(doubles), pa.scalar(float("nan")), doubles)  # Java's canonical NaN
    bits = doubles.view(pa.int64())
    return pc.if_else(pc.less(bits, 0), pc.bit_wise_xor(bits, pa.scalar(_SIGN_BITS, pa.int64())), bits)


def _hudi_default_fills(ordering_type: pa.DataType) -> bool:
    """Whether Hudi's default ordering value (the Integer 0) compares with values of this type: an int, or a
    date (an int of days to Spark's rows)."""
    return bool(pa.types.is_int32(ordering_type) or pa.types.is_date32(ordering_type))


def comparable_orderings(base: pa.Table | None, logs: LogRecords) -> tuple[pa.Table | None, LogRecords]:
    """``base`` and ``logs`` with their records' ordering values as Hudi's event-time merge compares them.

    A record's null ordering value is Hudi's default, the Integer 0: an int or date ordering field compares
    it as 0 (the epoch), any other type cannot, and a key whose records meet so is refused by name (Hudi's read
    of it fails). A delete's null ordering value stays null: a natural delete, ordered by position.

    Several ordering fields (``ORD`` a struct of them) compare as Hudi's ``ArrayComparable``: field by field,
    the first that differs deciding, each field's null Hudi's default as above; their values become one int64
    rank per record, in that order, over the slice's records and deletes."""
    data = logs.data
    ordering_type = data.schema.field(ORD).type
    tables = [data] + ([base] if base is not None else [])  # only their key and ordering columns are combined
    deletes = logs.deletes.combine_chunks()
    ordered = pc.is_valid(deletes[ORD])  # a natural delete carries no ordering value
    ordered_deletes = deletes.filter(ordered)
    values = [t[ORD].combine_chunks() for t in tables] + [ordered_deletes[ORD].combine_chunks().cast(ordering_type)]
    fields = list(ordering_type) if pa.types.is_struct(ordering_type) else [pa.field(ORD, ordering_type)]
    per_field = []
    for i, field in enumerate(fields):
        columns = [_child(v, i) for v in values]
        if any(c.null_count for c in columns):
            if _hudi_default_fills(field.type):
                zero = pa.scalar(0, pa.int32()).cast(field.type)
                columns = [pc.fill_null(c, zero) for c in columns]
            else:
                keys = [t[KEY].combine_chunks() for t in tables] + [ordered_deletes[KEY].combine_chunks()
                                                                      .cast(pa.string())]
                _refuse_null_orderings(keys, [c.is_null() for c in columns], field.type)
        per_field.append([_ordering_keys(c) for c in columns])
    comparable = per_field[0] if len(fields) == 1 else _lexicographic_ranks(per_field)
    tables = [t.set_column(t.schema.get_field_index(ORD), ORD, c) for t, c in zip(tables, comparable, strict=False)]
    # the ordered deletes' values back in place, natural deletes' nulls kept (a null index takes a null)
    positions = pc.subtract(pc.cumulative_sum(ordered.cast(pa.int64())), 1)
    delete_values = comparable[-1].take(pc.if_else(ordered, positions, pa.scalar(None, pa.int64())))
    deletes = deletes.set_column(deletes.schema.get_field_index(ORD), ORD, delete_values)
    merged_base = tables[1] if base is not None else None
    return merged_base, LogRecords(tables[0], deletes, logs.partial_blocks)


def commit_time_orderings(base: pa.Table | None, logs: LogRecords) -> tuple[pa.Table | None, LogRecords]:
    """``base`` and ``logs`` for a merge by commit time, where ordering values decide nothing: each becomes 0
    (an int64) or stays null, since a delete without one is still a natural delete."""
    def positional(table: pa.Table) -> pa.Table:
        present = pc.is_valid(table[ORD])
        zeros = pc.if_else(present, pa.scalar(0, pa.int64()), pa.scalar(None, pa.int64()))
        return table.set_column(table.schema.get_field_index(ORD), ORD, zeros)
    return (positional(base) if base is not None else None,
            LogRecords(positional(logs.data), positional(logs.deletes), logs.partial_blocks))


def _child(values: pa.Array, index: int) -> pa.Array:
    """One ordering field's values: the struct's child (with the struct's nulls), or the values themselves."""
    if not pa.types.is_struct(values.type):
        return values
    return pc.struct_field(values, [index])


def _lexicographic_ranks(per_field: list[list[pa.Array]]) -> list[pa.Array]:
    """Each record's rank (int64) among all records' ordering values compared field by field, for arrays given
    per field (each field's arrays in the same order of tables)."""
    sizes = [len(a) for a in per_field[0]]
    ranks = pa.table({str(i): pc.rank(pa.concat_arrays(arrays), tiebreaker="dense")
                      for i, arrays in enumerate(per_field)})
    if ranks.num_rows == 0:
        return [pa.array([], pa.int64()) for _ in sizes]
    order = pc.sort_indices(ranks, sort_keys=[(name, "ascending") for name in ranks.column_names])
    ordered = ranks.take(order)
    differs = pa.array([False] * (ordered.num_rows - 1), pa.bool_())
    for name in ordered.column_names:
        column = ordered[name].combine_chunks()
        differs = pc.or_(differs, pc.not_equal(column.slice(1), column.slice(0, ordered.num_rows - 1)))
    starts = pa.concat_arrays([pa.array([False]), differs]).cast(pa.int64())
    combined = pc.cumulative_sum(starts).take(pc.sort_indices(order))  # back in the records' order
    out, offset = [], 0
    for size in sizes:
        out.append(combined.slice(offset, size))
        offset += size
    return out


def _refuse_null_orderings(keys: list[pa.Array], nulls: list[pa.Array], ordering_type: pa.DataType) -> None:
    """Refuse a key whose records meet in the merge while one has a null ordering value of a type Hudi's
    default (the Integer 0) cannot be compared with; a record alone for its key meets none. ``keys`` and
    ``nulls`` (which records hold such a null) per table: the data, the base and the ordered deletes."""
    null_keys = pa.concat_arrays([k.filter(n) for k, n in zip(keys, nulls, strict=True)])
    every = pa.concat_arrays(keys)
    counts = pc.value_counts(every.filter(pc.is_in(every, value_set=null_keys.unique())))
    compared = [str(c["values"]) for c in counts.to_pylist() if c["counts"] > 1]
    if compared:
        raise UnsupportedTableFeatureError(
            "a null ordering value merged with another record of its key", "ordering value type",
            str(ordering_type), where=f"the file slice of record key {compared[0]!r}",
            detail="Hudi's merger compares a null ordering value as the Integer 0, which a value of this type "
                   "cannot be compared with: Hudi's own read of this slice fails too")


def _last_per_key(table: pa.Table, order: list[tuple[str, str]]) -> pa.Table:
    """The last row of each key group after sorting by key then ``order``."""
    if table.num_rows == 0:
        return table
    # Null ordering values (natural deletes) sort first: any record after them wins.
    indices = pc.sort_indices(table, sort_keys=[(KEY, "ascending"), *order], null_placement="at_start")
    ordered = table.take(indices)
    keys = ordered[KEY]
    if ordered.num_rows == 1:
        return ordered
    next_differs = pc.not_equal(keys.slice(0, ordered.num_rows - 1), keys.slice(1))
    last = pa.concat_arrays([next_differs.combine_chunks(), pa.array([True])])
    return ordered.filter(last)


def merge_slice(
    base: pa.Table | None,
    logs: LogRecords,
    *,
    event_time_ordering: bool = True,
) -> pa.Table:
    """The merged records of a file slice, in the output schema of ``logs.data`` minus helper columns.

    ``base`` has the output columns plus KEY and ORD. Sequence numbers in ``logs``
    must grow with log order; base rows count as older than every log row.
    """
    base, logs = (comparable_orderings if event_time_ordering else commit_time_orderings)(base, logs)
    data, deletes = logs.data, logs.deletes
    helper = [KEY, ORD, SEQ, KIND, POS]
    output_columns = [c for c in data.column_names if c not in helper]

    output_schema = data.select(output_columns).schema
    if data.num_rows == 0 and deletes.num_rows == 0:
        return plain_strings(base.select(output_columns), output_schema) if base is not None \
            else data.select(output_columns)

    ord_type = data.schema.field(ORD).type
    marks = pa.table({
        KEY: deletes[KEY],
        ORD: deletes[ORD].cast(ord_type),
        SEQ: deletes[SEQ],
        KIND: pc.if_else(pc.is_null(deletes[ORD]), NATURAL_DELETE, DELETE).cast(pa.int8()),
        POS: pa.nulls(deletes.num_rows, pa.int64()),
    })
    rows = pa.table({KEY: data[KEY], ORD: data[ORD], SEQ: data[SEQ],
                     KIND: pa.array(np.full(data.num_rows, DATA, np.int8)), POS: pa.array(np.arange(data.num_rows))})
    events = pa.concat_tables([rows, marks])

    # Only what follows a key's last natural delete counts; the delete itself stays as a marker.
    natural = events.filter(pc.equal(events[KIND], NATURAL_DELETE))
    if natural.num_rows:
        last_natural = natural.group_by(KEY).aggregate([(SEQ, "max")]).rename_columns([KEY, "__hc_nd"])
        events = events.join(last_natural, KEY, join_type="left outer")
        keep = pc.or_kleene(pc.is_null(events["__hc_nd"]), pc.greater_equal(events[SEQ], events["__hc_nd"]))
        events = events.filter(keep)
        # an ordered delete after the natural one and before the key's next record is dropped: the key stays
        # naturally deleted (Hudi's BufferedRecordMergerFactory.deltaMergeDeleteRecord)
        after = events.filter(pc.and_(pc.equal(events[KIND], DATA), pc.is_valid(events["__hc_nd"])))
        first_data = after.group_by(KEY).aggregate([(SEQ, "min")]).rename_columns([KEY, "__hc_fd"])
        events = events.join(first_data, KEY, join_type="left outer")
        before_data = pc.or_kleene(pc.is_null(events["__hc_fd"]), pc.less(events[SEQ], events["__hc_fd"]))
        stays_natural = pc.and_kleene(pc.and_kleene(pc.equal(events[KIND], DELETE), pc.is_valid(events["__hc_nd"])),
                                      before_data)
        events = events.filter(pc.invert(stays_natural)).drop_columns(["__hc_nd", "__hc_fd"])

    if event_time_ordering:
        # Null ordering sorts first, so a natural-delete marker loses to any record after it.
        winners = _last_per_key(events, [(ORD, "ascending"), (SEQ, "ascending")])
    else:
        winners = _last_per_key(events, [(SEQ, "ascending")])

    won = pc.equal(winners[KIND], DATA)
    positions = np.sort(winners[POS].filter(won).to_numpy())  # in log order
    log_winners = data.select([*output_columns, KEY, ORD])
    if len(positions) < data.num_rows:  # else every log record won: the positions are all rows, in order
        log_winners = log_winners.take(positions)
    deleted_keys = winners.filter(pc.invert(won)).select([KEY, ORD])

    if base is None or base.num_rows == 0:
        return log_winners.select(output_columns)

    # Base rows: dropped if the key was naturally deleted, or if a log winner (data or delete)
    # has an ordering value at least as great (or commit-time ordering: always). The log decided one winner
    # per key; a hash lookup finds the base rows of those keys, and the rest is arithmetic on row numbers.
    decided_keys = pa.concat_arrays([t[KEY].combine_chunks().cast(pa.string()) for t in (log_winners, deleted_keys)])
    found = pc.index_in(base[KEY], value_set=decided_keys, skip_nulls=True).combine_chunks()  # null: not decided
    base_rows = np.flatnonzero(found.is_valid().to_numpy(zero_copy_only=False))
    rows, hits = _first_row_of_each_key(base_rows, found.take(base_rows).to_numpy().astype(np.int64))
    keeps = np.ones(base.num_rows, dtype=bool)
    keeps[rows] = False  # under commit-time ordering the log's winner always wins
    if event_time_ordering:
        # Hudi's finalMerge: the log's winner unless the base record's ordering value is greater; a natural
        # delete (no ordering value) always wins, and a record logged after it is ordered like any other
        decided_ords = pa.concat_arrays([log_winners[ORD].combine_chunks(),
                                         deleted_keys[ORD].combine_chunks().cast(ord_type)])
        base_newer = pc.fill_null(pc.greater(base[ORD].take(rows), decided_ords.take(hits)), False)
        newer = base_newer.to_numpy(zero_copy_only=False)
        keeps[rows[newer]] = True
        lost = hits[newer]
        lost = lost[lost < log_winners.num_rows]  # the log winners that lost to a newer base record go
        if len(lost):
            log_keeps = np.ones(log_winners.num_rows, dtype=bool)
            log_keeps[lost] = False
            log_winners = log_winners.filter(pa.array(log_keeps))
    # by row numbers: Arrow's take copies strings faster than its filter does (31 ms against 42 ms, 500k rows),
    # and a dictionary's only by their indices
    kept = plain_strings(base.select(output_columns).take(np.flatnonzero(keeps)), output_schema)
    return pa.concat_tables([kept, log_winners.select(output_columns)])


def _first_row_of_each_key(rows: Positions, hits: Positions) -> tuple[Positions, Positions]:
    """Of the base rows whose key the log decided (``rows``, each with ``hits``, its key's index among the
    decided keys), those that meet the log: of a key the base file holds twice (an ``insert`` skips the index)
    its first row only; the others pass as they are (Hudi's reader takes a key's log record out of its buffer
    once merged)."""
    order = np.lexsort((rows, hits))
    rows, hits = rows[order], hits[order]
    first = np.ones(len(hits), dtype=bool)
    first[1:] = hits[1:] != hits[:-1]
    return rows[first], hits[first]


@dataclass
class _PartialState:
    """One key's record while its log is folded: where each column's value comes from."""

    sources: list[int | None]  # per output column, the row holding its value (None: null)
    ordering: object
    deleted: bool = False
    delete_ordering: object = None


def merge_slice_partial(
    base: pa.Table | None,
    logs: LogRecords,
    *,
    event_time_ordering: bool = True,
    nulls_keep_older: bool = True,
) -> pa.Table:
    """The merged records of a file slice where a record may not set every column: under partial update
    mode ``IGNORE_DEFAULTS`` (version 9; for nullable fields, whose default is null; ``nulls_keep_older``)
    a newer record's null field keeps the older value, and a record of a partial-update log block
    (``IS_PARTIAL``, MERGE INTO's partial SET) sets only its block's columns (``logs.partial_blocks``).

    A key's log records fold in arrival order: of the current record and the next, the one with
    the greater ordering value wins (the next on a tie, or always under commit-time ordering) and
    each column it does not set takes the other's value (Hudi's ``partialMerge``: a stale partial
    update loses whole to a complete record); a record after a natural delete replaces it, one after
    an ordered delete unless the delete's ordering value is greater; a delete replaces the current
    record unless that record's ordering value is greater, and never a natural delete. The folded record
    then meets the base record the same way. Meta columns, set by every record, come from the winner.

    A sequential fold in Python over row indices (values stay in Arrow): partial updates do not
    commute, so the vectorised last-writer-wins of :func:`merge_slice` does not apply.
    """
    base, logs = (comparable_orderings if event_time_ordering else commit_time_orderings)(base, logs)
    data, deletes = logs.data, logs.deletes
    helper = [KEY, ORD, SEQ, KIND]
    output_columns = [c for c in data.column_names if c not in helper]
    rows = data.select(output_columns)
    base_offset = rows.num_rows
    if base is not None and base.num_rows:
        rows = pa.concat_tables([rows, plain_strings(base.select(output_columns), rows.schema).cast(rows.schema)])
    valid = [rows[c].is_valid().to_pylist() if nulls_keep_older else [True] * rows.num_rows for c in output_columns]
    if logs.partial_blocks:  # a partial block's records do not set the columns its schema lacks
        seqs = data[SEQ].to_pylist()
        for i, column in enumerate(output_columns):
            for row, seq in enumerate(seqs):
                if any(first <= seq < end and column in absent for first, end, absent in logs.partial_blocks):
                    valid[i][row] = False

    def newer_wins(current: object, incoming: object) -> bool:
        if not event_time_ordering or current is None or incoming is None:
            return True
        return not current > incoming  # type: ignore[operator]

    def fill(winner: list[int | None], loser: list[int | None]) -> list[int | None]:
        return [w if w is not None and valid[i][w] else loser[i] for i, w in enumerate(winner)]

    events: list[tuple[str, int, int, object, bool]] = [  # key, seq, row (-1: a delete), ordering, is delete
        (k, q, r, o, False) for r, (k, q, o) in enumerate(zip(
            data[KEY].to_pylist(), data[SEQ].to_pylist(), data[ORD].to_pylist(), strict=True))
    ] + [(k, q, -1, o, True) for k, q, o in zip(
        deletes[KEY].to_pylist(), deletes[SEQ].to_pylist(), deletes[ORD].to_pylist(), strict=True)]
    events.sort(key=lambda e: (e[0], e[1]))
    folded: dict[str, _PartialState] = {}
    for key, _, row, ordering, is_delete in events:
        state = folded.get(key)
        if state is not None and state.deleted and state.delete_ordering is not None and ordering is not None \
                and event_time_ordering and state.delete_ordering > ordering:  # type: ignore[operator]
            continue  # an ordered delete keeps off what is older than it (deltaMergeDeleteRecord)
        if is_delete:
            if state is not None and not state.deleted and not newer_wins(state.ordering, ordering):
                continue  # an older delete loses to the current record
            if state is not None and state.deleted and state.delete_ordering is None:
                continue  # a natural delete stays one until a record follows it
            folded[key] = _PartialState([None] * len(output_columns), None, True, ordering)
            continue
        incoming = _PartialState([row] * len(output_columns), ordering)
        if state is None or state.deleted:
            folded[key] = incoming
        elif newer_wins(state.ordering, ordering):
            folded[key] = _PartialState(fill(incoming.sources, state.sources), ordering)
        else:
            folded[key] = _PartialState(fill(state.sources, incoming.sources), state.ordering)

    chosen: list[list[int | None]] = []
    base_keys = base[KEY].to_pylist() if base is not None and base.num_rows else []
    base_ords = base[ORD].to_pylist() if base is not None and base.num_rows else []
    for i, key in enumerate(base_keys):
        base_row = base_offset + i
        base_sources: list[int | None] = [base_row] * len(output_columns)
        state = folded.pop(key, None)
        if state is None:
            chosen.append(base_sources)
        elif state.deleted:
            if state.delete_ordering is not None and not newer_wins(base_ords[i], state.delete_ordering):
                chosen.append(base_sources)  # a delete older than the base record
        elif newer_wins(base_ords[i], state.ordering):
            chosen.append(fill(state.sources, base_sources))
        else:
            chosen.append(fill(base_sources, state.sources))
    chosen += [state.sources for state in folded.values() if not state.deleted]
    columns = [rows[c].take(pa.array([r[i] for r in chosen], pa.int64())) for i, c in enumerate(output_columns)]
    return pa.Table.from_arrays(columns, schema=rows.schema)
