"""What the differential tester draws: a table's shape, its history and the requests made of it.

Every model is a frozen dataclass whose ``repr`` is the Python that builds it, so a failing scenario
printed by Hypothesis (shrunk) is a runnable reproduction: ``run_scenario(spark, plain_spark, path, <it>)``.
The strategies keep to what Hudi itself accepts (a key keeps its partition: the indexes drawn are not
global; a record index needs the metadata table; table version 6 merges by payload class).
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from hudi_connect.core.format.expressions import Expression, col

PartitionType = Literal["string", "int", "long", "float", "double", "date", "boolean", "none"]
OrderingType = Literal["int", "long", "double", "date", "string"]
ZONES = (None, "America/Los_Angeles", "Asia/Kolkata")  # the client's zone (None: the process's own, UTC in CI)
# the reading sessions' spark.sql.session.timeZone (None: the server's own, UTC in CI); instants stay the writer's
SESSION_ZONES = (None, "Asia/Kolkata", "America/Los_Angeles")
# a double ordering field's drawn ``ts`` -1 and -2 stand for NaN and -0.0 (a repr that is Python), None for null
ORDERING_SPECIALS: dict[int, float] = {-1: float("nan"), -2: -0.0}


def ordering_value(ordering_type: OrderingType, ts: int | None) -> Any:
    """A record's ordering value of the shape's type, from its drawn ``ts``."""
    if ts is None:
        return None
    if ordering_type == "double":
        return ORDERING_SPECIALS.get(ts, float(ts))
    if ordering_type == "date":
        return dt.date(2024, 1, 1) + dt.timedelta(days=ts)
    if ordering_type == "string":
        return str(ts)  # compared as text: "10" before "9", as Java's String.compareTo
    return ts


@dataclass(frozen=True)
class Shape:
    """A table's configuration, as a Hudi user sets it through the datasource."""

    table_type: Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
    version: Literal[6, 8, 9]
    partition_type: PartitionType
    hive_style: bool
    url_encode: bool
    ordering_type: OrderingType
    merge: Literal["event_time", "commit_time"]
    index: Literal["BLOOM", "SIMPLE", "BUCKET", "RECORD_INDEX"]
    metadata: bool
    column_stats: bool
    # simple: the partition column; complex and custom: nested paths part/region; timestamp: days of ``ms``
    key_generator: Literal["simple", "complex", "custom", "timestamp"] = "simple"
    cdc: Literal["off", "OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"] = "off"
    archival: bool = False  # Hudi's smallest archival window: earlier commits move to the archived timeline
    ordering_fields: Literal[1, 2] = 1  # 2: ordered by ``ts`` then the int ``ts2`` (Hudi compares field by field)
    # MOR: Hudi's log compaction after every write, where a file slice has two log blocks or more
    log_compaction: bool = False
    log_format: Literal["avro", "parquet"] = "avro"  # MOR: the log's data blocks (hoodie.logfile.data.block.format)

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def partition_columns(self) -> tuple[str, ...]:
        if self.partition_type == "none":
            return ()
        return {"simple": ("part",), "complex": ("part", "region"), "custom": ("part", "region"),
                "timestamp": ("ms",)}[self.key_generator]


@dataclass(frozen=True)
class Record:
    """One row: ``key`` is the record key, ``part`` the partition column's value, ``ts`` the ordering value,
    ``t`` a timestamp (minutes after 2024-01-01T00:00Z), ``v`` and ``n`` plain data, ``ts2`` the second
    ordering field's value where the shape has two."""

    key: int
    part: Any
    ts: int | None  # see ordering_value()
    t: int
    v: str
    n: int | None
    ts2: int | None = 0  # the second ordering field's value (shapes ordered by two fields)


@dataclass(frozen=True)
class Write:
    """A write through Hudi's datasource: ``soft_delete`` upserts the records with ``_hoodie_is_deleted``,
    ``delete_partition`` drops the partitions the records name, ``bootstrap`` (a first step) writes the records
    as a plain Parquet folder (hive-style partitions) and makes the table of it by a metadata-only bootstrap
    (``full_bootstrap``: a full-record one, Hudi rewriting the folder's records into its own base files);
    ``fails``: the writer dies before its commit completes (the completed instant is removed; Hudi's next write
    rolls the commit back)."""

    operation: Literal["insert", "upsert", "delete", "soft_delete", "insert_overwrite", "delete_partition",
                       "bootstrap", "full_bootstrap"]
    records: tuple[Record, ...]
    fails: bool = False


