"""The provider info (``plugins/airflow/provider_info.py``): valid for Airflow's schemas, every module
and class it names importable and of the right kind, and the ``paimon`` connection form found by
Airflow 3.3 as declared, down to what its API serves the connection form."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path
from typing import Any

import airflow
import jsonschema
import pytest

from paimonflow.plugins.airflow.provider_info import (
    CONN_FIELDS,
    CONNECTION_TYPE,
    ENGINES,
    HOOK_CLASS,
    HOOK_NAME,
    PLACEHOLDERS,
    RELABELING,
    get_provider_info,
    ui_field_behaviour,
)

AIRFLOW = Path(airflow.__file__).parent
SECTIONS = ("hooks", "operators", "sensors", "triggers")


def _schema(name: str) -> dict[str, Any]:
    return json.loads((AIRFLOW / name).read_text())


def _import(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _kinds() -> dict[str, type]:
    from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    return {"hooks": BaseHook, "operators": BaseOperator, "sensors": BaseSensorOperator, "triggers": BaseTrigger}


def _classes(module_name: str, kind: type) -> list[type]:
    """The classes of ``kind`` defined in a module (not imported into it)."""
    module = importlib.import_module(module_name)
    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and obj.__module__ == module_name and issubclass(obj, kind)]


def test_valid_for_airflows_provider_info_schema() -> None:
    jsonschema.validate(get_provider_info(), _schema("provider_info.schema.json"))


def test_sections_valid_for_the_stricter_provider_yaml_schema() -> None:
    """``provider_info.schema.json`` lets a connection type carry any key; the provider.yaml schema
    says what ``ui-field-behaviour`` and ``conn-fields`` may hold (what ProvidersManager reads)."""
    schema = _schema("provider.yaml.schema.json")
    info = get_provider_info()
    for key in ("integrations", *SECTIONS, "connection-types", "plugins", "extra-links"):
        jsonschema.validate(info[key], {"definitions": schema.get("definitions", {}), **schema["properties"][key]})
    integrations = {i["integration-name"] for i in info["integrations"]}
    assert {e["integration-name"] for key in SECTIONS for e in info[key]} <= integrations


def test_the_extra_links_listed_are_the_ones_every_operator_declares() -> None:
    """Every operator links to its table's page; the job operators (which may submit a Spark
    application) to that application too; no operator declares a link that is not listed."""
    from airflow.sdk import BaseOperatorLink

    from paimonflow.operators import airflow as operators

    links = []
    for path in get_provider_info()["extra-links"]:
        module, name = path.rsplit(".", 1)
        links.append(getattr(importlib.import_module(module), name))
        assert issubclass(links[-1], BaseOperatorLink)
    health, spark = links
    for operator in (getattr(operators, n) for n in operators.__all__ if n.endswith("Operator")):
        declared = [type(x) for x in operator.operator_extra_links]
        expected = [health, spark] if issubclass(operator, operators.PaimonJobOperator) else [health]
        assert declared == expected, operator


@pytest.mark.parametrize("section", SECTIONS)
def test_every_module_imports_and_holds_its_kind(section: str) -> None:
    kind = _kinds()[section]
    for entry in get_provider_info()[section]:
        for module_name in entry["python-modules"]:
            assert _classes(module_name, kind), f"{module_name} holds no {kind.__name__}"


def test_every_operator_sensor_hook_and_trigger_is_listed() -> None:
    """The other way round: a class of any kind in the Airflow subpackages sits in a listed module."""
    kinds = _kinds()
    info = get_provider_info()
    listed = {section: {m for e in info[section] for m in e["python-modules"]} for section in SECTIONS}
    for package in ("paimonflow.operators.airflow", "paimonflow.sensors.airflow"):
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__, package + "."):
            for section in SECTIONS:
                if section == "operators":  # sensors are operators too: they are listed as sensors
                    found = [c for c in _classes(module.name, kinds[section])
                             if not issubclass(c, kinds["sensors"])]
                else:
                    found = _classes(module.name, kinds[section])
                if found:
                    assert module.name in listed[section], f"{module.name} ({found}) is not in {section}"


def test_the_connection_type_names_the_hook_and_its_form() -> None:
    from airflow.plugins_manager import AirflowPlugin
    from airflow.sdk import BaseHook

    [connection] = get_provider_info()["connection-types"]
    hook = _import(connection["hook-class-name"])
    assert issubclass(hook, BaseHook)
    assert (hook.conn_type, hook.hook_name) == (connection["connection-type"], connection["hook-name"])
    behaviour = connection["ui-field-behaviour"]
    # the hook's (legacy) method and the declaration are one description
    assert hook.get_ui_field_behaviour() == {"hidden_fields": behaviour["hidden-fields"],
                                             "relabeling": behaviour["relabeling"],
                                             "placeholders": behaviour["placeholders"]}
    assert behaviour["relabeling"]["host"] == "Warehouse URI" and "port" in behaviour["hidden-fields"]
    [plugin] = get_provider_info()["plugins"]
    assert issubclass(_import(plugin["plugin-class"]), AirflowPlugin)
    from paimonflow.operators.airflow import ENGINES as OPERATOR_ENGINES

    assert connection["conn-fields"]["engine"]["schema"]["enum"] == list(OPERATOR_ENGINES)


def test_the_storage_fields_are_storage_options_the_core_takes() -> None:
    from paimonflow.core.fs.s3 import OPTION_KEYS

    storage = [name for name in CONN_FIELDS if name.startswith("s3.")]
    assert storage and set(storage) <= set(OPTION_KEYS)


def test_airflow_discovers_the_connection_type_and_its_form() -> None:
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    manager = ProvidersManager()
    discovered = dict(manager.providers["paimonflow"].data)
    discovered.pop("documentation-url", None)  # Airflow adds it from the package's Project-URLs
    assert discovered == get_provider_info()
    hook = ProvidersManagerTaskRuntime().hooks[CONNECTION_TYPE]
    assert hook is not None
    assert (hook.hook_class_name, hook.hook_name, hook.connection_testable) == (HOOK_CLASS, HOOK_NAME, True)
    [meta] = [m for m in manager.iter_connection_type_hook_ui_metadata() if m.connection_type == CONNECTION_TYPE]
    assert (meta.hook_name, meta.hook_class_name) == (HOOK_NAME, HOOK_CLASS)
    assert meta.field_behaviour == ui_field_behaviour()
    assert any(t.trigger_class_name == "paimonflow.sensors.airflow.snapshot" and t.package_name == "paimonflow"
               for t in manager.trigger)


def test_the_connection_form_airflows_api_serves() -> None:
    """What the UI's connection form receives (``HookMetaService``, behind ``/ui/connections/hook_meta``):
    relabelled, hidden and explained standard fields, and the extra fields, the token a password."""
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

    [meta] = [m for m in HookMetaService.hook_meta_data() if m.connection_type == CONNECTION_TYPE]
    assert meta.hook_name == HOOK_NAME
    fields = meta.standard_fields
    assert fields is not None
    assert (fields.host.title, fields.host.placeholder) == (RELABELING["host"], PLACEHOLDERS["host"])
    assert (fields.login.title, fields.password.title) == (RELABELING["login"], RELABELING["password"])
    assert fields.port.hidden and fields.url_schema.hidden and not fields.host.hidden
    extra = meta.extra_fields or {}
    assert set(extra) == set(CONN_FIELDS)
    assert extra["s3.endpoint"]["schema"]["title"] == "S3 endpoint"
    assert extra["s3.session-token"]["schema"]["format"] == "password"
    assert extra["s3.path-style-access"]["schema"]["type"] == ["boolean", "null"]
    assert extra["engine"]["value"] == ENGINES[0] and extra["engine"]["schema"]["enum"] == list(ENGINES)


def test_the_hook_reads_what_the_form_stores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The form stores each extra field under its name, empty ones as null, booleans as JSON booleans."""
    from paimonflow.core.fs.s3 import S3FileIO
    from paimonflow.operators.airflow import PaimonHook

    extra = {"s3.endpoint": "http://127.0.0.1:9", "s3.region": None, "s3.path-style-access": True,
             "s3.session-token": "form-token", "engine": "core", "spark_conn_id": None}
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_FORM", json.dumps(
        {"conn_type": "paimon", "host": "s3://lake/wh", "login": "AKIAFORM", "password": "form-secret",
         "extra": extra}))
    hook = PaimonHook("paimon_form")
    options = dict(hook.location("db.t").storage_options)
    assert options == {"s3.endpoint": "http://127.0.0.1:9", "s3.path-style-access": "true",
                       "s3.session-token": "form-token", "s3.access-key": "AKIAFORM", "s3.secret-key": "form-secret"}
    assert (hook.warehouse, hook.default_engine, hook.spark_conn_id) == ("s3://lake/wh", "core", "spark_default")
    S3FileIO.from_options(options).close()  # every key one the storage layer knows
