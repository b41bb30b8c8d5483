"""What only one backend does: local fallbacks and URI spellings; S3 outcome decisions under
injected faults, pagination, options and secrets; backend selection and path joining.

The behaviour every backend shares is in ``fs/test_fileio_contract.py``.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import traceback
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimonflow.core.errors import FileNotFoundStorageError, PaimonflowError, StorageError, UnsupportedError
from paimonflow.core.fs import (
    InvalidStorageOptionError,
    LocalFileIO,
    S3FileIO,
    StorageOutcomeUnknownError,
    get_file_io,
    join,
    local,
    scheme_of,
)
from paimonflow.core.fs.s3 import arrow_path, split_uri
from tests.s3server import Fault, S3TestServer

# ---------------------------------------------------------------------------------------------
# backend selection and paths


@pytest.mark.parametrize(("base", "parts", "expected"), [
    ("/wh", ("db", "t"), "/wh/db/t"),
    ("/wh/", ("/db/", "t/"), "/wh/db/t"),
    ("/", ("a",), "/a"),
    ("file:///", ("a", "b"), "file:///a/b"),
    ("file:///wh", ("a",), "file:///wh/a"),
    ("s3://bucket", ("wh", "db"), "s3://bucket/wh/db"),
    ("s3://bucket/", ("wh",), "s3://bucket/wh"),
    ("s3://bucket/wh", ("", "x"), "s3://bucket/wh/x"),
    ("s3://bucket/wh/", (), "s3://bucket/wh"),
    ("", ("a",), "a"),
])
def test_join(base: str, parts: tuple[str, ...], expected: str) -> None:
    assert join(base, *parts) == expected


@pytest.mark.parametrize(("uri", "scheme"), [
    ("/data/wh", ""), ("relative/wh", ""), ("file:///data", "file"), ("file:/data", "file"),
    ("s3://b/k", "s3"), ("S3A://b", "s3a"), ("hdfs://nn/x", "hdfs"), ("C:/x", ""),
])
def test_scheme_of(uri: str, scheme: str) -> None:
    assert scheme_of(uri) == scheme


def test_get_file_io_picks_the_backend_by_scheme() -> None:
    assert isinstance(get_file_io("/data/wh"), LocalFileIO)
    assert isinstance(get_file_io("file:///data/wh", {}), LocalFileIO)
    options = {"s3.endpoint": "http://127.0.0.1:9", "s3.region": "us-east-1"}
    for uri in ("s3://bucket/wh", "s3a://bucket/wh"):
        fileio = get_file_io(uri, options)
        assert isinstance(fileio, S3FileIO)
        fileio.close()


@pytest.mark.parametrize("uri", ["hdfs://nn/wh", "gs://bucket/wh", "oss://bucket/wh"])
def test_get_file_io_refuses_unknown_schemes(uri: str) -> None:
    with pytest.raises(UnsupportedError, match="no storage backend") as info:
        get_file_io(uri)
    assert isinstance(info.value, PaimonflowError)


# ---------------------------------------------------------------------------------------------
# local disk


def test_file_uri_spellings_address_the_same_file(tmp_path: Path) -> None:
    fileio = LocalFileIO()
    path = str(tmp_path / "f")
    fileio.write_bytes(path, b"x")
    for spelling in (f"file://{path}", f"file:{path}", f"file://localhost{path}"):
        assert fileio.read_bytes(spelling) == b"x"
        assert fileio.status(spelling).path == spelling


def test_file_uri_with_a_remote_host_is_refused() -> None:
    with pytest.raises(StorageError, match="remote host"):
        LocalFileIO().read_bytes("file://elsewhere/data/f")


def test_local_list_dir_keeps_the_callers_spelling(tmp_path: Path) -> None:
    fileio = LocalFileIO()
    fileio.write_bytes(str(tmp_path / "d" / "f"), b"x")
    assert [s.path for s in fileio.list_dir(f"file://{tmp_path}/d")] == [f"file://{tmp_path}/d/f"]
    assert [s.path for s in fileio.list_dir(f"{tmp_path}/d/")] == [f"{tmp_path}/d/f"]


def _no_hard_links(src: str, dst: str) -> None:
    raise OSError(errno.EPERM, "hard links are not supported here", src)


def test_publish_falls_back_to_renameat2_without_hard_links(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "link", _no_hard_links)
    fileio = LocalFileIO()
    path = str(tmp_path / "snapshot" / "snapshot-1")
    assert fileio.create_if_absent(path, b"first") is True
    assert fileio.create_if_absent(path, b"second") is False
    assert fileio.read_bytes(path) == b"first"
    assert os.listdir(tmp_path / "snapshot") == ["snapshot-1"]


def test_publish_fails_cleanly_without_links_or_renameat2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "link", _no_hard_links)
    monkeypatch.setattr(local, "_renameat2", None)
    with pytest.raises(StorageError, match="cannot publish"):
        LocalFileIO().create_if_absent(str(tmp_path / "snapshot-1"), b"x")
    assert os.listdir(tmp_path) == []


def test_rename_without_renameat2_uses_link_and_never_replaces(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_renameat2", None)
    fileio = LocalFileIO()
    fileio.write_bytes(str(tmp_path / "a"), b"a")
    fileio.write_bytes(str(tmp_path / "b"), b"b")
    with pytest.raises(StorageError, match="exists"):
        fileio.rename(str(tmp_path / "a"), str(tmp_path / "b"))
    fileio.rename(str(tmp_path / "a"), str(tmp_path / "c"))
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]
    assert fileio.read_bytes(str(tmp_path / "c")) == b"a"


def test_rename_moves_a_directory(tmp_path: Path) -> None:
    fileio = LocalFileIO()
    fileio.write_bytes(str(tmp_path / "src" / "f"), b"x")
    fileio.rename(str(tmp_path / "src"), str(tmp_path / "dst"))
    assert fileio.read_bytes(str(tmp_path / "dst" / "f")) == b"x"
    assert not fileio.exists(str(tmp_path / "src"))


def test_create_if_absent_under_a_file_is_an_error_not_a_lost_race(tmp_path: Path) -> None:
    fileio = LocalFileIO()
    fileio.write_bytes(str(tmp_path / "f"), b"x")
    with pytest.raises(StorageError):
        fileio.create_if_absent(str(tmp_path / "f" / "child"), b"y")


def test_leftover_temp_files_do_not_block_a_publish(tmp_path: Path) -> None:
    (tmp_path / ".snapshot-1.0123abcd.tmp").write_bytes(b"half")  # a crashed writer's temp
    assert LocalFileIO().create_if_absent(str(tmp_path / "snapshot-1"), b"whole") is True
    assert (tmp_path / "snapshot-1").read_bytes() == b"whole"


def test_failed_write_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise OSError(errno.EIO, "injected I/O error")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match="cannot write"):
        LocalFileIO().write_bytes(str(tmp_path / "f"), b"x")
    assert os.listdir(tmp_path) == []


def test_arrow_paths_of_file_uris(tmp_path: Path) -> None:
    _, to_arrow = LocalFileIO().arrow_filesystem()
    assert to_arrow(f"file://{tmp_path}/x") == f"{tmp_path}/x"
    assert to_arrow(f"{tmp_path}/x") == f"{tmp_path}/x"


# ---------------------------------------------------------------------------------------------
# S3: addressing


def test_split_uri() -> None:
    assert split_uri("s3://bucket/a/b") == ("bucket", "a/b")
    assert split_uri("s3a://bucket") == ("bucket", "")
    assert arrow_path("s3a://bucket/a/b") == "bucket/a/b"
    for bad in ("/data/x", "s3://", "gs://bucket/x"):
        with pytest.raises(StorageError):
            split_uri(bad)


def test_from_options_reads_the_documented_keys() -> None:
    fileio = S3FileIO.from_options({
        "s3.endpoint": "http://127.0.0.1:9", "s3.region": "eu-west-1", "s3.access-key": "AK",
        "s3.secret-key": "SK", "s3.session-token": "TOKEN", "s3.path-style-access": "TRUE",
        "warehouse": "ignored: not an s3 option"})
    assert repr(fileio) == ("S3FileIO(endpoint_url='http://127.0.0.1:9', region='eu-west-1', "
                            "path_style_access=True, credentials=<explicit, redacted>)")
    fileio.close()
    fileio = S3FileIO.from_options({"s3.path.style.access": "false"})  # Paimon's spelling
    assert "path_style_access=False" in repr(fileio) and "default chain" in repr(fileio)
    fileio.close()


@pytest.mark.parametrize(("options", "message"), [
    ({"s3.acess-key": "v4lue-s3cret"}, "unknown S3 storage option 's3.acess-key'"),
    ({"s3.path-style-access": "v4lue-s3cret"}, "must be true or false"),
    ({"s3.access-key": "v4lue-s3cret"}, "given together"),
    ({"s3.session-token": "v4lue-s3cret"}, "needs an access key"),
])
def test_from_options_rejects_bad_options_without_showing_values(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidStorageOptionError, match=message) as info:
        S3FileIO.from_options(options)
    assert isinstance(info.value, PaimonflowError | ValueError)
    assert "v4lue-s3cret" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# S3: against the test server


@pytest.fixture
def s3io(s3_storage_options: dict[str, str]) -> Iterator[S3FileIO]:
    fileio = S3FileIO.from_options(s3_storage_options)
    fileio.retry_base_seconds = 0.001
    yield fileio
    fileio.close()


@pytest.mark.s3
class TestS3CreateOutcomes:
    """How ``create_if_absent`` decides each server answer (module docstring of core/fs/s3.py)."""

    def test_conditional_conflict_409_is_retried(self, s3io: S3FileIO, s3_bucket: str,
                                                s3_test_server: S3TestServer) -> None:
        path = f"s3://{s3_bucket}/snapshot-1"
        conflict = Fault(method="PUT", path_contains="snapshot-1", status=409, code="ConditionalRequestConflict")
        with s3_test_server.inject(conflict, conflict) as app:
            assert s3io.create_if_absent(path, b"mine") is True
            assert app.pending_faults() == 0
        assert s3io.read_bytes(path) == b"mine"

    @pytest.mark.parametrize("status", [500, None], ids=["server-error", "dropped-connection"])
    def test_a_lost_success_counts_as_won(self, s3io: S3FileIO, s3_bucket: str,
                                          s3_test_server: S3TestServer, status: int | None) -> None:
        path = f"s3://{s3_bucket}/snapshot-1"
        with s3_test_server.inject(Fault(method="PUT", path_contains="snapshot-1", status=status, applied=True)):
            assert s3io.create_if_absent(path, b"mine") is True
        assert s3io.read_bytes(path) == b"mine"
        assert s3io.create_if_absent(path, b"another") is False

    @pytest.mark.parametrize("status", [500, None], ids=["server-error", "dropped-connection"])
    def test_a_failure_before_landing_is_retried(self, s3io: S3FileIO, s3_bucket: str,
                                                 s3_test_server: S3TestServer, status: int | None) -> None:
        path = f"s3://{s3_bucket}/snapshot-1"
        with s3_test_server.inject(Fault(method="PUT", path_contains="snapshot-1", status=status)) as app:
            assert s3io.create_if_absent(path, b"mine") is True
            assert app.pending_faults() == 0
        assert s3io.read_bytes(path) == b"mine"

    def test_ambiguous_attempt_then_someone_elses_object_is_lost(
            self, s3io: S3FileIO, s3_bucket: str, s3_test_server: S3TestServer,
            monkeypatch: pytest.MonkeyPatch) -> None:
        path = f"s3://{s3_bucket}/snapshot-1"
        other = s3_test_server.client()
        monkeypatch.setattr(s3io, "_backoff",
                            lambda attempt: other.put_object(Bucket=s3_bucket, Key="snapshot-1", Body=b"theirs"))
        with s3_test_server.inject(Fault(method="PUT", path_contains="snapshot-1", status=500)):
            assert s3io.create_if_absent(path, b"mine") is False
        assert s3io.read_bytes(path) == b"theirs"

    def test_ambiguous_attempt_then_412_over_our_own_bytes_is_won(
            self, s3io: S3FileIO, s3_bucket: str, s3_test_server: S3TestServer) -> None:
        path = f"s3://{s3_bucket}/snapshot-1"
        lost = Fault(method="PUT", path_contains="snapshot-1", status=None, applied=True)
        unreadable = Fault(method="GET", path_contains="snapshot-1", status=503, code="SlowDown")
        with s3_test_server.inject(lost, unreadable) as app:  # the first re-read fails
            assert s3io.create_if_absent(path, b"mine") is True
            assert app.pending_faults() == 0

    def test_an_undecidable_outcome_is_reported_as_unknown(
            self, s3io: S3FileIO, s3_bucket: str, s3_test_server: S3TestServer) -> None:
        s3io.create_attempts = 2
        dropped = Fault(method="PUT", path_contains="snapshot-1", status=None)
        unreadable = Fault(method="GET", path_contains="snapshot-1", status=503, code="SlowDown")
        with (s3_test_server.inject(dropped, dropped, unreadable, unreadable),
              pytest.raises(StorageOutcomeUnknownError, match="outcome unknown") as info):
            s3io.create_if_absent(f"s3://{s3_bucket}/snapshot-1", b"mine")
        assert isinstance(info.value, StorageError)

    def test_access_denied_is_final(self, s3io: S3FileIO, s3_bucket: str, s3_test_server: S3TestServer) -> None:
        denied = Fault(method="PUT", path_contains="snapshot-1", status=403, code="AccessDenied")
        with s3_test_server.inject(denied, denied) as app:
            with pytest.raises(StorageError, match="AccessDenied") as info:
                s3io.create_if_absent(f"s3://{s3_bucket}/snapshot-1", b"mine")
            assert app.pending_faults() == 1, "a definitive refusal is not retried"
        assert not isinstance(info.value, StorageOutcomeUnknownError)
        assert not s3io.exists(f"s3://{s3_bucket}/snapshot-1")

    def test_running_out_of_conflict_retries_is_a_plain_error(
            self, s3io: S3FileIO, s3_bucket: str, s3_test_server: S3TestServer) -> None:
        s3io.create_attempts = 3
        conflict = Fault(method="PUT", path_contains="snapshot-1", status=409, code="ConditionalRequestConflict")
        with (s3_test_server.inject(*[conflict] * 3),
              pytest.raises(StorageError, match="gave up after 3 attempts") as info):
            s3io.create_if_absent(f"s3://{s3_bucket}/snapshot-1", b"mine")
        assert not isinstance(info.value, StorageOutcomeUnknownError)


@pytest.mark.s3
def test_list_and_recursive_delete_paginate(s3io: S3FileIO, s3_bucket: str) -> None:
    s3io.list_page_size = 2
    root = f"s3://{s3_bucket}/many"
    names = [f"f{i}" for i in range(5)] + [f"d{i}/x" for i in range(3)]
    for name in names:
        s3io.write_bytes(join(root, name), b"x")
    listing = s3io.list_dir(root)
    assert [s.path.rsplit("/", 1)[1] for s in listing] == ["d0", "d1", "d2", "f0", "f1", "f2", "f3", "f4"]
    assert s3io.delete(root, recursive=True) is True
    assert s3io.list_dir(root) == []


@pytest.mark.s3
def test_directory_marker_objects_are_not_children(s3io: S3FileIO, s3_bucket: str,
                                                   s3_test_server: S3TestServer) -> None:
    client = s3_test_server.client()
    client.put_object(Bucket=s3_bucket, Key="wh/db/", Body=b"")  # as some tools create folders
    client.put_object(Bucket=s3_bucket, Key="wh/db/t", Body=b"x")
    assert [s.path for s in s3io.list_dir(f"s3://{s3_bucket}/wh")] == [f"s3://{s3_bucket}/wh/db"]
    assert [s.path for s in s3io.list_dir(f"s3://{s3_bucket}/wh/db")] == [f"s3://{s3_bucket}/wh/db/t"]
    assert s3io.status(f"s3://{s3_bucket}/wh/db").is_dir


@pytest.mark.s3
def test_s3a_uris_address_the_same_objects(s3_bucket: str, s3_storage_options: dict[str, str]) -> None:
    fileio = get_file_io(f"s3a://{s3_bucket}/wh", s3_storage_options)
    try:
        fileio.write_bytes(f"s3://{s3_bucket}/wh/f", b"x")
        assert fileio.read_bytes(f"s3a://{s3_bucket}/wh/f") == b"x"
        assert [s.path for s in fileio.list_dir(f"s3a://{s3_bucket}/wh")] == [f"s3a://{s3_bucket}/wh/f"]
    finally:
        fileio.close()  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# S3: secrets


CANARIES = {
    "s3.access-key": "AKIACANARYACCESSKEY7",
    "s3.secret-key": "canary/Secret+Key=do-not-leak",
    "s3.session-token": "canary-session-token-do-not-leak",
}


def _everything_said_about(exc: BaseException) -> str:
    """str and repr of an exception and of every cause and context, plus the traceback."""
    parts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


def _assert_no_canary(text: str) -> None:
    for key, canary in CANARIES.items():
        assert canary not in text, f"the {key} value leaked"


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.s3
def test_secrets_never_appear_in_repr_errors_or_logs(s3_bucket: str, s3_storage_options: dict[str, str],
                                                     s3_test_server: S3TestServer,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fileio = S3FileIO.from_options({**s3_storage_options, **CANARIES})
    fileio.retry_base_seconds = 0.001
    fileio.create_attempts = 2
    root = f"s3://{s3_bucket}/wh"
    _assert_no_canary(repr(fileio) + str(fileio))

    fileio.write_bytes(f"{root}/f", b"x")  # the credentials work; now make things fail
    assert fileio.create_if_absent(f"{root}/f", b"y") is False
    errors: list[BaseException] = []
    for call in (lambda: fileio.read_bytes(f"{root}/missing"), lambda: fileio.status(f"{root}/missing"),
                 lambda: fileio.rename(f"{root}/missing", f"{root}/g")):
        with pytest.raises(FileNotFoundStorageError) as info:
            call()
        errors.append(info.value)
    denied = Fault(method="PUT", path_contains="denied", status=403, code="AccessDenied")
    dropped = Fault(method="PUT", path_contains="dropped", status=None)
    unreadable = Fault(method="GET", path_contains="dropped", status=500)
    with s3_test_server.inject(denied, dropped, dropped, unreadable, unreadable):
        with pytest.raises(StorageError) as info:
            fileio.create_if_absent(f"{root}/denied", b"x")
        errors.append(info.value)
        with pytest.raises(StorageOutcomeUnknownError) as info:
            fileio.create_if_absent(f"{root}/dropped", b"x")
        errors.append(info.value)
    with pytest.raises(InvalidStorageOptionError) as info:
        S3FileIO.from_options({**CANARIES, "s3.secret-key-typo": CANARIES["s3.secret-key"]})
    errors.append(info.value)
    fileio.close()

    unreachable = S3FileIO.from_options({**CANARIES, "s3.endpoint": _dead_endpoint(), "s3.region": "us-east-1"})
    unreachable.retry_base_seconds = 0.001
    unreachable.create_attempts = 2
    for call in (lambda: unreachable.exists(f"{root}/f"), lambda: unreachable.create_if_absent(f"{root}/f", b"x")):
        with pytest.raises(StorageError) as info:
            call()
        errors.append(info.value)
    unreachable.close()

    for error in errors:
        _assert_no_canary(_everything_said_about(error))
    assert any(r.name.startswith("botocore") for r in caplog.records), "botocore DEBUG records were captured"
    _assert_no_canary("\n".join(r.getMessage() for r in caplog.records))
    _assert_no_canary(caplog.text)


def test_an_unreachable_server_is_a_plain_error_not_an_unknown_outcome() -> None:
    fileio = S3FileIO(endpoint_url=_dead_endpoint(), region="us-east-1", access_key_id="a", secret_access_key="b",
                      verify_conditional_writes=False)  # the create's own retries are under test
    fileio.retry_base_seconds = 0.001
    fileio.create_attempts = 2
    with pytest.raises(StorageError, match="gave up after 2 attempts") as info:
        fileio.create_if_absent("s3://bucket/snapshot-1", b"x")
    assert not isinstance(info.value, StorageOutcomeUnknownError), "nothing was sent, so nothing landed"
    fileio.close()


@pytest.mark.s3
def test_a_store_that_ignores_conditional_writes_is_refused_before_any_commit(
        s3_bucket: str, s3_storage_options: dict[str, str], s3_test_server: S3TestServer) -> None:
    """Some S3-compatible stores ignore If-None-Match: two writers could then both "create" one
    snapshot. The first create checks the store once per bucket and refuses to commit there."""
    from paimonflow.core import Catalog

    warehouse = f"s3://{s3_bucket}/wh"
    catalog = Catalog(warehouse, storage_options=s3_storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    with s3_test_server.without_conditional_writes():
        fresh = Catalog(warehouse, storage_options=s3_storage_options).get_table("db.t")
        with pytest.raises(UnsupportedError, match="ignores conditional writes"):
            fresh.write(pa.table({"id": [1]}))
        assert fresh.latest_snapshot() is None  # nothing was published
        # a single writer on such a store may opt out of the check
        single = Catalog(warehouse, storage_options={**s3_storage_options,
                                                     "s3.verify-conditional-writes": "false"}).get_table("db.t")
        assert single.write(pa.table({"id": [1]})).snapshot_id == 1
    # on a store that honours it the check passes, once, and leaves no probe object behind
    assert table.write(pa.table({"id": [2]})).snapshot_id == 2
    keys = [o["Key"] for o in s3_test_server.client().list_objects_v2(Bucket=s3_bucket).get("Contents", [])]
    assert not [k for k in keys if "conditional-write-probe" in k], keys
    assert sorted(table.read().column("id").to_pylist()) == [1, 2]