@dataclass(frozen=True)
class Service:
    """A table service run through Hudi's procedures; ``schedule_compaction`` plans a compaction and leaves it
    pending, so that later writes land in the new file slices it opens."""

    kind: Literal["compact", "clean", "cluster", "schedule_compaction"]


@dataclass(frozen=True)
class Concurrent:
    """Writes by writers of their own (sessions of one server) at once, in Hudi's multi-writer mode as
    ``HudiTable`` writes (optimistic concurrency control, non-blocking on MOR with a bucket index): any of them
    may be aborted by a conflict; the table's history is what committed."""

    writes: tuple[Write, ...]


Step = Write | Service | Concurrent
Recipe = tuple[Any, ...]  # a predicate as a user writes it (see predicates())


@dataclass(frozen=True)
class Request:
    """A read made after a step, ours against Hudi's: ``commit`` and ``begin`` index the commits so far
    (negative from the end), ``predicate`` prunes ours and filters both."""

    kind: Literal["snapshot", "read_optimized", "as_of", "incremental", "changes"]  # changes: CDC tables
    predicate: Recipe | None
    commit: int = -1
    begin: int = 0
    zone: str | None = None
    spelling: Literal["ours", "column", "sql"] = "ours"  # how the user hands ours the predicate
    session_zone: str | None = None  # the reading sessions' time zone (SESSION_ZONES)
    by_moment: bool = False  # as_of and incremental given as datetimes (Hudi's: the timeline's wall-clock text)


@dataclass(frozen=True)
class Scenario:
    shape: Shape
    steps: tuple[Step, ...]
    requests: tuple[tuple[Request, ...], ...]  # after each step


# --- strategies ---------------------------------------------------------------------------------------------

PARTITION_VALUES: dict[str, tuple[Any, ...]] = {
    "string": ("a", "b", "", None, "x/y", "c d", "5"),
    "int": (2023, 2024, 5, None),
    "long": (2**33, 7, None),
    "float": (0.1, 0.4, 0.7, None),  # Hudi's path holds Float.toString; Spark reads the float 0.1f, not 0.1
    "double": (0.1, 2.5, -1.25, None),
    "date": (dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2023, 12, 31), None),
    "boolean": (True, False, None),
    "none": (None,),
}
ORDERING_LITERALS: dict[str, tuple[Any, ...]] = {
    "int": (5, 20, "20", 20.5), "long": (5, 20, "20", 20.5), "double": (5, 20.5, "20", -0.0),
    "date": (dt.date(2024, 1, 6), "2024-01-21"), "string": ("20", "5", 5),
}
MS_2024 = 1_704_067_200_000  # 2024-01-01T00:00Z in epoch milliseconds: the ``ms`` column is ``t`` so
# literals a user writes against each partition type, mismatched types among them
PARTITION_LITERALS: dict[str, tuple[Any, ...]] = {
    "string": ("a", "b", "", "x/y", 5, "5", "c d", 10**19),
    "int": (2024, "2024", 5, "5", 2024.0, " 2024", "2024.5", 10**19),
    "long": (2**33, str(2**33), 7, "7", 10**19),
    "float": (0.1, 0.4, 0.7, "0.1", 1, 0.10000000149011612),
    "double": (0.1, 2.5, "2.5", -1.25, 2, 10**19),
    "date": (dt.date(2024, 1, 1), "2024-01-01", "2024-1-2", "2024", dt.datetime(2024, 1, 1, 12), "2023-12-31 08:00"),
    "boolean": (True, False, "true", "f"),
    "none": (),
}


# Features a run can focus on (``--focus``): every scenario drawn then has each of them, where Hudi writes it
FEATURES = ("mor", "log_compaction", "bootstrap", "ordering_fields", "parquet_logs")


