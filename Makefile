# The two commands: `make demo` and `make test`. Both build what they need from this repository's files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYPAIMON_VENV := .venv-pypaimon
STAMP := $(VENV)/.installed-$(shell cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)
PYPAIMON_STAMP := $(PYPAIMON_VENV)/.installed-2.1.0

.PHONY: demo test test-fast lint dist bench java-check chromium-check postgres-check clean venv pypaimon-venv java-peer reliability-long differential-long

venv: $(STAMP)
$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,s3,spark,airflow,lineage,dagster]'
	# The Airflow Spark provider hard-requires pyspark-client, which overwrites pyspark's own files:
	# install it without dependencies (docs/airflow.md).
	$(PY) -m pip install --quiet --no-deps 'apache-airflow-providers-apache-spark==6.3.4'
	rm -f $(VENV)/.installed-*; touch $@

# pypaimon (the interop peer) pins pyarrow<20 and fsspec<2026: it gets an environment of its own.
pypaimon-venv: $(PYPAIMON_STAMP)
$(PYPAIMON_STAMP):
	$(PYTHON) -m venv $(PYPAIMON_VENV)
	$(PYPAIMON_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PYPAIMON_VENV)/bin/python -m pip install --quiet 'pypaimon==2.1.0'
	touch $@

# Apache Paimon's Java core (0.9), the second interop peer: its jar from pypaimon 0.2.0's sdist on PyPI,
# Hadoop's client jars from PySpark's wheel, a driver compiled with javac (tests/interop/java_peer.py).
JAVA_PEER_STAMP := build/java-peer/classes/PaimonPeer.class
java-peer: $(JAVA_PEER_STAMP)
$(JAVA_PEER_STAMP): tests/interop/java/PaimonPeer.java scripts/build_java_peer.py $(STAMP)
	@command -v javac >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless; \
	  else echo "The Java interop peer needs a JDK: sudo apt-get install openjdk-17-jdk-headless"; exit 1; fi; }
	$(PY) scripts/build_java_peer.py --out build/java-peer

# Headless Chromium renders the Airflow table-health page in the tests (Debian package 'chromium').
chromium-check:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "The tests need Chromium: sudo apt-get install chromium (Debian/Ubuntu)"; exit 1; fi; }

# PostgreSQL (Debian package 'postgresql') is the metadata database of the Airflow deployment test;
# the test starts its own throwaway server on 127.0.0.1, so the package's default cluster is not created.
postgres-check:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    mkdir -p /etc/postgresql-common; \
	    [ -e /etc/postgresql-common/createcluster.conf ] || echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold postgresql; \
	  else echo "The tests need PostgreSQL's server binaries: sudo apt-get install postgresql (Debian/Ubuntu)"; exit 1; fi; }

java-check:
	@$(PYTHON) scripts/check_java.py

demo: venv java-check
	$(PY) -m paimonflow.dags_examples.demo $(DEMO_ARGS)

test: venv pypaimon-venv java-peer chromium-check postgres-check lint
	PAIMONFLOW_PYPAIMON_PYTHON=$(CURDIR)/$(PYPAIMON_VENV)/bin/python $(PY) -m pytest --durations=30

test-fast: venv
	$(PY) -m pytest -m "not slow and not interop"

# ruff, then mypy on the paimonflow package. The package has no folder of its own (setup.cfg maps
# paimonflow.core onto core/, ...) and mypy cannot follow setuptools' editable-install import hook,
# so build/typecheck/paimonflow/ links each top-level folder under its package name and mypy runs
# there, with the [tool.mypy] settings of pyproject.toml.
PACKAGES := core jobs operators sensors plugins dags_examples
TYPECHECK := build/typecheck

lint: venv
	$(VENV)/bin/ruff check $(PACKAGES) tests bench
	mkdir -p $(TYPECHECK)/paimonflow
	for p in $(PACKAGES); do ln -sfn ../../../$$p $(TYPECHECK)/paimonflow/$$p; done
	cd $(TYPECHECK) && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml \
	  $(addprefix -p paimonflow.,$(PACKAGES))

# The package as a source distribution and a wheel in dist/ (`python -m build`: the sdist first, then
# the wheel from the unpacked sdist, so a file the sdist lacks is missing from the wheel too), built by
# the venv's own setuptools without build isolation: nothing is downloaded. The sdist step leaves
# paimonflow.egg-info in this folder, where `python -m pytest` would find it before the venv's own
# metadata: it goes. tests/test_dist.py installs both into a fresh venv and runs the installed CLI.
dist: venv
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist .
	rm -rf paimonflow.egg-info

# pypaimon-rust (pypaimon's optional native accelerator, a benchmark side only) goes into pypaimon's venv.
PYPAIMON_RUST_STAMP := $(PYPAIMON_VENV)/.installed-pypaimon-rust-0.4.0
$(PYPAIMON_RUST_STAMP): $(PYPAIMON_STAMP)
	$(PYPAIMON_VENV)/bin/python -m pip install --quiet 'pypaimon-rust==0.4.0'
	$(PYPAIMON_VENV)/bin/python -c 'import pypaimon_rust'
	touch $@

bench: venv pypaimon-venv $(PYPAIMON_RUST_STAMP)
	PAIMONFLOW_PYPAIMON_PYTHON=$(CURDIR)/$(PYPAIMON_VENV)/bin/python $(PY) bench/foundation.py --reps 5
	$(PY) bench/write_10m.py

clean:
	rm -rf $(VENV) $(PYPAIMON_VENV) build dist *.egg-info demo-warehouse

# The reliability programme's long tier (docs/reliability.md): every harness scaled up, with
# results in build/reliability/results-long.json. `make test` runs the same harnesses at fast scale.
reliability-long: venv pypaimon-venv java-peer
	PAIMONFLOW_RELIABILITY_TIER=long PAIMONFLOW_PYPAIMON_PYTHON=$(CURDIR)/$(PYPAIMON_VENV)/bin/python \
	  $(PY) -m pytest -m reliability --timeout 3600 -p no:cacheprovider

# The randomized differential test against Apache Paimon's Java core at long-tier scale
# (docs/format.md); `make test` runs it at fast scale, `make reliability-long` at long scale too.
differential-long: venv java-peer
	PAIMONFLOW_RELIABILITY_TIER=long PAIMONFLOW_RELIABILITY_RESULTS=build/differential \
	  $(PY) -m pytest tests/interop/test_java_differential.py --timeout 3600 -p no:cacheprovider
