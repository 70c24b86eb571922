"""docs/architecture.md stays true: every module and test file it names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def named_files() -> set[str]:
    """Paths in backticks ending in .py; in a table row of one package, bare names
    (`bus.py`) belong to the package named first in the row (`protocol/messages.py`)."""
    found = set()
    for line in DOC.splitlines():
        package = None
        for name in re.findall(r"`([\w/]+\.py)`", line):
            if "/" in name:
                package = name.rsplit("/", 1)[0]
                found.add(name)
            elif package and not name.startswith("test_"):
                found.add(f"{package}/{name}")
            else:
                found.add(name)
    return found


def test_every_module_and_test_the_design_names_exists():
    missing = []
    for name in named_files():
        candidates = [ROOT / "briefroom" / name, ROOT / name, *ROOT.glob(f"tests/*/{name}")]
        if not any(p.is_file() for p in candidates):
            missing.append(name)
    assert missing == []


def test_the_named_api_exists():
    from briefroom.agents.base import Role, Turn
    from briefroom.protocol.messages import AgentMessage

    for name in ("ask", "use_tools", "publish", "forward", "note", "add_facts", "add_sources"):
        assert callable(getattr(Turn, name)), name
    assert {"capabilities", "guards", "subscriptions", "publications"} <= set(Role.__dataclass_fields__)
    assert callable(AgentMessage.payload_as)


def test_the_composition_roots_named_steps_exist():
    import importlib
    import pkgutil

    import briefroom.run

    paragraph = DOC.split("**One composition root**", 1)[1].split("\n\n", 1)[0]
    names = set(re.findall(r"`(_?[A-Za-z][A-Za-z_]+)`", paragraph)) - {"resume"}  # `resume`: the command
    assert {"execute_run", "RunLaunch", "open_thread", "finish"} <= names
    # the steps live in the run package's modules, each named in the paragraph beside them
    modules = [briefroom.run] + [importlib.import_module(f"briefroom.run.{m.name}")
                                 for m in pkgutil.iter_modules(briefroom.run.__path__)]
    assert [name for name in sorted(names) if not any(hasattr(m, name) for m in modules)] == []


def _doc_layers() -> list[tuple[str, set[str]]]:
    """The layer table, base first: (layer, the top-level modules its rows name). A bare
    name after a package's path is that package's (`bus.py` after `protocol/messages.py`);
    a folder named before any package is a top-level package (`evaluation/`)."""
    table = DOC.split("| layer | modules |", 1)[1].split("\n\n", 1)[0]
    layers: list[tuple[str, set[str]]] = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        tops: set[str] = set()
        package = None
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", cells[1]):
            if "/" in name.rstrip("/") or (name.endswith("/") and package is None):
                package = name.split("/", 1)[0]
                tops.add(package)
            elif package is None:
                tops.add(name.removesuffix(".py"))
        if cells[0]:
            layers.append((cells[0], tops))
        else:  # a row continuing the layer above it
            layers[-1][1].update(tops)
    return layers


def test_the_layer_table_is_the_contract_make_test_enforces():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["id"] == "layers")["layers"]
    enforced = [set(re.split(r"\s*[|:]\s*", layer.strip())) for layer in reversed(layers)]  # base first
    described = _doc_layers()
    assert [tops for _, tops in described] == enforced, [name for name, _ in described]
    top_level = {p.stem for p in (ROOT / "briefroom").iterdir()
                 if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert set().union(*enforced) == top_level  # every module of the package has its layer
