"""Data-quality checks on a Paimon table as a DAG task: :class:`PaimonTableCheckOperator`, in the
manner of the common.sql provider's table and column check operators (a mapping of checks, each
with comparisons such as ``{"geq_to": 1000}``, ``{"equal_to": 0}`` and an optional
``tolerance``), without SQL: it reads one snapshot through the core.

What it reads is the least the checks need. A row count of an append table comes from its
manifests (the live files' row counts); the freshness from snapshot files (and the delta
manifests of the commits it looks at, with a partition filter); a null count of a NOT NULL
column, and duplicates of a key holding a primary-key table's whole primary key, from the
schema; everything else from one lazy scan (:meth:`Table.scan <paimonflow.core.table.Table.scan>`)
of only the columns checked, within the partition filter, streamed batch by batch (distinct
values are held in memory).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as time_of_day
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator

from paimonflow.core.errors import InvalidArgumentError

from .hook import PaimonHook
from .links import TableHealthLink

if TYPE_CHECKING:
    import pyarrow as pa

    from paimonflow.core.meta.snapshots import Snapshot
    from paimonflow.core.predicate import Predicate
    from paimonflow.core.table import Table

TABLE_CHECKS = ("row_count", "freshness", "unique_key")
COLUMN_CHECKS = ("null_check", "distinct_check", "unique_check", "min", "max")
COMPARISONS = ("equal_to", "greater_than", "geq_to", "less_than", "leq_to")
_SYMBOLS = {"equal_to": "=", "greater_than": ">", "geq_to": ">=", "less_than": "<", "leq_to": "<="}
_INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*")
_HELD_VALUES = 1_000_000  # distinct values held per column before they are merged


def _absent(value: object) -> bool:
    """A templated field that was not given: None, or what a template rendering nothing left."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def _document(field: str, value: object) -> Mapping[str, Any] | None:
    """A templated mapping field: the mapping given, or its JSON text; None when not given."""
    if _absent(value):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidArgumentError(f"{field} must be a mapping, or its JSON text: {exc}") from None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{field} must be a mapping, not {value!r}")
    return value


def _jsonable(value: object) -> object:
    """A measured value as XCom and the failure message show it."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, date | datetime | time_of_day):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _number(where: str, value: object) -> int | float:
    """A count or tolerance given as a number or the text a template rendered."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, str):
        try:
            return int(value) if _INTEGER.fullmatch(value) else float(value)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{where} must be a number, not {value!r}")


# -- conditions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Condition:
    """The comparisons a measured value must pass (every one), with an optional relative
    ``tolerance`` widening each bound by ``tolerance * |bound|`` (``equal_to`` then means within
    that band), as in common.sql's column checks."""

    bounds: tuple[tuple[str, Any], ...]
    tolerance: float | None = None

    def holds(self, value: object) -> bool:
        if value is None:
            return False
        return all(self._holds(comparison, bound, value) for comparison, bound in self.bounds)

    def _holds(self, comparison: str, bound: Any, value: Any) -> bool:
        if self.tolerance is not None:
            value, bound = float(value), float(bound)
            low, high = bound - abs(bound) * self.tolerance, bound + abs(bound) * self.tolerance
        else:
            low = high = bound
        if comparison == "equal_to":
            return bool(low <= value <= high)
        if comparison == "greater_than":
            return bool(value > low)
        if comparison == "geq_to":
            return bool(value >= low)
        if comparison == "less_than":
            return bool(value < high)
        return bool(value <= high)

    def describe(self) -> str:
        text = " and ".join(f"{_SYMBOLS[c]} {_jsonable(b)}" for c, b in self.bounds)
        return text + (f" (tolerance {self.tolerance:g})" if self.tolerance is not None else "")


