"""Build the Java interop peer (tests/interop/java_peer.py) from the package registries only.

Apache Paimon's Java core 0.9 comes from pypaimon 0.2.0's source distribution on PyPI
(``deps/jars/paimon-python-java-bridge-0.9.0.jar``, Paimon's catalog, table, merge tree, formats and
manifests with shaded dependencies); Paimon's Parquet and ORC formats need Hadoop's client jars,
which PySpark's wheel ships. The peer program is compiled with the JDK's ``javac``. Nothing built
here is committed; everything lands in ``build/java-peer``.

Usage: python scripts/build_java_peer.py [--out build/java-peer]   (run by `make java-peer`)
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "interop" / "java" / "PaimonPeer.java"
SDIST = "pypaimon==0.2.0"
JAR_MEMBER = "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
JAR_SHA256 = "dc9048366715fc75d2b44e3f8ac1dbfab011b8c34aafc26ffa216500fb890b0e"
QUIET_LOGS = "log4j.rootLogger=WARN, err\nlog4j.appender.err=org.apache.log4j.ConsoleAppender\n" \
             "log4j.appender.err.Target=System.err\nlog4j.appender.err.layout=org.apache.log4j.PatternLayout\n" \
             "log4j.appender.err.layout.ConversionPattern=%p %c: %m%n\n"
QUIET_LOGS2 = "rootLogger.level=warn\nrootLogger.appenderRef.err.ref=err\nappender.err.type=Console\n" \
              "appender.err.name=err\nappender.err.target=SYSTEM_ERR\nappender.err.layout.type=PatternLayout\n" \
              "appender.err.layout.pattern=%p %c: %m%n\n"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_paimon_jar(out: Path) -> Path:
    jar = out / "paimon-python-java-bridge-0.9.0.jar"
    if jar.exists() and sha256(jar) == JAR_SHA256:
        return jar
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        SDIST, "-d", tmp], check=True)
        (sdist,) = Path(tmp).glob("pypaimon-0.2.0.tar.gz")
        with tarfile.open(sdist) as archive:
            member = archive.getmember(JAR_MEMBER)
            with archive.extractfile(member) as src, (out / "jar.part").open("wb") as dst:
                shutil.copyfileobj(src, dst)
    got = sha256(out / "jar.part")
    if got != JAR_SHA256:
        raise SystemExit(f"{JAR_MEMBER} has sha256 {got}, expected {JAR_SHA256}")
    (out / "jar.part").rename(jar)
    return jar


def hadoop_jars() -> list[Path]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar")) + sorted(jars.glob("hadoop-client-runtime-*.jar"))
    if len(found) != 2:
        raise SystemExit(f"PySpark's Hadoop client jars are missing from {jars}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "java-peer")
    out = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if shutil.which("javac") is None:
        raise SystemExit("javac is missing: the Java interop peer needs a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    classpath = [fetch_paimon_jar(out), *hadoop_jars()]
    classes = out / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir()
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", ":".join(map(str, classpath)), str(SOURCE)],
                   check=True)
    (out / "log4j.properties").write_text(QUIET_LOGS)
    (out / "log4j2.properties").write_text(QUIET_LOGS2)
    (out / "classpath").write_text(":".join(map(str, classpath)) + "\n")
    print(f"java peer: Apache Paimon 0.9.0 (Java) in {out}")


if __name__ == "__main__":
    main()
