"""Issue 25: a role's name is the role's own. Code outside the role files finds roles by
what they declare (a capability, `reads_memory`, the bus's list of names), so adding or
renaming a role needs no edit anywhere else. This scan fails on a built-in role's name
written as a string in any other module of the package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import briefroom
from briefroom.agents.registry import builtin_roles
from briefroom.graph.summary import SUMMARIZER

PACKAGE = Path(briefroom.__file__).parent
ROLE_NAMES = frozenset([r.name for r in builtin_roles()] + [SUMMARIZER.name])

# Where a name may be written, and why.
ALLOWED = {
    # the registry finds the role files by module name
    "agents/registry.py": "the registry",
    # the Summarizer is defined here, next to the round-end summary it writes
    "graph/summary.py": "the Summarizer's own definition (name and prompt file)",
    # a lexicon of labels any chat or agent team uses ("System:", "Critic verdict:",
    # "Moderator:"): text forging one is not a statement, whatever this team's roles are
    # called, so the list must not follow a rename (and it decides which facts a
    # prompt quotes)
    "protocol/statements.py": "a lexicon of conversation and agent-team labels, not this team's roles",
}


def _role_files() -> set[str]:
    return {f"agents/{Path(__import__(r.step.__module__, fromlist=['_']).__file__).name}"
            for r in builtin_roles()}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def role_names_in(source: str, names: frozenset[str] = ROLE_NAMES) -> list[tuple[int, str]]:
    """(line, string) for each string literal that is a role's name, or names one as an
    alternative of a pattern (`critic|writer`). Prose ("one searcher instance each")
    and docstrings are not code naming a role."""
    alternative = re.compile(rf"(?:^|\|)(?:\(\?:)?({'|'.join(map(re.escape, sorted(names)))})(?:\)|\||$)"
                             rf"|\|({'|'.join(map(re.escape, sorted(names)))})\b")
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            if text.strip().lower() in names or alternative.search(text.lower()):
                found.append((node.lineno, text))
    return sorted(found)


@pytest.mark.parametrize("code", [
    'if m.header.sender == "planner": pass',
    'CONFIRMED = ("searcher", "critic")',
    'PATTERN = r"\\bas the (?:critic|writer|planner|searcher)\\b"',
    'PATTERN = r"\\b(?:writer|critic)\\s*:"',
    'ALSO = {"summarizer"}',
])
def test_the_scan_finds_a_role_named_in_code(code):
    assert role_names_in(code) != []


@pytest.mark.parametrize("code", [
    '"""The planner plans."""',
    'HELP = "sub-questions searched at the same time, one searcher instance each"',
    'CAPABILITY = "plan"',
    'PATTERN = r"\\bwriters?\\b|\\bcriticism\\b"',
])
def test_the_scan_leaves_prose_and_other_words_alone(code):
    assert role_names_in(code) == []


def test_no_module_outside_the_role_files_names_a_built_in_role():
    exempt = {*ALLOWED, *_role_files()}
    assert {"agents/planner.py", "agents/searcher.py", "agents/critic.py", "agents/writer.py"} <= exempt
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in exempt or relative.startswith("prompts/"):
            continue
        found += [f"briefroom/{relative}:{line}: {text[:80]!r}" for line, text in role_names_in(path.read_text())]
    assert found == [], ("a role named outside its role file; find it by what it declares (a capability, a Role "
                         "field, the bus's roles) instead:\n" + "\n".join(found))


def test_every_allowed_file_still_needs_its_exemption():
    """An exemption nobody needs any more is removed, so the list stays short."""
    for relative in ALLOWED:
        if relative == "agents/registry.py":
            continue  # the registry may name roles; it needs not
        assert role_names_in((PACKAGE / relative).read_text()), relative