def parse_condition(where: str, spec: object, convert: Callable[[str, object], Any]) -> Condition:
    """The :class:`Condition` a check's mapping asks for: one or more of ``equal_to``,
    ``greater_than``, ``geq_to``, ``less_than``, ``leq_to`` (``equal_to`` alone), each bound
    converted by ``convert(where, value)``, and ``tolerance`` (a number >= 0, for numeric
    bounds). Raises :class:`InvalidArgumentError` naming ``where``."""
    if not isinstance(spec, Mapping):
        raise InvalidArgumentError(f"{where} must be a mapping such as {{'geq_to': 1}}, not {spec!r}")
    unknown = sorted(set(spec) - {*COMPARISONS, "tolerance"})
    if unknown:
        raise InvalidArgumentError(f"{where}: unknown keys {unknown} (comparisons: {', '.join(COMPARISONS)}; "
                                   "and tolerance)")
    given = [c for c in COMPARISONS if c in spec]
    if not given:
        raise InvalidArgumentError(f"{where} needs a comparison: {', '.join(COMPARISONS)}")
    if "equal_to" in given and len(given) > 1:
        raise InvalidArgumentError(f"{where}: equal_to goes alone, not with {[c for c in given if c != 'equal_to']}")
    bounds = tuple((c, convert(f"{where}.{c}", spec[c])) for c in given)
    tolerance = None
    if not _absent(spec.get("tolerance")):
        tolerance = float(_number(f"{where}.tolerance", spec["tolerance"]))
        if tolerance < 0:
            raise InvalidArgumentError(f"{where}.tolerance must be at least 0, not {spec['tolerance']!r}")
        if not all(isinstance(b, int | float | Decimal) and not isinstance(b, bool) for _, b in bounds):
            raise InvalidArgumentError(f"{where}: a tolerance applies to numeric bounds only")
    return Condition(bounds, tolerance)


def _typed(value: object, arrow_type: pa.DataType) -> Any:
    """``value`` as a value of ``arrow_type``: text converted (``"2026-11-21"`` to a date), other
    values taken as they are if they fit. Raises ``TypeError``, ``ValueError`` or an Arrow error."""
    import pyarrow as pa

    if value is None or (isinstance(value, bool) and not pa.types.is_boolean(arrow_type)):
        raise TypeError(value)
    if isinstance(value, str):
        return pa.array([value]).cast(arrow_type)[0].as_py()
    return pa.array([value], type=arrow_type)[0].as_py()


def _value_of(arrow_type: pa.DataType, column: str) -> Callable[[str, object], Any]:
    """A converter of bounds to values of ``column`` (a min or max is compared with them):
    numbers for numeric columns, the column's own type from text otherwise (``"2026-11-21"`` for
    a DATE)."""
    import pyarrow as pa

    numeric = pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)

    def convert(where: str, value: object) -> Any:
        if numeric and not (isinstance(value, str) and pa.types.is_decimal(arrow_type)):
            return _number(where, value)
        try:
            if isinstance(value, str) and pa.types.is_decimal(arrow_type):
                return Decimal(value.strip())
            return _typed(value, arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError, InvalidOperation):
            raise InvalidArgumentError(f"{where}: {value!r} is not a value of column {column!r} "
                                       f"({arrow_type})") from None

    return convert


