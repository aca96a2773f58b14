"""Fixtures for the env tests: the retail data folder and its train+dev task rows (read once per session)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SHARED_DATA, shared_data


@pytest.fixture(scope="session")
def retail_data_dir():
    """The shared data folder holding tools/tau_retail_db (skips when absent)."""
    shared_data("tools/tau_retail_db/orders.json")
    return SHARED_DATA


@pytest.fixture(scope="session")
def retail_tasks(retail_data_dir):
    """{task id: row} for the 520 train+dev retail tasks."""
    rows = {}
    for split in ("train", "dev"):
        path = retail_data_dir / "tools" / "tau_retail_db" / f"retail_tasks_{split}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows


@pytest.fixture()
def retail_env(retail_data_dir):
    """`retail_env(row=None, **options)`: a fresh RetailEnv (a blank task when no row is given)."""
    from agentic_infer.envs.retail import RetailEnv

    def make(row=None, **options):
        row = row or {"id": "t", "user_id": "", "instruction": "", "actions": [], "outputs": []}
        return RetailEnv(row, data_dir=retail_data_dir, **options)

    return make


def _jsonl(relative: str) -> list[dict]:
    return [json.loads(line) for line in shared_data(relative).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="session")
def tp_rows():
    """TravelPlanner's 45 task rows as shipped ({"messages": [system, user, assistant]})."""
    return _jsonl("tools/travelplanner/std_travelplanner.jsonl")


@pytest.fixture(scope="session")
def tp_refs():
    """TravelPlanner's 45 reference-information rows, aligned with `tp_rows` by line."""
    return _jsonl("tools/travelplanner/train_ref_info.jsonl")
