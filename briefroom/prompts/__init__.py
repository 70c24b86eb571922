"""Prompt files shipped as package data, rendered strictly.

`{{ name }}` placeholders; a placeholder without a value, or a value without a
placeholder, is an error: a silently empty prompt section is worse than a crash.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from briefroom.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


class PromptError(ConfigError):
    pass


def load_template(name_or_path: str | Path) -> str:
    """A shipped prompt by file name (`planner.md`) or any file by path."""
    path = Path(name_or_path)
    if path.is_absolute():
        if not path.is_file():
            raise PromptError(f"prompt file not found: {path}")
        return path.read_text(encoding="utf-8")
    return _shipped(str(name_or_path))


@lru_cache(maxsize=64)
def _shipped(name: str) -> str:
    # Package data does not change while the process runs; prompts are built on every call.
    resource = resources.files(__package__).joinpath(name)
    if not resource.is_file():
        raise PromptError(f"no shipped prompt named {name!r}")
    return resource.read_text(encoding="utf-8")


def render(template: str, **values: object) -> str:
    wanted = set(_PLACEHOLDER.findall(template))
    missing = wanted - values.keys()
    if missing:
        raise PromptError(f"prompt variables without a value: {', '.join(sorted(missing))}")
    unused = values.keys() - wanted
    if unused:
        raise PromptError(f"values given for no placeholder: {', '.join(sorted(unused))}")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)