def features_of(scenario: Scenario) -> tuple[str, ...]:
    """The features of :data:`FEATURES` a scenario has, as its report counts them: MOR, log compaction, Parquet
    log blocks, a metadata-only or full-record bootstrap as its first step, two ordering fields (on COW or MOR)."""
    shape, first = scenario.shape, scenario.steps[0]
    found = ["MOR"] if shape.is_mor else []
    if shape.log_compaction:
        found.append("log compaction")
    if shape.log_format == "parquet":
        found.append("Parquet log blocks")
    if isinstance(first, Write) and first.operation == "bootstrap":
        found.append("metadata-only bootstrap")
    elif isinstance(first, Write) and first.operation == "full_bootstrap":
        found.append("full-record bootstrap")
    if shape.ordering_fields == 2:
        found.append(f"two ordering fields, {'MOR' if shape.is_mor else 'COW'}")
    return tuple(found)


@st.composite
def shapes(draw: st.DrawFn, focus: frozenset[str] = frozenset()) -> Shape:
    """A table's shape; with ``focus`` (of :data:`FEATURES`), one that has them: MOR for ``mor``, log
    compaction and Parquet log blocks, table version 8 or 9 for two ordering fields, what Hudi's bootstrap needs
    for a bootstrap."""
    boot = "bootstrap" in focus
    table_type = "MERGE_ON_READ" if {"mor", "log_compaction", "parquet_logs"} & focus \
        else draw(st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]))
    version = draw(st.sampled_from([8, 9] if "ordering_fields" in focus else [6, 8, 9]))
    metadata = draw(st.booleans())
    index = draw(st.sampled_from(["BLOOM", "SIMPLE", *([] if boot else ["BUCKET"]),
                                  *(["RECORD_INDEX"] if metadata and not boot else [])]))
    partition_type = draw(st.sampled_from(list(PARTITION_VALUES)))
    partitioned = partition_type != "none"
    key_generators = ["simple", "complex"] if boot else ["simple", "complex", "custom", "timestamp"]
    return Shape(
        table_type=table_type, version=version, partition_type=partition_type,
        hive_style=boot or draw(st.booleans()),
        url_encode=not boot and partition_type == "string" and draw(st.booleans()),
        ordering_type=draw(st.sampled_from(["int", "int", "long", "double", "date", "string"])),
        merge=draw(st.sampled_from(["event_time", "commit_time"])), index=index, metadata=metadata,
        column_stats=not boot and metadata and draw(st.booleans()),
        key_generator=draw(st.sampled_from(key_generators)) if partitioned else "simple",
        cdc=draw(st.sampled_from(["off", "off", "OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"])),
        archival=draw(st.booleans()),
        # Hudi orders by several fields from table version 8 (its ordering fields; v6 merges by payload)
        ordering_fields=(2 if "ordering_fields" in focus else 1 if boot else draw(st.sampled_from([1, 1, 2])))
        if version != 6 else 1,
        log_compaction=table_type == "MERGE_ON_READ" and ("log_compaction" in focus or draw(st.booleans())),
        log_format="parquet" if "parquet_logs" in focus else draw(st.sampled_from(["avro", "parquet"]))
        if table_type == "MERGE_ON_READ" else "avro",
    )


KEYS = 8
# partition values no bootstrap is drawn with: Hudi bootstraps hive-style folders of plain values (no null, empty,
# slash or space)
NOT_BOOTSTRAPPED = (None, "", "x/y", "c d")