# -- the checks ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One check, validated: its name (``row_count``, ``freshness``, ``unique_key`` or
    ``<column>.<check>``), what it measures and what it must meet, and the mapping as given."""

    name: str
    kind: str
    given: Mapping[str, Any]
    column: str | None = None
    condition: Condition | None = None
    columns: tuple[str, ...] = ()  # unique_key
    max_age_millis: int = 0  # freshness
    data_only: bool = True  # freshness: only APPEND and OVERWRITE commits count


def parse_checks(table: Table, checks: object, column_checks: object) -> list[Check]:
    """The checks ``checks`` (table-level) and ``column_checks`` (per column) ask for, validated
    against ``table``'s columns and types before anything is read. Raises
    :class:`InvalidArgumentError` naming the check."""
    import pyarrow as pa

    from paimonflow.core.options.parse import parse_duration_millis

    table_level = _document("checks", checks) or {}
    per_column = _document("column_checks", column_checks) or {}
    schema = table.arrow_schema
    out: list[Check] = []
    for name, spec in table_level.items():
        where = f"checks.{name}"
        if name not in TABLE_CHECKS:
            raise InvalidArgumentError(f"{where}: unknown check (table checks: {', '.join(TABLE_CHECKS)}; column "
                                       "checks go in column_checks)")
        if name == "row_count":
            out.append(Check(name=name, kind=name, given=spec, condition=parse_condition(where, spec, _number)))
            continue
        if not isinstance(spec, Mapping):
            raise InvalidArgumentError(f"{where} must be a mapping, not {spec!r}")
        if name == "freshness":
            unknown = sorted(set(spec) - {"max_age", "data_only"})
            if unknown or _absent(spec.get("max_age")):
                raise InvalidArgumentError(f"{where} takes max_age (a duration such as '2 h') and data_only")
            max_age = spec["max_age"]
            try:
                millis = max_age if isinstance(max_age, int) and not isinstance(max_age, bool) else \
                    parse_duration_millis(str(max_age))
            except ValueError:
                raise InvalidArgumentError(f"{where}.max_age must be a duration such as '2 h', '30 min' or '1 d', "
                                           f"not {max_age!r}") from None
            data_only = spec.get("data_only", True)
            if not isinstance(data_only, bool):
                raise InvalidArgumentError(f"{where}.data_only must be true or false")
            out.append(Check(name=name, kind=name, given=spec, max_age_millis=millis, data_only=data_only))
        else:  # unique_key
            names = spec.get("columns")
            if isinstance(names, str):
                names = [n.strip() for n in names.split(",") if n.strip()]
            if set(spec) != {"columns"} or not isinstance(names, list | tuple) or not names:
                raise InvalidArgumentError(f"{where} takes columns: the key's column names")
            for column in names:
                _column_type(schema, f"{where}.columns", column, grouped=True)
            out.append(Check(name=name, kind=name, given=spec, columns=tuple(names)))
    for column, column_spec in per_column.items():
        if not isinstance(column_spec, Mapping) or not column_spec:
            raise InvalidArgumentError(f"column_checks.{column} must be a mapping of checks, not {column_spec!r}")
        for kind, spec in column_spec.items():
            where = f"column_checks.{column}.{kind}"
            if kind not in COLUMN_CHECKS:
                raise InvalidArgumentError(f"{where}: unknown check (column checks: {', '.join(COLUMN_CHECKS)})")
            arrow_type = _column_type(schema, where, column, grouped=kind != "null_check")
            if kind in ("min", "max") and (pa.types.is_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type)):
                raise InvalidArgumentError(f"{where}: {kind} does not apply to the binary column {column!r}")
            convert = _value_of(arrow_type, column) if kind in ("min", "max") else _number
            out.append(Check(name=f"{column}.{kind}", kind=kind, column=column, given=spec,
                             condition=parse_condition(where, spec, convert)))
    if not out:
        raise InvalidArgumentError("give at least one check (checks= or column_checks=)")
    return out


def _column_type(schema: pa.Schema, where: str, column: object, *, grouped: bool) -> pa.DataType:
    import pyarrow as pa

    if not isinstance(column, str) or column not in schema.names:
        raise InvalidArgumentError(f"{where}: no column {column!r} in the table (columns: {schema.names})")
    arrow_type = schema.field(column).type
    if grouped and pa.types.is_nested(arrow_type):
        raise InvalidArgumentError(f"{where}: the column {column!r} is of a nested type ({arrow_type}); only "
                                   "null_check applies to it")
    return arrow_type


def partition_filter(table: Table, partition: object) -> tuple[dict[str, object], Predicate | None]:
    """The partition values ``partition`` names (a mapping or ``"dt=2026-11-21,hh=10"``; text
    converted to each partition column's type) and the predicate selecting them. Raises
    :class:`InvalidArgumentError` for a column that is not a partition key or a value that does
    not fit it."""
    import pyarrow as pa

    from paimonflow.core.predicate import col
    from paimonflow.jobs.write import partition_spec

    if _absent(partition):
        return {}, None
    spec = partition_spec(partition.strip()) if isinstance(partition, str) else partition
    if not isinstance(spec, Mapping) or not spec:
        raise InvalidArgumentError(f"partition must be a mapping or 'k=v[,k2=v2]', not {partition!r}")
    values: dict[str, object] = {}
    predicate: Predicate | None = None
    for key, value in spec.items():
        if key not in table.partition_keys:
            raise InvalidArgumentError(f"partition names {key!r}, which is not a partition key of {table.identifier} "
                                       f"(partition keys: {list(table.partition_keys)})")
        arrow_type = table.arrow_schema.field(key).type
        try:
            values[key] = _typed(value, arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            raise InvalidArgumentError(f"partition value {key}={value!r} does not fit the partition column {key!r} "
                                       f"({arrow_type})") from None
        leaf = col(key) == values[key]
        predicate = leaf if predicate is None else predicate & leaf
    return values, predicate


# -- measuring ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _ColumnMeasure:
    """Null count, non-null count, min, max and distinct values of one column, batch by batch."""

    bounds: bool = False
    distinct: bool = False
    nulls: int = 0
    values: int = 0
    low: Any = None
    high: Any = None
    held: list = field(default_factory=list)
    held_count: int = 0

    def add(self, array: pa.Array) -> None:
        import pyarrow.compute as pc

        self.nulls += array.null_count
        present = len(array) - array.null_count
        self.values += present
        if not present:
            return
        if self.bounds:
            found = pc.min_max(array)
            low, high = found["min"].as_py(), found["max"].as_py()
            self.low = low if self.low is None or (low is not None and low < self.low) else self.low
            self.high = high if self.high is None or (high is not None and high > self.high) else self.high
        if self.distinct:
            unique = pc.unique(array.drop_null())
            self.held.append(unique)
            self.held_count += len(unique)
            if self.held_count > _HELD_VALUES:
                self._merge()

    def _merge(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if len(self.held) > 1:
            merged = pc.unique(pa.chunked_array(self.held))
            self.held, self.held_count = [merged], len(merged)

    def distinct_count(self) -> int:
        self._merge()
        return self.held_count


@dataclass(slots=True)
class _KeyMeasure:
    """Rows with a null in a key column, and distinct keys among the others, batch by batch."""

    columns: tuple[str, ...]
    null_keys: int = 0
    rows: int = 0
    held: list = field(default_factory=list)
    held_count: int = 0

    def add(self, keys: pa.Table) -> None:
        import pyarrow.compute as pc

        missing = None
        for name in self.columns:
            column = pc.is_null(keys.column(name))
            missing = column if missing is None else pc.or_(missing, column)
        if missing is not None and keys.num_rows:
            self.null_keys += int(pc.sum(missing).as_py() or 0)
            keys = keys.filter(pc.invert(missing))
        self.rows += keys.num_rows
        groups = keys.group_by(list(self.columns)).aggregate([])
        self.held.append(groups)
        self.held_count += groups.num_rows
        if self.held_count > _HELD_VALUES:
            self._merge()

    def _merge(self) -> None:
        import pyarrow as pa

        if len(self.held) > 1:
            merged = pa.concat_tables(self.held).group_by(list(self.columns)).aggregate([])
            self.held, self.held_count = [merged], merged.num_rows

    def duplicates(self) -> int:
        self._merge()
        return self.rows - self.held_count


@dataclass(frozen=True, slots=True)
class Measured:
    """A check's measured value and where it came from (``metadata``, ``schema`` or ``scan``)."""

    value: Any
    source: str
    detail: Mapping[str, Any] = field(default_factory=dict)


def measure(table: Table, checks: Sequence[Check], predicate: Predicate | None, partition: Mapping[str, object], *,
            now_millis: int) -> tuple[int | None, dict[str, Measured], int]:
    """``(snapshot id, {check name: Measured}, rows read)``: every check measured on one snapshot
    (the latest), reading only what they need (see the module's documentation)."""
    import pyarrow as pa

    from paimonflow.core.read.data_evolution import is_data_evolution

    not_null = {f.name for f in table.schema.fields if not f.type.nullable}
    keys = set(table.primary_keys)
    results: dict[str, Measured] = {}
    columns: dict[str, _ColumnMeasure] = {}
    key_measures: dict[str, _KeyMeasure] = {}
    for check in checks:
        if check.kind == "null_check" and check.column in not_null:
            results[check.name] = Measured(0, "schema")
        elif check.kind == "unique_key" and keys and keys <= set(check.columns) <= not_null:
            results[check.name] = Measured(0, "schema", {"duplicates": 0, "null_keys": 0})
        elif check.kind == "unique_key":
            key_measures[check.name] = _KeyMeasure(check.columns)
        elif check.column is not None:
            measure_of = columns.setdefault(check.column, _ColumnMeasure())
            measure_of.bounds |= check.kind in ("min", "max")
            measure_of.distinct |= check.kind in ("distinct_check", "unique_check")
    read = list(dict.fromkeys([*columns, *(c for m in key_measures.values() for c in m.columns)]))
    counting = [c for c in checks if c.kind == "row_count"]
    narrow = table.primary_keys[0] if table.primary_keys else table.arrow_schema.names[0]
    scan = table.scan(columns=read or [narrow], filter=predicate)
    rows: int | None = None
    if counting and not table.primary_keys and not is_data_evolution(table.schema.options):
        splits = scan.plan()
        if not any(s.deletion_vectors for s in splits):  # the live files' row counts are the rows
            rows = sum(s.row_count for s in splits)
            for check in counting:
                results[check.name] = Measured(rows, "metadata")
    rows_read = 0
    if read or (counting and rows is None):
        for batch in scan.to_batches():
            rows_read += batch.num_rows
            for name, column in columns.items():
                column.add(batch.column(name))
            if key_measures:
                batch_table = pa.Table.from_batches([batch])
                for key in key_measures.values():
                    key.add(batch_table.select(list(key.columns)))
        for check in counting:
            results.setdefault(check.name, Measured(rows_read, "scan"))
    for check in checks:
        if check.name in results:
            continue
        if check.kind == "unique_key":
            key = key_measures[check.name]
            duplicates = key.duplicates()
            results[check.name] = Measured(duplicates + key.null_keys, "scan",
                                           {"duplicates": duplicates, "null_keys": key.null_keys})
        elif check.kind == "freshness":
            results[check.name] = _freshness(table, scan.snapshot_id, check, partition, now_millis)
        elif check.column is not None:
            column = columns[check.column]
            value = {"null_check": column.nulls, "min": column.low, "max": column.high}.get(check.kind)
            if check.kind == "distinct_check":
                value = column.distinct_count()
            elif check.kind == "unique_check":
                value = column.values - column.distinct_count()
            results[check.name] = Measured(value, "scan")
    return scan.snapshot_id, results, rows_read


def _freshness(table: Table, snapshot_id: int | None, check: Check, partition: Mapping[str, object],
               now_millis: int) -> Measured:
    """The age in seconds of the newest commit that counts (an APPEND or OVERWRITE, or any with
    ``data_only=False``; with a partition filter, one whose delta touched those partitions),
    looking back from ``snapshot_id`` no further than the first snapshot older than the check's
    ``max_age``. None when there is none in that window."""
    from paimonflow.core.meta.snapshots import CommitKind

    kinds = (CommitKind.APPEND, CommitKind.OVERWRITE)
    touches = _partition_touch(table, partition) if partition else None
    looked_back: Snapshot | None = None
    current = snapshot_id
    while current is not None and current > 0:
        snapshot = table.snapshot_manager.try_snapshot(current)
        if snapshot is None:  # expired (or never there)
            break
        looked_back = snapshot
        age = max(0, now_millis - snapshot.time_millis)
        if (not check.data_only or snapshot.commit_kind in kinds) and (touches is None or touches(snapshot)):
            return Measured(round(age / 1000, 3), "metadata", {"snapshot_id": snapshot.id,
                                                              "commit_kind": snapshot.commit_kind.value})
        if age > check.max_age_millis:
            break
        current -= 1
    detail: dict[str, Any] = {"snapshot_id": None}
    if looked_back is not None:
        detail["looked_back_to"] = looked_back.id
    return Measured(None, "metadata", detail)


def _partition_touch(table: Table, partition: Mapping[str, object]) -> Callable[[Snapshot], bool]:
    """Whether a snapshot's commit added or removed files in the partitions ``partition`` selects."""
    from paimonflow.core.data.binary_row import deserialize_row

    types = [table.arrow_schema.field(k).type for k in table.partition_keys]
    positions = {k: table.partition_keys.index(k) for k in partition}
    decoded: dict[bytes, bool] = {}

    def selected(row: bytes) -> bool:
        if row not in decoded:
            values = deserialize_row(row, types)
            decoded[row] = all(values[i] == partition[k] for k, i in positions.items())
        return decoded[row]

    return lambda snapshot: any(selected(e.partition) for e in table.manifest_io.delta_entries(snapshot))


# -- judging ------------------------------------------------------------------------------------


def _verdict(check: Check, measured: Measured) -> bool:
    if check.kind == "freshness":
        return measured.value is not None and measured.value * 1000 <= check.max_age_millis
    if check.kind == "unique_key":
        return measured.value == 0
    assert check.condition is not None
    return check.condition.holds(measured.value)


def _failure(check: Check, measured: Measured, where: str) -> str:
    if check.kind == "freshness":
        allowed = f"expected at most {check.max_age_millis / 1000:g} s"
        what = "data commit" if check.data_only else "commit"
        if measured.value is not None:
            return (f"freshness: the newest {what}{where} (snapshot {measured.detail['snapshot_id']}) is "
                    f"{measured.value:g} s old, {allowed}")
        if "looked_back_to" not in measured.detail:
            return "freshness: the table has no snapshot"
        return (f"freshness: no {what}{where} in the last {check.max_age_millis / 1000:g} s (looked back to "
                f"snapshot {measured.detail['looked_back_to']})")
    if check.kind == "unique_key":
        return (f"unique_key ({', '.join(check.columns)}): {measured.detail['duplicates']} duplicate key(s), "
                f"{measured.detail['null_keys']} row(s) with a null key")
    assert check.condition is not None
    value = "no value (no non-null row)" if measured.value is None else _jsonable(measured.value)
    return f"{check.name} {value}, expected {check.condition.describe()}"


class PaimonTableCheckOperator(BaseOperator):
    """Check a Paimon table's data; fail the task, listing every check that failed with its
    numbers, if any does.

    Table checks (``checks``):

    * ``"row_count": {"geq_to": 1000}``: the rows (after merging, for a primary-key table);
    * ``"freshness": {"max_age": "2 h"}``: the age of the newest APPEND or OVERWRITE commit
      (with a partition filter: the newest that added or removed files in those partitions;
      ``"data_only": false`` counts any commit, a compaction too), by the committer's clock;
    * ``"unique_key": {"columns": ["order_id"]}``: no two rows with the same key, and no row
      with a null in a key column.

    Column checks (``column_checks``, a mapping of column name to checks): ``null_check`` (the
    nulls), ``distinct_check`` (the distinct non-null values), ``unique_check`` (the non-null
    values minus the distinct ones: the duplicates), ``min`` and ``max``, e.g.
    ``{"amount": {"null_check": {"equal_to": 0}, "min": {"geq_to": 0}}}``.

    Each comparison mapping holds one or more of ``equal_to``, ``greater_than``, ``geq_to``,
    ``less_than``, ``leq_to`` (``equal_to`` alone) and an optional ``tolerance``, a fraction of
    the bound (``{"equal_to": 1000, "tolerance": 0.1}``: 900 to 1100). Bounds of ``min`` and
    ``max`` are values of the column (``"2026-11-21"`` for a DATE column). Every check is
    validated against the table's columns before anything is read: a bad one fails with one
    :class:`~paimonflow.core.errors.InvalidArgumentError` line naming it.

    The checks measure one snapshot (the latest), within ``partition`` if given, reading as
    little as they need (the module's documentation says what comes from metadata). On failure
    the task raises ``AirflowFailException`` (it fails without retries), one line: ``2 of 4 checks failed on shop.orders (dt=2026-11-21) at snapshot 7: row_count 3,
    expected >= 1000; amount.min -2.5, expected >= 0``.

    :param table: ``<database>.<table>`` (or ``db.t$branch_b``). (templated)
    :param checks: the table checks (a mapping, or its JSON text). (templated)
    :param column_checks: the column checks (a mapping, or its JSON text). (templated)
    :param partition: the partitions checked: ``{"dt": "2026-11-21"}`` or ``"dt=2026-11-21"``;
        partition columns only. (templated)
    :param paimon_conn_id: the ``paimon`` connection (default ``paimon_default``). (templated)
    :param warehouse: a warehouse instead of the connection. (templated)

    Returns ``{"table", "snapshot_id", "partition", "passed": True, "rows_read", "checks":
    {name: {"value", "passed", "source", "condition", ...}}}``; ``rows_read`` is 0 when metadata
    answered every check.
    """

    operator_extra_links = (TableHealthLink(),)
    template_fields: Sequence[str] = ("table", "paimon_conn_id", "warehouse", "checks", "column_checks", "partition")
    template_fields_renderers: ClassVar[dict[str, str]] = {"checks": "json", "column_checks": "json"}
    ui_color = "#fdf3e1"

    def __init__(self, *, table: str, checks: Mapping[str, Any] | str | None = None,
                 column_checks: Mapping[str, Mapping[str, Any]] | str | None = None,
                 partition: Mapping[str, Any] | str | None = None,
                 paimon_conn_id: str = PaimonHook.default_conn_name, warehouse: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table, self.checks, self.column_checks, self.partition = table, checks, column_checks, partition
        self.paimon_conn_id, self.warehouse = paimon_conn_id, warehouse

    @cached_property
    def hook(self) -> PaimonHook:
        """The connection's hook (or the embedded default for an explicit ``warehouse=``)."""
        if _absent(self.warehouse):
            return PaimonHook(self.paimon_conn_id)
        return PaimonHook(None, warehouse=str(self.warehouse))

    def execute(self, context) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        from paimonflow.core.names import parse_table_name

        if not isinstance(self.table, str):
            raise InvalidArgumentError(f"table must be '<database>.<table>', not {self.table!r}")
        self.table = self.table.strip()
        parse_table_name(self.table)
        table = self.hook.get_table(self.table)
        checks = parse_checks(table, self.checks, self.column_checks)
        partition, predicate = partition_filter(table, self.partition)
        snapshot_id, measured, rows_read = measure(table, checks, predicate, partition,
                                                   now_millis=int(time.time() * 1000))
        where = (" in " + ",".join(f"{k}={_jsonable(v)}" for k, v in partition.items())) if partition else ""
        results: dict[str, Any] = {}
        failures = []
        for check in checks:
            found = measured[check.name]
            passed = _verdict(check, found)
            results[check.name] = {"value": _jsonable(found.value), "passed": passed, "source": found.source,
                                   "condition": dict(check.given), **{k: _jsonable(v) for k, v in found.detail.items()}}
            if not passed:
                failures.append(_failure(check, found, where))
        outcome = {"table": self.table, "snapshot_id": snapshot_id,
                   "partition": {k: _jsonable(v) for k, v in partition.items()} or None,
                   "passed": not failures, "rows_read": rows_read, "checks": results}
        self.log.info("checks of %s at snapshot %s: %s", self.table, snapshot_id, json.dumps(results, default=str))
        if failures:
            scope = f" ({', '.join(f'{k}={_jsonable(v)}' for k, v in partition.items())})" if partition else ""
            raise AirflowFailException(f"{len(failures)} of {len(checks)} checks failed on {self.table}{scope} at "
                                       f"snapshot {snapshot_id}: {'; '.join(failures)}")
        return outcome


__all__ = ["COLUMN_CHECKS", "COMPARISONS", "TABLE_CHECKS", "Check", "Condition", "Measured",
           "PaimonTableCheckOperator", "measure", "parse_checks", "parse_condition", "partition_filter"]
