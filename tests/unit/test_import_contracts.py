"""The layer table of docs/architecture.md is checked, not only described: pyproject.toml
holds its import-linter contracts, and `lint-imports` keeps every one of them."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = {"layers", "no-langgraph-below-graph", "backends-through-the-factory", "facade-without-the-team",
             "roles-independent", "no-cycles"}


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_the_contracts_are_declared_and_name_every_module():
    declared = contracts()
    assert CONTRACTS <= set(declared)
    layers = declared["layers"]
    assert layers["type"] == "layers" and layers["exhaustive"] is True  # a new module must be given a layer
    assert "ignore_imports" not in layers  # no import against the order is let through


def test_lint_imports_keeps_every_contract():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout
