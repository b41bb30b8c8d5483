"""The interop data, shared by the pypaimon and Java peers' tests: every primitive type with nulls,
negative keys, empty, long and multi-byte strings, partition values with non-ASCII characters,
commits carrying every row kind, and the plain Python model of what a table must then contain."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa

ALL_TYPES = [
    pa.field("id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("dec", pa.decimal128(10, 2)), ("dec38", pa.decimal128(38, 6)),
    ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()), ("t", pa.time32("ms")),
    ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
    ("op", pa.string()),
]
SCHEMA = pa.schema(ALL_TYPES)
# partition values: plain, with a space and an accent, and with CJK characters and an emoji
DAYS = ["2026-11-20", "2026-11-21 é", "2026-11-22 漢字😀"]
STRING_CHARS = "abcxyzé漢😀 "


def random_value(rng: random.Random, name: str):
    """A value of column ``name`` of :data:`SCHEMA` (one in ten is null)."""
    if rng.random() < 0.1:
        return None
    base = dt.datetime(2026, 1, 1) + dt.timedelta(seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6))
    return {
        "b": rng.random() < 0.5,
        "i8": rng.randrange(-128, 128),
        "i16": rng.randrange(-(2**15), 2**15),
        "i32": rng.randrange(-(2**31), 2**31),
        "f32": float(rng.randrange(-1000, 1000)) / 4,
        "f64": rng.uniform(-1e6, 1e6),
        "dec": Decimal(rng.randrange(-10**9, 10**9)) / 100,
        "dec38": Decimal(rng.randrange(-10**30, 10**30)) / 10**6,
        "s": random_string(rng),
        "bin": bytes(rng.randrange(256) for _ in range(rng.choice([0, 5, 20]))),
        "d": dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(20000)),
        "t": dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000),
        "ts3": base.replace(microsecond=base.microsecond // 1000 * 1000),
        "ts6": base,
        "ltz": base.replace(tzinfo=dt.UTC),
    }[name]


def random_string(rng: random.Random) -> str:
    """Empty, short, just over 7 bytes (BinaryRow's inline limit) or long, with multi-byte characters."""
    return "".join(rng.choice(STRING_CHARS) for _ in range(rng.choice([0, 3, 7, 8, 40, 300])))


def random_rows(rng: random.Random, ids, days, ops="+I") -> pa.Table:
    """Rows of :data:`SCHEMA` for keys ``ids`` in partitions ``days``; ``op`` holds each row's kind
    (one string for all, or one per row)."""
    names = [f.name if isinstance(f, pa.Field) else f[0] for f in ALL_TYPES]
    ops = [ops] * len(ids) if isinstance(ops, str) else list(ops)
    out = {n: [] for n in names}
    for i, day, op in zip(ids, days, ops, strict=True):
        for n in names:
            out[n].append(i if n == "id" else day if n == "dt" else op if n == "op" else random_value(rng, n))
    return pa.table(out, schema=SCHEMA)


class Model:
    """What a table must contain: a dict for primary-key tables (``-U``/``-D`` remove the key), a
    multiset for append tables."""

    def __init__(self, primary_key: bool) -> None:
        self.pk = primary_key
        self.rows: dict = {}
        self.bag: list = []

    def apply(self, batch: pa.Table) -> None:
        for row in batch.to_pylist():
            if not self.pk:
                self.bag.append(row)
            elif row["op"] in ("-D", "-U"):
                self.rows.pop((row["id"], row["dt"]), None)
            else:
                self.rows[(row["id"], row["dt"])] = row

    def expected(self, columns) -> list[tuple]:
        rows = list(self.rows.values()) if self.pk else list(self.bag)
        return canonical(pa.Table.from_pylist(rows, schema=SCHEMA), columns) if rows else []


def random_commits(rng: random.Random, primary_key: bool) -> list[pa.Table]:
    """Three commits. Primary key: inserts; then updates (``+U``) of 80 keys and inserts (``+I``) of
    40 new ones; then deletes of 50 keys (``-D`` and ``-U``). Append: inserts, more inserts, and
    one row twice. Keys run from -150 to 189."""
    first_ids = list(range(-150, 150))
    commits = [random_rows(rng, first_ids, [rng.choice(DAYS) for _ in first_ids])]
    if primary_key:
        day_of = {r["id"]: r["dt"] for r in commits[0].select(["id", "dt"]).to_pylist()}
        updated = rng.sample(first_ids, 80) + list(range(150, 190))
        commits.append(random_rows(rng, updated, [day_of.get(i) or rng.choice(DAYS) for i in updated],
                                   ["+U" if i in day_of else "+I" for i in updated]))
        deleted = rng.sample(first_ids, 50)
        commits.append(random_rows(rng, deleted, [day_of[i] for i in deleted], ["-D", "-U"] * 25))
    else:
        more = list(range(-75, 75))
        commits.append(random_rows(rng, more, [rng.choice(DAYS) for _ in more]))
        commits.append(random_rows(rng, [-7, -7], [DAYS[1], DAYS[1]]))
    return commits


# the tables both peers' round trips run: (name, primary key, partitioned, options)
SCENARIOS = [
    ("pk-unpartitioned-1-bucket", True, False, {"bucket": "1"}),
    ("pk-partitioned-2-buckets", True, True, {"bucket": "2"}),
    ("pk-unpartitioned-4-buckets", True, False, {"bucket": "4"}),
    ("append-unaware", False, True, {}),
    ("append-fixed-3-buckets", False, False, {"bucket": "3", "bucket-key": "id"}),
]


def canonical(table: pa.Table, columns: list[str] | None = None) -> list[tuple]:
    """Order-insensitive, type-normalised rows for comparing two readers."""
    return sorted(plain_rows(table, columns), key=repr)


def plain_rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple]:
    """The rows of ``table`` (in order) as tuples of :func:`plain` values."""
    columns = columns or table.column_names
    return [plain_row(row, columns) for row in table.select(columns).to_pylist()]


def plain_row(row: dict, columns) -> tuple:
    return tuple(plain(row[c]) for c in columns)


def plain(value: Any) -> Any:
    """A value two readers agree on: NaN as a string, zoned timestamps as naive UTC."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value