@st.composite
def scenarios(draw: st.DrawFn, max_steps: int = 6, focus: frozenset[str] = frozenset()) -> Scenario:
    """A scenario: a table's shape, its steps and requests after each; with ``focus``, of a shape with those
    features and, for ``bootstrap``, a bootstrap first (of partition values a folder's paths hold). Focused on
    both a bootstrap and two ordering fields, which Hudi does not write together, a scenario has one of them."""
    if {"bootstrap", "ordering_fields"} <= focus:
        focus = focus - {draw(st.sampled_from(["bootstrap", "ordering_fields"]))}
    shape = draw(shapes(focus))
    values = PARTITION_VALUES[shape.partition_type]
    if "bootstrap" in focus and shape.partition_type != "none":
        values = tuple(v for v in values if v not in NOT_BOOTSTRAPPED)
    # each key keeps one partition value (none of the drawn indexes is global)
    parts = [draw(st.sampled_from(values)) for _ in range(KEYS)]

    # ordering values: mostly plain, some null, equal, and for doubles NaN and -0.0 (ORDERING_SPECIALS)
    specials = [None, 0, *(ORDERING_SPECIALS if shape.ordering_type == "double" else [])]
    orderings = st.one_of(st.integers(0, 40), st.integers(0, 40), st.sampled_from(specials))

    # a second ordering field decides between equal first ones: few values, and nulls (Hudi's default 0)
    seconds = st.one_of(st.integers(0, 3), st.none()) if shape.ordering_fields == 2 else st.just(0)

    def records(keys: list[int]) -> tuple[Record, ...]:
        return tuple(Record(k, parts[k], draw(orderings), draw(st.integers(-600, 2000)),
                            draw(st.sampled_from(["p", "q", "r"])), draw(st.one_of(st.none(), st.integers(0, 9))),
                            draw(seconds))
                     for k in keys)

    first_keys = sorted(set(draw(st.lists(st.integers(0, KEYS - 1), min_size=2, max_size=6))))
    # a table made of a Parquet folder by Hudi's bootstrap, where Hudi bootstraps (hive-style folders of plain
    # values, an index that keeps the source's file ids, no column statistics)
    # (and of one ordering field: Hudi 1.2's bootstrap fails on several, "ts,ts2 field not found in record")
    bootstraps = shape.ordering_fields == 1 and shape.hive_style and not shape.url_encode \
        and shape.key_generator in ("simple", "complex") \
        and shape.index in ("BLOOM", "SIMPLE") and not shape.column_stats \
        and (shape.partition_type == "none" or all(parts[k] not in NOT_BOOTSTRAPPED for k in first_keys))
    first = Write(draw(st.sampled_from(["bootstrap", "full_bootstrap"]))
                  if bootstraps and ("bootstrap" in focus or draw(st.booleans())) else "insert", records(first_keys))
    steps: list[Step] = [first]
    for _ in range(draw(st.integers(1, max_steps - 1))):
        # no clustering on a bucket-indexed table: its new file groups are not bucket numbers, and Hudi's next
        # write fails on them (NumberFormatException in BucketIdentifier; the runs of seeds 73000 and 73100)
        kinds = ["upsert", "upsert", "delete", "soft_delete", "insert", "insert_overwrite", "clean",
                 *(["cluster"] if shape.index != "BUCKET" else []), "concurrent",
                 *(["compact", "schedule_compaction"] if shape.is_mor else []),
                 *(["delete_partition"] if shape.partition_columns else [])]
        kind = draw(st.sampled_from(kinds))
        if kind in ("clean", "cluster", "compact", "schedule_compaction"):
            steps.append(Service(kind))
        elif kind == "concurrent":  # two writers' upserts, inserts or deletes meeting in the table
            writes = tuple(Write(draw(st.sampled_from(["upsert", "upsert", "insert", "delete"])),
                                 records(sorted(set(draw(st.lists(st.integers(0, KEYS - 1), min_size=1,
                                                                  max_size=4)))))) for _ in range(2))
            steps.append(Concurrent(writes))
        else:
            keys = sorted(set(draw(st.lists(st.integers(0, KEYS - 1), min_size=1, max_size=4))))
            fails = draw(st.integers(0, 7)) == 0  # Hudi's next write, if one follows, rolls it back
            steps.append(Write(kind, records(keys), fails))
    # Hudi's own read shows a string partition's '' as NULL yet matches it with `= ''` (and NULLs too): with
    # an '' written, Hudi is no oracle for predicates on the partition column (README, "Hudi's own bugs")
    partition_predicates = "" not in parts
    requests = tuple(tuple(draw(st.lists(request_for(shape, i + 1, partition_predicates), min_size=1, max_size=2)))
                     for i in range(len(steps)))
    return Scenario(shape, tuple(steps), requests)


