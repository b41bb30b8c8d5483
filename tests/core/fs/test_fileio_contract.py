"""The FileIO contract: one suite that every storage backend passes.

:class:`FileIOContract` holds the tests; each backend's class inherits it and provides ``root``
(a fresh directory, spelled as that backend's users spell it) and ``storage_options``. The
``fileio`` under test comes from ``get_file_io(root, storage_options)``, as a Catalog gets it.

The create-if-absent race runs through one harness (``race``): P spawned processes x T threads
per process race for one key per round, released together by a barrier; every round must have
exactly one winner whose bytes are what is stored. The harness is checked against a deliberately
broken check-then-write publish, which it must catch.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import queue
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimonflow.core.errors import FileNotFoundStorageError, PaimonflowError, StorageError
from paimonflow.core.fs import FileIO, LocalFileIO, S3FileIO, get_file_io, join
from tests.s3server import S3TestServer

BARRIER_TIMEOUT_S = 60.0
NAIVE_WINDOW_S = 0.05  # check-then-write: a gap between check and write longer than the barrier release spread


# ---------------------------------------------------------------------------------------------
# the race harness (module level: spawned processes import it)


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceSpec:
    """Everything a racer needs; picklable."""

    root: str
    storage_options: dict[str, str] = field(default_factory=dict)
    rounds: int
    processes: int = 1
    threads: int
    publish: str = "create_if_absent"  # or "check_then_write", the negative control

    @property
    def racers(self) -> int:
        return self.processes * self.threads


def race_key(spec: RaceSpec, round_: int) -> str:
    return join(spec.root, "race", f"snapshot-{round_}")


def racer_payload(process: int, thread: int, round_: int) -> bytes:
    return f"process {process} thread {thread} round {round_} ".encode() * 64


def check_then_write(fileio: FileIO, path: str, data: bytes) -> bool:
    """The broken publish the harness must catch: look, then write (pypaimon's shape)."""
    if fileio.exists(path):
        return False
    time.sleep(NAIVE_WINDOW_S)
    fileio.write_bytes(path, data)
    return True


def run_racers(spec: RaceSpec, process: int, barrier: threading.Barrier) -> list[tuple[int, int, bool]]:
    """Run this process's threads through every round; ``(round, thread, won)`` per attempt."""
    fileio = get_file_io(spec.root, spec.storage_options)
    publish = check_then_write if spec.publish == "check_then_write" else type(fileio).create_if_absent
    results: list[tuple[int, int, bool]] = []
    errors: list[str] = []

    def racer(thread: int) -> None:
        try:
            for round_ in range(spec.rounds):
                barrier.wait(timeout=BARRIER_TIMEOUT_S)
                won = publish(fileio, race_key(spec, round_), racer_payload(process, thread, round_))
                results.append((round_, thread, won))
        except BaseException:
            errors.append(traceback.format_exc())
            barrier.abort()

    threads = [threading.Thread(target=racer, args=(t,), name=f"racer-{process}-{t}") for t in range(spec.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if isinstance(fileio, S3FileIO):
        fileio.close()
    if errors:
        raise RuntimeError(f"racer failed in process {process}:\n" + "\n".join(errors))
    return results


def race_process_main(spec: RaceSpec, process: int, barrier: Any, results: Any) -> None:
    try:
        results.put((process, run_racers(spec, process, barrier), None))
    except BaseException:
        results.put((process, [], traceback.format_exc()))


def race(spec: RaceSpec) -> dict[int, list[tuple[int, int]]]:
    """Run the race; winners per round as ``(process, thread)``."""
    if spec.processes == 1:
        outcomes = [(0, run_racers(spec, 0, threading.Barrier(spec.threads)))]
    else:
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(spec.racers)
        results = ctx.Queue()
        procs = [ctx.Process(target=race_process_main, args=(spec, p, barrier, results), name=f"race-{p}")
                 for p in range(spec.processes)]
        for p in procs:
            p.start()
        outcomes, failures = [], []
        try:
            for _ in procs:
                process, rows, error = results.get(timeout=BARRIER_TIMEOUT_S * 2)
                if error:
                    failures.append(error)
                outcomes.append((process, rows))
        except queue.Empty:
            failures.append("a racer process did not report")
        finally:
            for p in procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.kill()
                    p.join()
        assert not failures, "\n".join(failures)
    winners: dict[int, list[tuple[int, int]]] = defaultdict(list)
    attempts = 0
    for process, rows in outcomes:
        for round_, thread, won in rows:
            attempts += 1
            if won:
                winners[round_].append((process, thread))
    assert attempts == spec.rounds * spec.racers, "every racer must report every round"
    return winners


def assert_one_winner_per_round(fileio: FileIO, spec: RaceSpec, winners: dict[int, list[tuple[int, int]]]) -> None:
    bad = {r: winners.get(r, []) for r in range(spec.rounds) if len(winners.get(r, [])) != 1}
    assert not bad, f"rounds without exactly one winner (round: winners): {bad}"
    for round_ in range(spec.rounds):
        (process, thread), = winners[round_]
        assert fileio.read_bytes(race_key(spec, round_)) == racer_payload(process, thread, round_)
    names = {s.path.rsplit("/", 1)[-1] for s in fileio.list_dir(join(spec.root, "race"))}
    assert names == {f"snapshot-{r}" for r in range(spec.rounds)}, "no temp files may be left behind"


# ---------------------------------------------------------------------------------------------
# the contract


class FileIOContract:
    """Every backend's test class inherits this and overrides ``root`` (and ``storage_options``)."""

    thread_race: ClassVar[tuple[int, int]] = (8, 40)  # threads, rounds
    process_race: ClassVar[tuple[int, int, int]] = (3, 4, 25)  # processes, threads, rounds

    @pytest.fixture
    def root(self) -> str:
        raise NotImplementedError("a backend's test class provides a fresh root directory")

    @pytest.fixture
    def storage_options(self) -> dict[str, str]:
        return {}

    @pytest.fixture
    def fileio(self, root: str, storage_options: dict[str, str]) -> Iterator[FileIO]:
        fileio = get_file_io(root, storage_options)
        yield fileio
        close = getattr(fileio, "close", None)
        if close is not None:
            close()

    # -- reading and writing -----------------------------------------------------------------

    def test_satisfies_the_protocol(self, fileio: FileIO) -> None:
        assert isinstance(fileio, FileIO)

    @pytest.mark.parametrize("size", [0, 1, 300_000])
    def test_write_then_read_roundtrip(self, fileio: FileIO, root: str, size: int) -> None:
        data = os.urandom(size)
        path = join(root, "data", f"file-{size}.bin")
        fileio.write_bytes(path, data)
        assert fileio.read_bytes(path) == data
        with fileio.open_input(path) as stream:
            assert stream.read() == data

    def test_write_replaces_existing_content(self, fileio: FileIO, root: str) -> None:
        path = join(root, "LATEST")
        fileio.write_bytes(path, b"1234567890")
        fileio.write_bytes(path, b"42")
        assert fileio.read_bytes(path) == b"42"
        assert fileio.status(path).size == 2

    def test_write_creates_parent_directories(self, fileio: FileIO, root: str) -> None:
        path = join(root, "a", "b", "c", "leaf")
        fileio.write_bytes(path, b"x")
        assert fileio.exists(join(root, "a", "b"))
        assert fileio.status(join(root, "a")).is_dir

    def test_readers_see_old_or_new_bytes_while_overwritten(self, fileio: FileIO, root: str) -> None:
        path = join(root, "hint")
        old, new = b"o" * 200_000, b"n" * 100_000
        fileio.write_bytes(path, old)
        seen: set[bytes] = set()
        done = threading.Event()

        def read_until_done() -> None:
            while not done.is_set():
                seen.add(fileio.read_bytes(path))

        reader = threading.Thread(target=read_until_done)
        reader.start()
        try:
            for i in range(10):
                fileio.write_bytes(path, new if i % 2 == 0 else old)
        finally:
            done.set()
            reader.join()
        assert seen <= {old, new}

    def test_missing_files_raise_typed_errors(self, fileio: FileIO, root: str) -> None:
        missing = join(root, "no", "such-file")
        for call in (fileio.read_bytes, fileio.open_input, fileio.status):
            with pytest.raises(FileNotFoundStorageError) as info:
                call(missing)
            assert isinstance(info.value, StorageError | FileNotFoundError | PaimonflowError)
            assert missing in str(info.value)
        assert fileio.exists(missing) is False

    def test_open_input_is_seekable(self, fileio: FileIO, root: str) -> None:
        path = join(root, "bytes")
        fileio.write_bytes(path, bytes(range(256)))
        with fileio.open_input(path) as stream:
            assert stream.seekable()
            stream.seek(10)
            assert stream.read(5) == bytes(range(10, 15))
            assert stream.tell() == 15
            stream.seek(-3, io.SEEK_END)
            assert stream.read() == bytes([253, 254, 255])

    # -- create_if_absent --------------------------------------------------------------------

    def test_create_if_absent_is_exclusive(self, fileio: FileIO, root: str) -> None:
        path = join(root, "snapshot", "snapshot-1")
        assert fileio.create_if_absent(path, b"first") is True
        assert fileio.create_if_absent(path, b"second") is False
        assert fileio.create_if_absent(path, b"first") is False, "even with the same bytes"
        assert fileio.read_bytes(path) == b"first"

    def test_create_if_absent_refuses_a_file_written_otherwise(self, fileio: FileIO, root: str) -> None:
        path = join(root, "snapshot", "snapshot-2")
        fileio.write_bytes(path, b"plain write")
        assert fileio.create_if_absent(path, b"mine") is False
        assert fileio.read_bytes(path) == b"plain write"

    def test_create_if_absent_leaves_only_the_target(self, fileio: FileIO, root: str) -> None:
        directory = join(root, "snapshot")
        assert fileio.create_if_absent(join(directory, "snapshot-1"), b"1") is True
        assert fileio.create_if_absent(join(directory, "snapshot-1"), b"2") is False
        assert [s.path for s in fileio.list_dir(directory)] == [join(directory, "snapshot-1")]

    def test_create_if_absent_publishes_whole_content(self, fileio: FileIO, root: str) -> None:
        path = join(root, "snapshot", "snapshot-big")
        data = os.urandom(2 * 1024 * 1024)
        seen: list[int] = []
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                try:
                    got = fileio.read_bytes(path)
                except FileNotFoundStorageError:
                    continue
                seen.append(len(got))
                assert got == data, f"a reader saw {len(got)} of {len(data)} bytes"

        reader = threading.Thread(target=poll)
        reader.start()
        try:
            assert fileio.create_if_absent(path, data) is True
            time.sleep(0.05)
        finally:
            done.set()
            reader.join()
        assert fileio.read_bytes(path) == data
        assert all(n == len(data) for n in seen)

    def test_create_if_absent_race_between_threads(self, fileio: FileIO, root: str,
                                                   storage_options: dict[str, str]) -> None:
        threads, rounds = self.thread_race
        spec = RaceSpec(root=root, storage_options=storage_options, threads=threads, rounds=rounds)
        assert_one_winner_per_round(fileio, spec, race(spec))

    def test_create_if_absent_race_between_processes(self, fileio: FileIO, root: str,
                                                     storage_options: dict[str, str]) -> None:
        processes, threads, rounds = self.process_race
        spec = RaceSpec(root=root, storage_options=storage_options, processes=processes, threads=threads,
                        rounds=rounds)
        assert_one_winner_per_round(fileio, spec, race(spec))

    def test_race_harness_catches_check_then_write(self, fileio: FileIO, root: str,
                                                   storage_options: dict[str, str]) -> None:
        """Negative control: the same harness must see a broken publish produce double winners."""
        spec = RaceSpec(root=root, storage_options=storage_options, processes=2, threads=3, rounds=5,
                        publish="check_then_write")
        winners = race(spec)
        doubles = [r for r in range(spec.rounds) if len(winners.get(r, [])) > 1]
        assert doubles, "check-then-write never produced two winners: the race harness is blind"
        with pytest.raises(AssertionError, match="without exactly one winner"):
            assert_one_winner_per_round(fileio, spec, winners)

    # -- metadata --------------------------------------------------------------------------------

    def test_exists_for_files_and_directories(self, fileio: FileIO, root: str) -> None:
        fileio.write_bytes(join(root, "dir", "file"), b"x")
        assert fileio.exists(join(root, "dir", "file"))
        assert fileio.exists(join(root, "dir"))
        assert not fileio.exists(join(root, "dir", "fil"))
        assert not fileio.exists(join(root, "di"))

    def test_status_of_a_file(self, fileio: FileIO, root: str) -> None:
        path = join(root, "f.bin")
        before = time.time() * 1000
        fileio.write_bytes(path, b"12345")
        after = time.time() * 1000
        status = fileio.status(path)
        assert (status.path, status.size, status.is_dir) == (path, 5, False)
        # S3 keeps whole seconds; allow a little clock skew either side
        assert before - 2_000 <= status.modification_time_millis <= after + 2_000

    def test_status_of_a_directory(self, fileio: FileIO, root: str) -> None:
        fileio.write_bytes(join(root, "d", "f"), b"x")
        status = fileio.status(join(root, "d"))
        assert (status.path, status.size, status.is_dir) == (join(root, "d"), 0, True)

    def test_list_dir_returns_direct_children(self, fileio: FileIO, root: str) -> None:
        directory = join(root, "table")
        fileio.write_bytes(join(directory, "a"), b"abc")
        fileio.write_bytes(join(directory, "b"), b"")
        fileio.write_bytes(join(directory, "sub", "c"), b"c")
        fileio.write_bytes(join(directory, "sub", "deeper", "d"), b"d")
        fileio.write_bytes(join(root, "table-sibling", "e"), b"e")
        listing = fileio.list_dir(directory)
        assert [(s.path, s.is_dir) for s in listing] == [
            (join(directory, "a"), False), (join(directory, "b"), False), (join(directory, "sub"), True)]
        assert [s.size for s in listing if not s.is_dir] == [3, 0]
        assert [s.path.rsplit("/", 1)[1] for s in fileio.list_dir(directory + "/")] == ["a", "b", "sub"]

    def test_list_dir_of_a_missing_directory_is_empty(self, fileio: FileIO, root: str) -> None:
        assert fileio.list_dir(join(root, "nothing-here")) == []

    def test_list_files_by_prefix(self, fileio: FileIO, root: str) -> None:
        directory = join(root, "snapshot")
        for name in ("snapshot-1", "snapshot-10", ".snapshot-1.a.tmp", ".snapshot-10.b.tmp", "LATEST"):
            fileio.write_bytes(join(directory, name), name.encode())
        fileio.write_bytes(join(directory, ".snapshot-1.dir", "x"), b"x")  # a directory is no file
        listed = fileio.list_files(directory, ".snapshot-1.")
        assert [s.path for s in listed] == [join(directory, ".snapshot-1.a.tmp")]
        assert listed[0].size == len(".snapshot-1.a.tmp") and not listed[0].is_dir
        assert [s.path.rsplit("/", 1)[1] for s in fileio.list_files(directory, "snapshot-1")] == [
            "snapshot-1", "snapshot-10"]
        assert fileio.list_files(join(root, "nothing-here"), "x") == []

    def test_names_with_special_characters(self, fileio: FileIO, root: str) -> None:
        names = ["dt=2024-01-01", "a b", "100%25", "ümlaut.parquet", "x+y&z", "semi;colon"]
        for name in names:
            fileio.write_bytes(join(root, "odd", name, "f"), name.encode())
        assert sorted(s.path.rsplit("/", 1)[1] for s in fileio.list_dir(join(root, "odd"))) == sorted(names)
        for name in names:
            assert fileio.read_bytes(join(root, "odd", name, "f")) == name.encode()

    # -- delete, rename, mkdirs ----------------------------------------------------------------

    def test_delete_a_file(self, fileio: FileIO, root: str) -> None:
        path = join(root, "doomed")
        fileio.write_bytes(path, b"x")
        assert fileio.delete(path) is True
        assert not fileio.exists(path)
        assert fileio.delete(path) is False, "idempotent"

    @pytest.mark.parametrize("recursive", [False, True])
    def test_delete_of_nothing_is_false(self, fileio: FileIO, root: str, recursive: bool) -> None:
        assert fileio.delete(join(root, "ghost"), recursive=recursive) is False

    def test_delete_recursive_removes_the_tree_only(self, fileio: FileIO, root: str) -> None:
        for name in ("tree/a", "tree/sub/b", "tree/sub/deeper/c", "tree2/keep", "tree-x"):
            fileio.write_bytes(join(root, name), b"x")
        assert fileio.delete(join(root, "tree"), recursive=True) is True
        assert not fileio.exists(join(root, "tree"))
        assert fileio.list_dir(join(root, "tree")) == []
        assert fileio.read_bytes(join(root, "tree2", "keep")) == b"x"
        assert fileio.read_bytes(join(root, "tree-x")) == b"x"
        assert fileio.delete(join(root, "tree"), recursive=True) is False

    def test_delete_of_a_non_empty_directory_needs_recursive(self, fileio: FileIO, root: str) -> None:
        fileio.write_bytes(join(root, "full", "f"), b"x")
        with pytest.raises(StorageError):
            fileio.delete(join(root, "full"))
        assert fileio.read_bytes(join(root, "full", "f")) == b"x"

    def test_rename_moves_a_file(self, fileio: FileIO, root: str) -> None:
        src, dst = join(root, "tmp", "a"), join(root, "final", "nested", "b")
        fileio.write_bytes(src, b"payload")
        fileio.rename(src, dst)
        assert fileio.read_bytes(dst) == b"payload"
        assert not fileio.exists(src)

    def test_rename_never_replaces_the_target(self, fileio: FileIO, root: str) -> None:
        src, dst = join(root, "a"), join(root, "b")
        fileio.write_bytes(src, b"new")
        fileio.write_bytes(dst, b"old")
        with pytest.raises(StorageError, match="exists"):
            fileio.rename(src, dst)
        assert fileio.read_bytes(src) == b"new"
        assert fileio.read_bytes(dst) == b"old"

    def test_rename_of_a_missing_source(self, fileio: FileIO, root: str) -> None:
        with pytest.raises(FileNotFoundStorageError):
            fileio.rename(join(root, "absent"), join(root, "target"))
        assert not fileio.exists(join(root, "target"))

    def test_mkdirs_is_idempotent(self, fileio: FileIO, root: str) -> None:
        directory = join(root, "made", "here")
        fileio.mkdirs(directory)
        fileio.mkdirs(directory)
        fileio.write_bytes(join(directory, "f"), b"x")
        assert [s.path for s in fileio.list_dir(directory)] == [join(directory, "f")]

    # -- pyarrow ---------------------------------------------------------------------------------

    def test_arrow_filesystem_reads_and_writes_parquet(self, fileio: FileIO, root: str) -> None:
        filesystem, to_arrow = fileio.arrow_filesystem()
        table = pa.table({"id": [1, 2, 3], "name": ["a", "b", None]})
        by_arrow, by_us = join(root, "data", "by-arrow.parquet"), join(root, "data", "by-us.parquet")
        fileio.mkdirs(join(root, "data"))
        pq.write_table(table, to_arrow(by_arrow), filesystem=filesystem)
        assert fileio.status(by_arrow).size > 0
        assert pq.read_table(io.BytesIO(fileio.read_bytes(by_arrow))).equals(table)
        sink = io.BytesIO()
        pq.write_table(table, sink)
        fileio.write_bytes(by_us, sink.getvalue())
        assert pq.read_table(to_arrow(by_us), filesystem=filesystem).equals(table)
        with fileio.open_input(by_us) as stream:
            assert pq.read_table(stream).equals(table)
        fileio.sync(by_arrow)  # what a streamed data file gets before a snapshot may name it
        assert pq.read_table(io.BytesIO(fileio.read_bytes(by_arrow))).equals(table)


# ---------------------------------------------------------------------------------------------
# the backends


class TestLocalFileIO(FileIOContract):
    """Local disk, plain absolute paths."""

    process_race: ClassVar[tuple[int, int, int]] = (4, 8, 50)  # processes, threads, rounds
    thread_race: ClassVar[tuple[int, int]] = (8, 100)  # threads, rounds

    @pytest.fixture
    def root(self, tmp_path: Any) -> str:
        return str(tmp_path / "root")

    def test_get_file_io_picks_local(self, fileio: FileIO) -> None:
        assert isinstance(fileio, LocalFileIO)


class TestLocalFileIOWithFileUris(FileIOContract):
    """Local disk addressed by ``file://`` URIs (statuses keep that spelling)."""

    @pytest.fixture
    def root(self, tmp_path: Any) -> str:
        return f"file://{tmp_path}/root"


@pytest.mark.s3
class TestS3FileIO(FileIOContract):
    """S3: moto's server on 127.0.0.1 with requests serialized (tests/s3server.py)."""

    thread_race: ClassVar[tuple[int, int]] = (8, 20)  # threads, rounds
    process_race: ClassVar[tuple[int, int, int]] = (4, 8, 25)  # processes, threads, rounds

    @pytest.fixture
    def root(self, s3_bucket: str) -> str:
        return f"s3://{s3_bucket}/warehouse"

    @pytest.fixture
    def storage_options(self, s3_storage_options: dict[str, str]) -> dict[str, str]:
        return s3_storage_options

    def test_get_file_io_picks_s3(self, fileio: FileIO) -> None:
        assert isinstance(fileio, S3FileIO)

    def test_server_listens_on_loopback_only(self, s3_test_server: S3TestServer) -> None:
        assert s3_test_server.host == "127.0.0.1"
        assert s3_test_server.endpoint_url.startswith("http://127.0.0.1:")


@pytest.mark.s3
def test_serialization_is_what_makes_the_test_server_atomic(
        s3_test_server: S3TestServer, s3_bucket: str, s3_storage_options: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control for the S3 server: moto checks ``If-None-Match`` and then stores, with no
    lock between. Widened to 20 ms, that gap lets racers double-win on plain moto, and the same
    race has exactly one winner per round once requests are serialized."""
    from moto.s3.models import S3Backend

    store = S3Backend.put_object

    def slow_store(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.02)
        return store(self, *args, **kwargs)

    monkeypatch.setattr(S3Backend, "put_object", slow_store)
    plain = RaceSpec(root=f"s3://{s3_bucket}/plain", storage_options=s3_storage_options, threads=6, rounds=3)
    with s3_test_server.unserialized():
        winners = race(plain)
    assert any(len(w) > 1 for w in winners.values()), "plain moto should have let two racers win"

    serialized = RaceSpec(root=f"s3://{s3_bucket}/serialized", storage_options=s3_storage_options,
                          threads=6, rounds=3)
    fileio = get_file_io(serialized.root, s3_storage_options)
    try:
        assert_one_winner_per_round(fileio, serialized, race(serialized))
    finally:
        fileio.close()  # type: ignore[attr-defined]
