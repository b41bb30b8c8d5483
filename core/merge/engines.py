"""Vectorized merge engines: ``deduplicate``, ``first-row``, ``partial-update``, ``aggregation``.

Every engine takes a table sorted by key, then by sequence (oldest first), carrying
``_SEQUENCE_NUMBER`` (int64) and ``_VALUE_KIND`` (int8: 0 +I, 1 -U, 2 +U, 3 -D), and returns one
row per key, in key order, with the same columns. ``_VALUE_KIND`` of a result row is the kind of
the merged record (Paimon's ``MergeFunction.getResult``); ``_SEQUENCE_NUMBER`` is the sequence
number Paimon gives it. A merged -D row is dropped unless the spec says ``keep_deletes`` (a
compaction whose output is not the oldest level must keep deletes: older rows may lie below).

Records are grouped by ``key_columns``, the trimmed primary key (Paimon's ``KeyValue`` key: the
primary key minus the partition fields). The key columns and ``partition_columns`` are never
merged as values: a merged row takes them from the key's newest record (Paimon gives every
primary-key field, partition fields included, its ``FieldPrimaryKeyAgg``; a partition field
outside the primary key holds one value throughout a bucket's merge, and readers see the
partition's value, so it is carried the same way).

The work is done per column and per key-group boundary with numpy / Arrow compute; no Python
loop visits rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimonflow.core.errors import DataError, InvalidOptionError, SchemaError, UnsupportedError
from paimonflow.core.merge.aggregates import (
    FieldAggregate,
    Groups,
    aggregate_field,
    aggregate_subset,
    require_retractable,
    take_or_null,
)

from ..data import data_file as df
from ..data.keys import last_per_key

_INSERT, _UPDATE_BEFORE, _UPDATE_AFTER, _DELETE = (
    df.ROW_KIND_INSERT, df.ROW_KIND_UPDATE_BEFORE, df.ROW_KIND_UPDATE_AFTER, df.ROW_KIND_DELETE)
_SYSTEM = (df.SEQUENCE_NUMBER, df.VALUE_KIND)

PARTIAL_UPDATE_DELETE_MESSAGE = (
    "By default, partial-update can not accept delete records (-U/-D); choose one of: "
    "1. 'ignore-delete'='true' to ignore delete records; "
    "2. 'partial-update.remove-record-on-delete'='true' to remove the whole row on a delete record; "
    "3. 'sequence-group's to retract partial columns")
FIRST_ROW_DELETE_MESSAGE = (
    "By default, the first-row merge engine can not accept DELETE/UPDATE_BEFORE records; "
    "set 'ignore-delete'='true' to ignore them")


# -- specs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeduplicateSpec:
    """``merge-engine=deduplicate``: the newest record of a key wins, a -D newest removes the key.

    ``ignore_delete`` (``ignore-delete``): -U/-D records are skipped, as if never written.
    """

    ignore_delete: bool = False
    keep_deletes: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstRowSpec:
    """``merge-engine=first-row``: the oldest +I/+U record of a key wins; later ones are ignored.

    -U/-D records raise :class:`DataError` unless ``ignore_delete``, which skips them (Paimon's
    ``FirstRowMergeFunction``). The result never holds a -D.
    """

    ignore_delete: bool = False
    keep_deletes: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SequenceGroup:
    """``fields.<s1>,<s2>.sequence-group=<f1>,<f2>``: ``fields`` take their values (nulls
    included) from the record with the greatest ``sequence_fields`` tuple (compared in order,
    null smallest; on a tie the newer record wins); records whose sequence fields are all null
    do not touch the group."""

    sequence_fields: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialUpdateSpec:
    """``merge-engine=partial-update``.

    Without sequence groups every value field takes the newest non-null value of the key. With
    ``remove_record_on_delete`` (``partial-update.remove-record-on-delete``) a -D forgets what came
    before it (the key is deleted unless a later +I/+U follows) and -U records are skipped; with
    ``ignore_delete`` -U/-D are skipped; with sequence groups they retract the groups they win
    (see :func:`partial_update`); otherwise a -U/-D raises :class:`DataError`.
    ``default_values`` (``fields.<f>.default-value``, as strings cast to the field's type) fill
    fields no record set. The merged row is +I, or -D when no +I/+U follows the last -D; its
    sequence number is the newest record's.

    ``aggregates`` (``fields.<f>.aggregate-function``) fold a field of a sequence group over the
    records whose group sequence is not all null, as Paimon does: ``sum``, ``product``, ``max``,
    ``min``, ``bool_and``, ``bool_or`` (order-free), and ``first_value`` for a one-field sequence
    group (a record older than the group's newest sequence so far replaces the value, so the
    value of the oldest-sequence record wins). Other functions raise :class:`UnsupportedError`.
    """

    ignore_delete: bool = False
    keep_deletes: bool = False
    remove_record_on_delete: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    default_values: Mapping[str, str] = field(default_factory=dict)
    aggregates: Mapping[str, FieldAggregate] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregationSpec:
    """``merge-engine=aggregation``: each value field folds all records of the key with its
    function (``aggregates``, else ``default_function`` = ``fields.default-aggregate-function``,
    Paimon's default ``last_non_null_value``). -U/-D records retract (see
    :mod:`paimonflow.core.merge.aggregates`); primary-key and partition fields are left as they
    are (see :func:`merge`). The merged row is +I (or -D, under ``remove_record_on_delete``) with
    the newest record's sequence number. ``ignore_delete`` skips -U/-D records altogether.

    ``remove_record_on_delete`` (``aggregation.remove-record-on-delete``): a -D record is not
    retracted but resets the key to its own values (Paimon's ``AggregateMergeFunction``), and a
    key whose newest record is such a -D merges to that -D record, so the key is removed.
    Records after the newest -D fold onto its values as onto an insert's; -U still retracts.
    (Java folds them onto the -D's values themselves: the same for every function except
    ``count``, which restarts at 1 here, and ``first_value``/``first_non_null_value``/``collect``
    with ``distinct``, whose Java state outlives the reset. Java's own answer depends on whether
    a compaction dropped the -D in between.)
    """

    aggregates: Mapping[str, FieldAggregate] = field(default_factory=dict)
    default_function: str = "last_non_null_value"
    ignore_delete: bool = False
    keep_deletes: bool = False
    remove_record_on_delete: bool = False


MergeSpec = DeduplicateSpec | FirstRowSpec | PartialUpdateSpec | AggregationSpec


def _bool_option(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = options.get(key)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidOptionError(key, value, "expected 'true' or 'false'")
    return lowered == "true"


_FIELD_AGGREGATE_SUFFIXES = ("ignore-retract", "list-agg-delimiter", "distinct", "nested-key", "count-limit")


def _field_aggregate(options: Mapping[str, str], name: str, function: str) -> FieldAggregate:
    """The aggregate of field ``name`` from its ``fields.<name>.*`` options; errors name the field."""
    prefix = f"fields.{name}"
    for unsupported in ("nested-key-null-strategy", "nested-sequence-field"):
        if f"{prefix}.{unsupported}" in options:
            raise UnsupportedError(f"option '{prefix}.{unsupported}' is not supported yet")
    nested_key = options.get(f"{prefix}.nested-key")
    count_limit = options.get(f"{prefix}.count-limit")
    limit: int | None = None
    if count_limit is not None:
        try:
            limit = int(count_limit.strip())
        except ValueError as exc:
            raise InvalidOptionError(f"{prefix}.count-limit", count_limit, "expected an integer") from exc
    if function == "listagg" and _bool_option(options, f"{prefix}.distinct"):
        raise UnsupportedError(f"option '{prefix}.distinct' of listagg is not supported yet")
    try:
        return FieldAggregate(
            function=function,
            ignore_retract=_bool_option(options, f"{prefix}.ignore-retract"),
            delimiter=options.get(f"{prefix}.list-agg-delimiter", ","),
            distinct=_bool_option(options, f"{prefix}.distinct"),
            nested_key=tuple(k.strip() for k in nested_key.split(",") if k.strip()) if nested_key else (),
            count_limit=limit)
    except InvalidOptionError as exc:
        raise InvalidOptionError(f"{prefix}.{exc.key}", exc.value, exc.reason) from exc


def spec_from_options(options: Mapping[str, str], *, keep_deletes: bool = False) -> MergeSpec:
    """The merge spec of a table's options (``merge-engine`` and its ``fields.*`` options).

    Raises :class:`InvalidOptionError` for an unknown engine or malformed value and
    :class:`UnsupportedError` for options this module does not implement yet.
    """
    engine = options.get("merge-engine", "deduplicate")
    ignore_delete = _bool_option(options, "ignore-delete") or any(
        _bool_option(options, f"{prefix}.ignore-delete") for prefix in ("deduplicate", "first-row", "partial-update"))
    if engine == "deduplicate":
        return DeduplicateSpec(ignore_delete=ignore_delete, keep_deletes=keep_deletes)
    if engine == "first-row":
        return FirstRowSpec(ignore_delete=ignore_delete, keep_deletes=keep_deletes)
    field_options = {k[len("fields."):]: v for k, v in options.items() if k.startswith("fields.")}
    if engine == "partial-update":
        groups, defaults, partial_aggregates = [], {}, {}
        for key, value in field_options.items():
            name, _, suffix = key.rpartition(".")
            if suffix == "sequence-group":
                groups.append(SequenceGroup(sequence_fields=tuple(s.strip() for s in name.split(",")),
                                            fields=tuple(f.strip() for f in value.split(",") if f.strip())))
            elif suffix == "default-value":
                defaults[name] = value
            elif suffix == "aggregate-function" and name:
                partial_aggregates[name] = _field_aggregate(options, name, value.strip())
            elif suffix == "ignore-retract" or key == "default-aggregate-function":
                raise UnsupportedError(f"partial-update option 'fields.{key}' is not supported yet")
        return PartialUpdateSpec(
            ignore_delete=ignore_delete, keep_deletes=keep_deletes,
            remove_record_on_delete=_bool_option(options, "partial-update.remove-record-on-delete"),
            sequence_groups=tuple(groups), default_values=defaults, aggregates=partial_aggregates)
    if engine == "aggregation":
        functions: dict[str, str] = {}
        for key, value in field_options.items():
            name, _, suffix = key.rpartition(".")
            if suffix == "aggregate-function" and name:
                functions[name] = value.strip()
            elif suffix == "sequence-group":
                raise UnsupportedError(f"aggregation option 'fields.{key}' is not supported yet")
        default = field_options.get("default-aggregate-function", "last_non_null_value").strip()
        FieldAggregate(function=default)  # validates the name
        names = set(functions) | {
            key.rpartition(".")[0] for key in field_options
            if key.endswith(tuple(f".{suffix}" for suffix in _FIELD_AGGREGATE_SUFFIXES))}
        aggregates = {
            name: _field_aggregate(options, name, functions.get(name, default))
            for name in names if name}
        # Paimon aggregates no sequence field: each takes the newest value (last_value; a
        # retraction nulls it), whatever the default function (AggregateMergeFunction.Factory)
        for name in (options.get("sequence.field") or "").split(","):
            if name.strip():
                aggregates[name.strip()] = FieldAggregate(function="last_value")
        return AggregationSpec(aggregates=aggregates, default_function=default,
                               ignore_delete=ignore_delete, keep_deletes=keep_deletes,
                               remove_record_on_delete=_bool_option(options, "aggregation.remove-record-on-delete"))
    raise InvalidOptionError("merge-engine", engine, "expected deduplicate, partial-update, aggregation or first-row")


# -- engines -----------------------------------------------------------------------------------


def merge(table: pa.Table, key_columns: Sequence[str], spec: MergeSpec, *,
          partition_columns: Sequence[str] = ()) -> pa.Table:
    """Merge ``table`` (sorted by ``key_columns`` then ``_SEQUENCE_NUMBER``) with the engine
    ``spec`` names; one row per key, in key order, same columns.

    ``key_columns`` is the trimmed primary key; ``partition_columns`` the table's partition
    fields, which hold one value throughout ``table`` (a merge never spans partitions). Both are
    carried from the key's newest record, never merged (see the module docstring)."""
    key_columns = list(key_columns)
    partition_columns = [c for c in partition_columns if c not in key_columns]
    if isinstance(spec, DeduplicateSpec):
        return deduplicate(table, key_columns, spec)
    if isinstance(spec, FirstRowSpec):
        return first_row(table, key_columns, spec)
    if isinstance(spec, PartialUpdateSpec):
        return _reduce(table, key_columns, spec, partial_update, partition_columns)
    if isinstance(spec, AggregationSpec):
        return _reduce(table, key_columns, spec, aggregation, partition_columns)
    raise TypeError(f"not a merge spec: {spec!r}")


def _carried(table: pa.Table, key_columns: Sequence[str], partition_columns: Sequence[str]) -> frozenset[str]:
    """The columns a merged row takes from its key's newest record: the key, the partition
    fields (the primary-key fields Paimon never aggregates) and the system columns."""
    return frozenset({*key_columns, *partition_columns, *_SYSTEM}) & frozenset(table.column_names)


def _reduce(table: pa.Table, key_columns: list[str], spec, engine, partition_columns: Sequence[str]) -> pa.Table:
    """Paimon's ``ReducerMergeFunctionWrapper`` passes a key's lone record through unmerged.
    What matters is a lone retraction: it stays a -U/-D record (dropped by readers, kept in
    level-0 and intermediate files) so that it retracts from older files when they meet, instead
    of turning into an insert of an empty aggregate."""
    if table.num_rows == 0:
        return engine(table, key_columns, spec, partition_columns=partition_columns)
    groups = _groups(table, key_columns)
    single = groups.starts == groups.ends
    # A lone insert or update goes through the engine too: for every function the result is the
    # record itself, except that defaults fill its nulls and listagg/collect 'distinct' dedupe it.
    retract = _is_retract(_kinds(table))
    single &= retract[groups.starts]
    if not single.any():
        return engine(table, key_columns, spec, partition_columns=partition_columns)
    single_rows = groups.starts[single]
    # the engine's checks (options, columns, retractions it cannot take) still apply to lone rows
    engine(table.take(pa.array(single_rows)), key_columns, spec, partition_columns=partition_columns)
    if spec.ignore_delete:  # a lone ignored retraction leaves nothing
        single_rows = single_rows[~retract[single_rows]]
    singles = table.take(pa.array(single_rows))
    if single.all():
        return _drop_deletes(singles, spec.keep_deletes)
    multi_rows = ~single[groups.ids]
    merged = engine(table.filter(pa.array(multi_rows)), key_columns, replace(spec, keep_deletes=True),
                    partition_columns=partition_columns)
    multi_firsts = groups.starts[~single]  # one merged row per multi-record key, in key order
    if spec.ignore_delete:  # ... except keys whose records are all ignored retractions
        multi_firsts = multi_firsts[groups.any(~retract)[~single]]
    combined = pa.concat_tables([merged.select(table.column_names).cast(table.schema), singles])
    order = np.argsort(np.concatenate([multi_firsts, single_rows]), kind="stable")
    return _drop_deletes(combined.take(pa.array(order)), spec.keep_deletes)


def _kinds(table: pa.Table) -> np.ndarray:
    missing = [c for c in _SYSTEM if c not in table.column_names]
    if missing:
        raise SchemaError(f"a table to merge needs the columns {missing}")
    kinds = table.column(df.VALUE_KIND).to_numpy()
    if kinds.size and (kinds.min() < _INSERT or kinds.max() > _DELETE):
        raise DataError(f"bad {df.VALUE_KIND} value: row kinds are 0..3")
    return kinds


def _is_retract(kinds: np.ndarray) -> np.ndarray:
    return (kinds == _UPDATE_BEFORE) | (kinds == _DELETE)


def _drop_retractions(table: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    keep = ~_is_retract(kinds)
    if keep.all():
        return table, kinds
    return table.filter(pa.array(keep)), kinds[keep]


def _groups(table: pa.Table, key_columns: list[str]) -> Groups:
    return Groups.from_last_mask(last_per_key(table, key_columns))


def _drop_deletes(table: pa.Table, keep_deletes: bool) -> pa.Table:
    if keep_deletes or table.num_rows == 0:
        return table
    kinds = table.column(df.VALUE_KIND).to_numpy()
    return table.filter(pa.array(~_is_retract(kinds)))


def deduplicate(table: pa.Table, key_columns: list[str], spec: DeduplicateSpec) -> pa.Table:
    """Paimon's ``DeduplicateMergeFunction``: per key the newest record, with its own kind and
    sequence number; a key whose newest record is -U/-D is dropped (kept when
    ``spec.keep_deletes``). With ``ignore_delete`` -U/-D records are skipped first."""
    kinds = _kinds(table)
    if spec.ignore_delete:
        table, kinds = _drop_retractions(table, kinds)
    if table.num_rows == 0:
        return table
    merged = table.filter(pa.array(last_per_key(table, key_columns)))
    return _drop_deletes(merged, spec.keep_deletes)


def first_row(table: pa.Table, key_columns: list[str], spec: FirstRowSpec) -> pa.Table:
    """Paimon's ``FirstRowMergeFunction``: per key the oldest +I/+U record, with its own kind and
    sequence number. Raises :class:`DataError` on a -U/-D record unless ``ignore_delete``."""
    kinds = _kinds(table)
    if _is_retract(kinds).any():
        if not spec.ignore_delete:
            raise DataError(FIRST_ROW_DELETE_MESSAGE)
        table, kinds = _drop_retractions(table, kinds)
    if table.num_rows == 0:
        return table
    return table.take(pa.array(_groups(table, key_columns).starts))


def partial_update(table: pa.Table, key_columns: list[str], spec: PartialUpdateSpec, *,
                   partition_columns: Sequence[str] = ()) -> pa.Table:
    """Paimon's ``PartialUpdateMergeFunction`` (see :class:`PartialUpdateSpec`); the key and
    ``partition_columns`` are carried from the newest record (see :func:`merge`).

    With sequence groups a -U/-D takes part in its groups like any record: when it wins a group
    (greatest group sequence, ties to the newer record) the group's sequence fields take its
    values and the group's other fields become null; fields outside groups ignore it. A key with
    no +I/+U record merges to -D.

    Keys whose records were all skipped by ``ignore_delete`` produce no row. Value fields of a
    merged -D row are null (its key and partition fields are not). Raises :class:`DataError` for
    -U/-D records no option allows, :class:`InvalidOptionError` for sequence groups together with
    ``remove_record_on_delete`` (as Paimon), :class:`UnsupportedError` for a retraction meeting an
    aggregated field.
    """
    kinds = _kinds(table)
    if spec.sequence_groups and spec.remove_record_on_delete:
        raise InvalidOptionError("partial-update.remove-record-on-delete", "true",
                                 "sequence groups and remove-record-on-delete may not be enabled together")
    retract = _is_retract(kinds)
    if retract.any():
        if spec.ignore_delete:
            table, kinds = _drop_retractions(table, kinds)
            retract = np.zeros(kinds.size, dtype=bool)
        elif spec.sequence_groups:
            if spec.aggregates:
                raise UnsupportedError("partial-update retraction of aggregated fields is not supported yet")
        elif not spec.remove_record_on_delete:
            raise DataError(PARTIAL_UPDATE_DELETE_MESSAGE)
    if table.num_rows == 0:
        return table
    carried = _carried(table, key_columns, partition_columns)
    _check_columns(table, carried, spec)
    groups = _groups(table, key_columns)
    n = table.num_rows
    positions = np.arange(n)
    in_segment = np.ones(n, dtype=bool)
    deleted_from = None  # per key: the -D record a removed row keeps its values from
    if retract.any() and spec.remove_record_on_delete:
        last_delete = groups.last_where(kinds == _DELETE)
        in_segment = positions >= np.maximum(groups.starts, last_delete + 1)[groups.ids]
    live = ~retract & in_segment
    inserted = groups.any(live)
    if retract.any() and spec.remove_record_on_delete:
        # Paimon's row of a removed key is the -D record's own values (initRow), its sequence
        # field included, so the -D still outranks older records it meets in a later merge
        deleted_from = np.where(~inserted & (last_delete >= 0), last_delete, -1)
        if not (deleted_from >= 0).any():
            deleted_from = None

    grouped: dict[str, np.ndarray] = {}
    sequence_names: set[str] = set()
    aggregated: dict[str, pa.Array | pa.ChunkedArray] = {}
    for group in spec.sequence_groups:
        # A retraction that wins its group sets the group's sequence fields and nulls its fields.
        winner = _sequence_group_winner(table, groups, in_segment, group.sequence_fields)
        retracted = np.zeros(winner.size, dtype=bool)
        retracted[winner >= 0] = retract[winner[winner >= 0]]
        for name in group.sequence_fields:
            grouped[name] = winner
            sequence_names.add(name)
        for name in group.fields:
            grouped[name] = np.where(retracted, -1, winner)
        for name in group.fields:
            if name in spec.aggregates:
                aggregated[name] = _group_aggregate(table, groups, live, group, name, spec.aggregates[name])

    columns = []
    for name in table.column_names:
        column = table.column(name)
        if name in carried:
            columns.append(column.take(pa.array(groups.ends)))
            continue
        if name in aggregated:
            merged = pc.if_else(pa.array(inserted), aggregated[name], pa.nulls(groups.count, column.type))
        else:
            source = grouped.get(name)
            if source is None:
                source = groups.last_where(live & pc.is_valid(column).to_numpy(zero_copy_only=False))
            # a merged -D keeps the sequence values of a winning retraction (as Java does), so it
            # still wins its group against older records it meets later
            merged = take_or_null(column, source if name in sequence_names else np.where(inserted, source, -1))
        default = spec.default_values.get(name)
        if default is not None:
            filled = pc.fill_null(merged, _default_scalar(name, default, column.type))
            merged = pc.if_else(pa.array(inserted), filled, merged)
        if deleted_from is not None:
            merged = pc.if_else(pa.array(deleted_from >= 0), take_or_null(column, deleted_from), merged)
        columns.append(merged)
    result = pa.Table.from_arrays(columns, schema=table.schema)
    kind = pa.array(np.where(inserted, _INSERT, _DELETE).astype(np.int8), pa.int8())
    result = result.set_column(result.schema.get_field_index(df.VALUE_KIND), result.schema.field(df.VALUE_KIND), kind)
    return _drop_deletes(result, spec.keep_deletes)


def _check_columns(table: pa.Table, carried: frozenset[str], spec: PartialUpdateSpec) -> None:
    names = set(table.column_names)
    seen: set[str] = set()
    for group in spec.sequence_groups:
        members = (*group.sequence_fields, *group.fields)
        for name in members:
            if name not in names or name in carried:
                raise SchemaError(f"sequence-group field {name!r} is not a value column of the table")
            if name in seen:
                raise SchemaError(f"field {name!r} belongs to more than one sequence group")
        seen.update(members)
    for name in spec.default_values:
        if name not in names:
            raise SchemaError(f"default-value field {name!r} is not a column of the table")
    grouped_fields = {name for group in spec.sequence_groups for name in group.fields}
    for name, aggregate in spec.aggregates.items():
        if name not in grouped_fields:
            raise InvalidOptionError(f"fields.{name}.aggregate-function", aggregate.function,
                                     "partial-update needs a sequence group for an aggregated field")
        if aggregate.function not in _PARTIAL_UPDATE_AGGREGATES:
            raise UnsupportedError(f"aggregate function {aggregate.function!r} inside partial-update "
                                   "is not supported yet")


_ORDER_FREE = frozenset({"sum", "product", "max", "min", "bool_and", "bool_or", "rbm32", "theta_sketch"})
_PARTIAL_UPDATE_AGGREGATES = _ORDER_FREE | {"first_value"}


def _group_aggregate(table: pa.Table, groups: Groups, live: np.ndarray, group: SequenceGroup, name: str,
                     aggregate: FieldAggregate) -> pa.Array | pa.ChunkedArray:
    """Per key, field ``name`` folded over the live records whose group sequence is not all null."""
    eligible = live.copy()
    any_valid = np.zeros(table.num_rows, dtype=bool)
    for sequence_field in group.sequence_fields:
        any_valid |= pc.is_valid(table.column(sequence_field)).to_numpy(zero_copy_only=False)
    eligible &= any_valid
    values = table.column(name).combine_chunks()
    if aggregate.function in _ORDER_FREE:
        return aggregate_subset(name, values, eligible, groups, aggregate)
    # first_value: a record whose sequence is below the group's greatest sequence seen so far
    # (an "old" record) replaces the value; with none, the first record's value stays.
    if len(group.sequence_fields) != 1:
        raise UnsupportedError("first_value inside partial-update needs a one-field sequence group")
    rows = np.flatnonzero(eligible)
    result = np.full(groups.count, -1, dtype=np.int64)
    if rows.size == 0:
        return take_or_null(values, result)
    ranks = pc.rank(table.column(group.sequence_fields[0]).take(pa.array(rows)), sort_keys="ascending",
                    tiebreaker="dense").to_numpy().astype(np.int64)
    row_groups = groups.ids[rows]
    span = int(ranks.max()) + 1
    running = np.maximum.accumulate(row_groups * span + ranks)  # later keys never look back
    before = np.full(rows.size, -1, dtype=np.int64)
    before[1:] = running[:-1] - row_groups[1:] * span
    old = ranks < before
    sub_groups = Groups.from_last_mask(np.r_[row_groups[1:] != row_groups[:-1], True])
    chosen = sub_groups.last_where(old)
    chosen = np.where(chosen >= 0, chosen, sub_groups.starts)
    result[row_groups[sub_groups.starts]] = rows[chosen]
    return take_or_null(values, result)


def _default_scalar(name: str, value: str, type_: pa.DataType) -> pa.Scalar:
    try:
        return pa.scalar(value).cast(type_)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidOptionError(f"fields.{name}.default-value", value, f"not a {type_} value") from exc


def _sequence_group_winner(table: pa.Table, groups: Groups, live: np.ndarray,
                           sequence_fields: tuple[str, ...]) -> np.ndarray:
    """Per key, the row whose sequence tuple is greatest (nulls smallest, ties to the newer row)
    among ``live`` rows with some non-null sequence field; -1 when there is none."""
    any_valid = np.zeros(table.num_rows, dtype=bool)
    for name in sequence_fields:
        any_valid |= pc.is_valid(table.column(name)).to_numpy(zero_copy_only=False)
    candidates = np.flatnonzero(live & any_valid)
    winner = np.full(groups.count, -1, dtype=np.int64)
    if candidates.size == 0:
        return winner
    index = pa.array(candidates)
    columns = {"g": pa.array(groups.ids[candidates])}
    columns |= {f"s{i}": table.column(name).take(index) for i, name in enumerate(sequence_fields)}
    columns["p"] = index
    sort_keys = [("g", "ascending"), *((f"s{i}", "ascending", "at_start") for i in range(len(sequence_fields))),
                 ("p", "ascending")]
    order = pc.sort_indices(pa.table(columns), sort_keys=sort_keys).to_numpy()
    ordered_groups = groups.ids[candidates][order]
    last = np.ones(order.size, dtype=bool)
    last[:-1] = ordered_groups[1:] != ordered_groups[:-1]
    winner[ordered_groups[last]] = candidates[order][last]
    return winner


def aggregation(table: pa.Table, key_columns: list[str], spec: AggregationSpec, *,
                partition_columns: Sequence[str] = ()) -> pa.Table:
    """Paimon's ``AggregateMergeFunction`` (see :class:`AggregationSpec`); the key and
    ``partition_columns`` are carried from the newest record (see :func:`merge`). Raises
    :class:`DataError` when a -U/-D record meets a function that cannot retract."""
    kinds = _kinds(table)
    if spec.ignore_delete:
        table, kinds = _drop_retractions(table, kinds)
    if table.num_rows == 0:
        return table
    unknown = set(spec.aggregates) - set(table.column_names)
    if unknown:
        raise SchemaError(f"aggregate functions given for unknown fields {sorted(unknown)}")
    default = FieldAggregate(function=spec.default_function)
    carried = _carried(table, key_columns, partition_columns)
    groups = _groups(table, key_columns)
    retract = _is_retract(kinds)
    removed = np.zeros(groups.count, dtype=bool)  # keys whose newest record is a removing -D
    if spec.remove_record_on_delete:
        deleted = kinds == _DELETE
        last_delete = groups.last_where(deleted)
        if (last_delete >= 0).any():
            # the newest -D resets its key: older records are forgotten and the -D starts the fold
            removed = last_delete == groups.ends
            keep = np.arange(table.num_rows) >= np.maximum(groups.starts, last_delete)[groups.ids]
            retract &= ~deleted
            forgotten = retract & ~keep  # -U records before the reset: retracted in Java all the same
            table, retract = table.filter(pa.array(keep)), retract[keep]
            groups = _groups(table, key_columns)
            if forgotten.any():
                for name in (n for n in table.column_names if n not in carried):
                    require_retractable(name, spec.aggregates.get(name, default))
    columns = []
    for name in table.column_names:
        column = table.column(name)
        if name in carried:
            columns.append(column.take(pa.array(groups.ends)))
        else:
            columns.append(aggregate_field(name, column, retract, groups, spec.aggregates.get(name, default)))
    result = pa.Table.from_arrays(columns, schema=table.schema)
    if removed.any():  # a removed key merges to its -D record as it is
        slots = np.arange(groups.count)
        slots[removed] = groups.count + np.arange(int(removed.sum()))
        result = pa.concat_tables([result, table.take(pa.array(groups.ends[removed]))]).take(pa.array(slots))
    kind = pa.array(np.where(removed, _DELETE, _INSERT).astype(np.int8), pa.int8())
    result = result.set_column(result.schema.get_field_index(df.VALUE_KIND), result.schema.field(df.VALUE_KIND), kind)
    return _drop_deletes(result, spec.keep_deletes)
