"""The retail database (tau-bench's orders, products and users tables), loaded once, copied per env on write.

    base = load_tables()                     # {"orders": ..., "products": ..., "users": ...}, shared, read-only
    db = RetailDB(base)                      # a fresh copy: reads see the base, writes copy the record first
    db.order("#W2611340")                    # a record to read (never mutate it)
    db.order_for_write("#W2611340")["status"] = "cancelled"    # this env's own copy of that record
    db.state(); db.touched()                 # the three tables; the (table, id) pairs written so far
    db.canonical_state()                     # {"base": digest of the base, "orders": {changed records}, ...}

Copying the three tables per env (~2.3 MB of JSON) would cost tens of milliseconds per task; `RetailDB`
shallow-copies the id -> record maps and deep-copies a record the first time a tool writes it, so every env
still behaves as if it had its own deep copy. Its canonical state names the base by its digest (computed
once per process, ~0.2 s) and lists only the records that differ from it, as canonical data: equal
databases give equal canonical states, and canonicalising a step's state costs microseconds, not the
0.2 s of the whole database (the env agent takes a GiGPO anchor per tool call). `load_policy` and `load_tool_schemas` read the shipped policy
and the 16 tool schemas (retail_tools.json, OpenAI function format). Not covered: adding or deleting records
(no retail tool does either).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_infer.envs.base import canonical, state_digest
from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.recipes import shared_data_dir

DB_FOLDER = "tools/tau_retail_db"
TABLES = ("orders", "products", "users")


def db_folder(data_dir: str | Path | None = None) -> Path:
    """The folder holding the retail files: `<data_dir or the shared data folder>/tools/tau_retail_db`."""
    folder = shared_data_dir(data_dir) / DB_FOLDER
    if not folder.is_dir():
        raise ConfigError(f"the retail database folder {folder} is missing; pass data_dir= (the folder holding "
                          f"{DB_FOLDER}/) or set AGENTIC_DATA")
    return folder


@functools.lru_cache(maxsize=4)
def _load_tables(folder: Path) -> dict[str, dict[str, Any]]:
    tables = {}
    for name in TABLES:
        path = folder / f"{name}.json"
        if not path.is_file():
            raise ConfigError(f"the retail table {path} is missing; the folder must hold {', '.join(TABLES)}.json")
        tables[name] = json.loads(path.read_text(encoding="utf-8"))
    return tables


def load_tables(data_dir: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The three tables as shipped, loaded once per folder and shared: never mutate them (use `RetailDB`)."""
    return _load_tables(db_folder(data_dir))


@functools.lru_cache(maxsize=4)
def _read_text(path: Path) -> str:
    if not path.is_file():
        raise ConfigError(f"{path} is missing from the retail database folder")
    return path.read_text(encoding="utf-8")


_BASE_DIGESTS: dict[int, tuple[Mapping[str, Any], str]] = {}  # id(base) -> (base, digest): the base stays alive


def base_digest(base: Mapping[str, Mapping[str, Any]]) -> str:
    """The canonical digest of a set of base tables (computed once per base object)."""
    entry = _BASE_DIGESTS.get(id(base))
    if entry is None or entry[0] is not base:
        entry = _BASE_DIGESTS[id(base)] = (base, state_digest({name: base[name] for name in TABLES}))
    return entry[1]


def load_policy(data_dir: str | Path | None = None) -> str:
    """The retail agent's domain policy (policy.md: tau-bench's wiki)."""
    return _read_text(db_folder(data_dir) / "policy.md")


def load_tool_schemas(data_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """The 16 tool schemas exactly as shipped (a fresh copy each call)."""
    return json.loads(_read_text(db_folder(data_dir) / "retail_tools.json"))


class RetailDB:
    """One env's view of the tables: the shared base plus copies of the records this env wrote."""

    def __init__(self, base: Mapping[str, Mapping[str, Any]]):
        self._base = base
        self.tables: dict[str, dict[str, Any]] = {name: dict(base[name]) for name in TABLES}
        self._owned: set[tuple[str, str]] = set()

    # -- reads ---------------------------------------------------------------------------------------
    def order(self, order_id: str) -> dict[str, Any] | None:
        return self.tables["orders"].get(order_id)

    def user(self, user_id: str) -> dict[str, Any] | None:
        return self.tables["users"].get(user_id)

    def product(self, product_id: str) -> dict[str, Any] | None:
        return self.tables["products"].get(product_id)

    # -- writes --------------------------------------------------------------------------------------
    def for_write(self, table: str, key: str) -> dict[str, Any]:
        """This env's own copy of one record (made on the first write), to change in place."""
        if (table, key) not in self._owned:
            self.tables[table][key] = copy.deepcopy(self.tables[table][key])
            self._owned.add((table, key))
        return self.tables[table][key]

    def order_for_write(self, order_id: str) -> dict[str, Any]:
        return self.for_write("orders", order_id)

    def user_for_write(self, user_id: str) -> dict[str, Any]:
        return self.for_write("users", user_id)

    # -- state -----------------------------------------------------------------------------------------
    def state(self) -> dict[str, dict[str, Any]]:
        """The three tables, shaped as the shipped files (live: copy before changing anything)."""
        return self.tables

    def touched(self) -> set[tuple[str, str]]:
        """The (table, id) pairs this env has copied for writing; every other record is the base's."""
        return set(self._owned)

    def changes(self) -> dict[str, dict[str, Any]]:
        """The written records, by table (what `restore_changes` needs to rebuild this state)."""
        out: dict[str, dict[str, Any]] = {name: {} for name in TABLES}
        for table, key in self._owned:
            out[table][key] = self.tables[table][key]
        return out

    def restore_changes(self, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Back to the base, then the given written records (deep-copied) on top."""
        self.tables = {name: dict(self._base[name]) for name in TABLES}
        self._owned = set()
        for table, records in changes.items():
            if table not in self.tables:
                raise ConfigError(f"retail snapshot names an unknown table {table!r}; tables are {', '.join(TABLES)}")
            for key, record in records.items():
                self.tables[table][key] = copy.deepcopy(record)
                self._owned.add((table, key))

    def sub_state(self, keys: set[tuple[str, str]]) -> dict[str, dict[str, Any]]:
        """Only the given records (missing ones as None): two views of one base are equal iff they agree on the
        records either of them wrote."""
        out: dict[str, dict[str, Any]] = {name: {} for name in TABLES}
        for table, key in keys:
            out[table][key] = self.tables[table].get(key)
        return out

    def canonical_state(self) -> dict[str, Any]:
        """{"base": the base's digest, <table>: {id: canonical record}} for the records that differ from the base."""
        out: dict[str, Any] = {"base": base_digest(self._base)}
        for table, key in sorted(self._owned):
            record = canonical(self.tables[table][key])
            if record != canonical(self._base[table].get(key)):
                out.setdefault(table, {})[key] = record
        return out