@st.composite
def request_for(draw: st.DrawFn, shape: Shape, steps_so_far: int, partition_predicates: bool = True) -> Request:
    kind = draw(st.sampled_from(["snapshot", "as_of", "incremental", *(["read_optimized"] if shape.is_mor else []),
                                 *(["changes", "changes"] if shape.cdc != "off" else [])]))
    # Hudi's incremental read shows URL-encoded partition values as encoded and filters them so: no oracle there
    on_partition = partition_predicates and not (shape.url_encode and kind == "incremental")
    return Request(
        kind, None if kind == "changes" else draw(st.one_of(st.none(), predicates(shape, on_partition))),
        commit=draw(st.integers(-steps_so_far, -1)), begin=draw(st.integers(0, steps_so_far)),
        zone=draw(st.sampled_from(ZONES)), spelling=draw(st.sampled_from(["ours", "column", "sql"])),
        session_zone=draw(st.sampled_from(SESSION_ZONES)), by_moment=draw(st.booleans()))


def predicates(shape: Shape, on_partition: bool = True) -> st.SearchStrategy[Recipe]:
    """Predicates as users write them, as recipes (plain tuples): ``("cmp", op, column, literal)``,
    ``("in", column, literals)``, ``("null", column)``, ``("and"|"or", a, b)``, ``("not", a)``. A recipe
    becomes ours (:func:`ours`) and pyspark's own column (:func:`pyspark_column`) only when the request runs,
    in the request's time zone, so a naive ``datetime`` is read as the client there reads it."""
    ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])

    def compare(column: str, values: tuple[Any, ...]) -> st.SearchStrategy[Recipe]:
        return st.tuples(st.just("cmp"), ops, st.just(column), st.sampled_from(values))

    leaves: list[st.SearchStrategy[Recipe]] = [
        compare("ts", ORDERING_LITERALS[shape.ordering_type]),
        compare("t", (dt.datetime(2024, 1, 1, 5), dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC), dt.date(2024, 1, 1),
                      dt.datetime(2024, 1, 1, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-3))))),
        compare("n", (3, "3", 4.5)),
        compare("region", ("e", "w", 1)),
        st.just(("null", "n")),
        st.tuples(st.just("in"), st.just("v"), st.lists(st.sampled_from(["p", "q", None]), min_size=1, max_size=2)
                  .map(tuple)),
    ]
    if shape.key_generator != "timestamp":
        # Hudi's read of a timestamp key generator's partition column prunes by the path's formatted text
        # (2024/01/01), not the column's values, and so drops matching rows: no oracle there (README)
        leaves.append(compare("ms", (MS_2024, str(MS_2024), MS_2024 + 86_400_000)))
    literals = PARTITION_LITERALS[shape.partition_type]
    if literals and on_partition:
        leaves += [
            compare("part", literals),
            st.tuples(st.just("in"), st.just("part"), st.lists(st.sampled_from(literals), min_size=1, max_size=2)
                      .map(tuple)),
            st.just(("null", "part")),
        ]
    return st.recursive(st.one_of(leaves), lambda inner: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), inner, inner), st.tuples(st.just("not"), inner)), max_leaves=3)


def ours(recipe: Recipe) -> Expression:
    """The recipe as our expression tree."""
    kind = recipe[0]
    if kind == "cmp":
        return col(recipe[2])._compare(recipe[1], recipe[3])
    if kind == "in":
        return col(recipe[1]).isin(*recipe[2])
    if kind == "null":
        return col(recipe[1]).is_null()
    if kind == "not":
        return ~ours(recipe[1])
    left, right = ours(recipe[1]), ours(recipe[2])
    return left & right if kind == "and" else left | right


def sql_text(recipe: Recipe) -> str:
    """The recipe as the SQL a user writes (``df.where("...")``)."""
    kind = recipe[0]
    if kind == "cmp":
        return f"{recipe[2]} {recipe[1]} {sql_literal(recipe[3])}"
    if kind == "in":
        return f"{recipe[1]} IN ({', '.join(sql_literal(v) for v in recipe[2])})"
    if kind == "null":
        return f"{recipe[1]} IS NULL"
    if kind == "not":
        return f"NOT ({sql_text(recipe[1])})"
    return f"({sql_text(recipe[1])}) {kind.upper()} ({sql_text(recipe[2])})"


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):  # beyond bigint, Spark's parser types the digits a decimal
        return f"{value}L" if 2**31 <= abs(value) < 2**63 else str(value)
    if isinstance(value, float):
        return f"{value!r}D"
    if isinstance(value, decimal.Decimal):
        return f"{value}BD"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):  # naive: the session's zone reads it (not the client's, as pyspark does)
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise TypeError(f"no SQL literal for {value!r}")
