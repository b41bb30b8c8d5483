"""The warehouse maintenance policy: what the planner (:mod:`.planner`) adds to each table's own
Paimon options.

A table's options are its policy (``snapshot.num-retained.*``, ``partition.expiration-time``...);
the warehouse policy only fills the gaps and sets limits. A policy file (JSON, TOML, or YAML when
PyYAML is installed) holds::

    defaults:            # options for the tables that do not set them (a table's own value wins)
      snapshot.num-retained.max: 100
      partition.expiration-time: 90 d
    exclude: ["staging.*"]          # tables never planned (globs over <database>.<table>)
    priorities: {"shop.*": 10}      # the first matching glob's number; higher runs first (default 0)
    actions: [compact, expire-snapshots]   # only these actions (default: all)
    budget:
      concurrent-compactions: 2     # tables maintained at once when the plan runs (default 1)
      max-compactions: 20           # compactions one plan starts, the most urgent first (default: all)

Only the options whose verbs take them as arguments can have defaults (:data:`DEFAULTABLE`): the
planned action then carries the value, so what runs is what was planned. Everything is checked
when the policy is loaded: an unknown key or a bad value is one typed error naming it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import InvalidArgumentError, InvalidOptionError
from ..options.parse import parse_duration_millis
from ..options.registry import settings_parse

#: The planner's actions, in the order they run on one table (each named as its Spark job in
#: ``paimonflow.jobs.registry.JOBS``, its arguments that job's): partitions go first (less to
#: compact), compaction before the expiries (its snapshot counts among those kept).
ACTIONS = ("expire-partitions", "compact", "auto-tag", "expire-tags", "reset-consumer", "expire-snapshots",
           "expire-changelogs")

#: The options a policy may default (the planned action passes them to the verb).
DEFAULTABLE = ("snapshot.num-retained.min", "snapshot.num-retained.max", "snapshot.time-retained",
               "snapshot.expire.limit", "changelog.num-retained.min", "changelog.num-retained.max",
               "changelog.time-retained", "partition.expiration-time", "consumer.expiration-time")

_KEYS = ("defaults", "exclude", "priorities", "actions", "budget")
_BUDGET_KEYS = ("concurrent-compactions", "max-compactions")


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenancePolicy:
    """A warehouse's maintenance policy (the default: each table's own options, nothing else)."""

    defaults: Mapping[str, str] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    priorities: tuple[tuple[str, int], ...] = ()
    actions: tuple[str, ...] = ACTIONS
    concurrent_compactions: int = 1
    max_compactions: int | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.defaults) - set(DEFAULTABLE))
        if unknown:
            raise InvalidArgumentError(f"policy defaults: {unknown[0]!r} cannot be defaulted; the options a policy "
                                       f"may default are {', '.join(DEFAULTABLE)}")
        settings_parse(self.defaults)  # InvalidOptionError naming a bad value's key
        if "partition.expiration-time" in self.defaults:
            try:
                parse_duration_millis(self.defaults["partition.expiration-time"])
            except ValueError as exc:
                raise InvalidOptionError("partition.expiration-time", self.defaults["partition.expiration-time"],
                                         str(exc)) from None
        bad = sorted(set(self.actions) - set(ACTIONS))
        if bad:
            raise InvalidArgumentError(f"policy actions: unknown action {bad[0]!r}; actions are {', '.join(ACTIONS)}")
        if self.concurrent_compactions < 1:
            raise InvalidArgumentError(f"policy budget: concurrent-compactions must be at least 1, not "
                                       f"{self.concurrent_compactions}")
        if self.max_compactions is not None and self.max_compactions < 0:
            raise InvalidArgumentError(f"policy budget: max-compactions must be 0 or more, not {self.max_compactions}")

    def excludes(self, identifier: str) -> str | None:
        """The exclusion glob that matches ``identifier`` (None: planned)."""
        return next((glob for glob in self.exclude if fnmatchcase(identifier, glob)), None)

    def priority_of(self, identifier: str) -> int:
        """The number of the first priority glob matching ``identifier`` (0 when none does)."""
        return next((number for glob, number in self.priorities if fnmatchcase(identifier, glob)), 0)

    def options_for(self, table_options: Mapping[str, str]) -> dict[str, str]:
        """A table's options with the policy's defaults under them (the table's own values win)."""
        return {**self.defaults, **table_options}

    def to_dict(self) -> dict[str, object]:
        return {"defaults": dict(self.defaults), "exclude": list(self.exclude),
                "priorities": dict(self.priorities), "actions": list(self.actions),
                "budget": {"concurrent-compactions": self.concurrent_compactions,
                           "max-compactions": self.max_compactions}}

    @classmethod
    def from_mapping(cls, data: object, *, source: str = "policy") -> MaintenancePolicy:
        """A policy from a parsed document; raises :class:`InvalidArgumentError` (or
        :class:`InvalidOptionError` for a bad default) naming what is wrong and ``source``."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(f"{source}: expected a mapping of {', '.join(_KEYS)}, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise InvalidArgumentError(f"{source}: unknown key {unknown[0]!r}; a policy has {', '.join(_KEYS)}")
        defaults = _mapping(data.get("defaults"), f"{source}: defaults")
        budget = _mapping(data.get("budget"), f"{source}: budget")
        bad_budget = sorted(set(budget) - set(_BUDGET_KEYS))
        if bad_budget:
            raise InvalidArgumentError(f"{source}: unknown budget key {bad_budget[0]!r}; a budget has "
                                       f"{', '.join(_BUDGET_KEYS)}")
        priorities = _mapping(data.get("priorities"), f"{source}: priorities")
        return cls(defaults={str(k): _text(v) for k, v in defaults.items()},
                   exclude=_globs(data.get("exclude"), f"{source}: exclude"),
                   priorities=tuple((str(glob), _integer(n, f"{source}: priority of {glob!r}"))
                                    for glob, n in priorities.items()),
                   actions=ACTIONS if data.get("actions") is None else _globs(data["actions"], f"{source}: actions"),
                   concurrent_compactions=_integer(budget.get("concurrent-compactions", 1),
                                                   f"{source}: budget concurrent-compactions"),
                   max_compactions=None if budget.get("max-compactions") is None else
                   _integer(budget["max-compactions"], f"{source}: budget max-compactions"))


def load_policy(path: str | Path) -> MaintenancePolicy:
    """Read a policy file: ``.json``, ``.toml``, or ``.yaml``/``.yml`` (with PyYAML installed).
    Raises :class:`FileNotFoundError` for a missing file and :class:`InvalidArgumentError` for one
    that does not parse or holds an unknown key (:meth:`MaintenancePolicy.from_mapping`)."""
    path = Path(path)
    text = path.read_text()
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text)
        elif suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise InvalidArgumentError(f"policy {path}: a YAML policy needs PyYAML (pip install pyyaml); or "
                                           "write it as .json or .toml") from None
            data = yaml.safe_load(text)
        else:
            raise InvalidArgumentError(f"policy {path}: give a .json, .toml, .yaml or .yml file")
    except InvalidArgumentError:
        raise
    except ValueError as exc:  # JSONDecodeError, TOMLDecodeError
        raise InvalidArgumentError(f"policy {path} does not parse: {exc}") from None
    except Exception as exc:
        if type(exc).__module__.startswith("yaml"):
            raise InvalidArgumentError(f"policy {path} does not parse: {' '.join(str(exc).split())}") from None
        raise
    return MaintenancePolicy.from_mapping(data, source=f"policy {path}")


def _mapping(value: object, what: str) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{what} must be a mapping, not {type(value).__name__}")
    return value


def _globs(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidArgumentError(f"{what} must be a list of names")
    return tuple(value)


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidArgumentError(f"{what} must be a whole number, not {value!r}")
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(f"{what} must be a whole number, not {value!r}") from None


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["ACTIONS", "DEFAULTABLE", "MaintenancePolicy", "load_policy"]
