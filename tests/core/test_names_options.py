import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimonflow.core.errors import InvalidNameError, InvalidOptionError, PaimonflowError
from paimonflow.core.names import split_identifier, validate_name
from paimonflow.core.options.core import CoreOptions
from paimonflow.core.options.parse import parse_duration_millis, parse_memory_size
from paimonflow.core.options.registry import MergeEngine
from paimonflow.core.options.validate import validate_user_options


@pytest.mark.parametrize("name", ["../x", "..", ".", ".hidden", "a/b", "a\\b", "", " a", "a ", "a  b", "a\tb",
                                  "a\u00a0b", "x\x00y", "tag$1",
                                  "a:b", "snapshot/snapshot-9", "x" * 256, "a\nb"])
@pytest.mark.parametrize("kind", ["tag", "branch", "consumer", "database", "table", "commit user"])
def test_bad_names_are_refused_with_the_reason(kind, name):
    with pytest.raises(InvalidNameError) as info:
        validate_name(kind, name)
    assert isinstance(info.value, PaimonflowError)
    assert kind in str(info.value)


@pytest.mark.parametrize("name", ["2026-11-21", "daily_2026.11.21", "v1", "user@host", "a+b~c", "Ünïcode"])
def test_good_tag_names_pass_unchanged(name):
    assert validate_name("tag", name) == name


@pytest.mark.parametrize("kind", ["branch", "consumer", "database", "table", "commit user"])
def test_only_tag_names_may_hold_a_space(kind):
    with pytest.raises(InvalidNameError):
        validate_name(kind, "a b")
    assert validate_name("tag", "2026-11-21 08") == "2026-11-21 08"  # Paimon's hourly automatic tags


def test_non_string_names_are_refused():
    with pytest.raises(InvalidNameError):
        validate_name("tag", 3)


@given(st.text(min_size=1, max_size=40))
def test_a_valid_name_is_always_a_single_safe_path_segment(name):
    try:
        validate_name("tag", name)
    except InvalidNameError:
        return
    assert "/" not in name and "\\" not in name and not name.startswith(".")


def test_identifier_split():
    assert split_identifier("shop.orders") == ("shop", "orders")
    for bad in ["orders", "a.b.c", "../x.y", "a./", 5]:
        with pytest.raises(InvalidNameError):
            split_identifier(bad)


def test_column_names_may_have_spaces_but_not_control_chars():
    assert validate_name("column", "order id") == "order id"
    with pytest.raises(InvalidNameError):
        validate_name("column", "a\tb")


def test_sizes_and_durations():
    assert parse_memory_size("128 mb") == 128 << 20
    assert parse_memory_size("64kb") == 64 << 10
    assert parse_memory_size("1024") == 1024
    assert parse_duration_millis("1 h") == 3_600_000
    assert parse_duration_millis("30 min") == 1_800_000
    assert parse_duration_millis("100 ms") == 100
    assert parse_duration_millis("2 d") == 172_800_000
    with pytest.raises(ValueError):
        parse_memory_size("lots")
    with pytest.raises(ValueError):
        parse_duration_millis("1 fortnight")


def test_defaults_are_paimons():
    o = CoreOptions.from_map({})
    assert o.bucket == -1
    assert o.file_format == "parquet"
    assert o.merge_engine is MergeEngine.DEDUPLICATE
    assert o.manifest_merge_min_count == 30
    assert o.manifest_target_file_size == 8 << 20
    assert o.manifest_full_compaction_size == 16 << 20
    assert o.commit_max_retries == 10
    assert o.target_file_size_for(primary_key_table=True) == 128 << 20
    assert o.target_file_size_for(primary_key_table=False) == 256 << 20
    assert o.stats_mode == "truncate(16)"


def test_unknown_option_names_the_key_and_suggests():
    with pytest.raises(InvalidOptionError) as info:
        validate_user_options({"bukcet": "4"})
    assert "bukcet" in str(info.value) and "bucket" in str(info.value)


@pytest.mark.parametrize("key,value", [
    ("bucket", "four"), ("bucket", "0"), ("bucket", "-5"), ("merge-engine", "newest"), ("file.format", "csv"),
    ("commit.max-retries", "-1"), ("target-file-size", "big"), ("ignore-delete", "yes"),
    ("manifest.merge-min-count", "0"),
])
def test_bad_values_are_refused(key, value):
    with pytest.raises(InvalidOptionError) as info:
        validate_user_options({key: value})
    assert key in str(info.value)


def test_field_and_format_options_are_known():
    checked = validate_user_options({"fields.price.aggregate-function": "sum", "parquet.page.size": "1mb",
                                     "bucket": 4, "write-only": True})
    assert checked == {"fields.price.aggregate-function": "sum", "parquet.page.size": "1mb", "bucket": "4",
                       "write-only": "true"}


def test_existing_tables_may_carry_unknown_options():
    o = CoreOptions.from_map({"some.future-option": "x", "bucket": "2"})
    assert o.bucket == 2 and o.raw["some.future-option"] == "x"


def test_unused_import_guard():
    assert pa is not None
