"""Fixtures of the interop tests: the Java peer's JVM, started once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .java_peer import JavaPeer


@pytest.fixture(scope="session")
def java_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaPeer]:
    """Apache Paimon's Java core (0.9) in one JVM for the whole run (`make java-peer` builds it)."""
    peer = JavaPeer(tmp_path_factory.mktemp("java-peer"))
    yield peer
    peer.close()
