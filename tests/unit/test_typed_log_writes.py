"""Issue 25: every run-log line is written as its event model (`log.write(ToolCall(...))`),
never as a string kind and keyword fields. A typed write is checked by mypy and by the
model where it is built, and the models are the one place run.jsonl's format is
spelt out; a string-keyed write would name a kind and fields no code checks until the
log validates the line at run time. This scan fails on a `.event("kind", ...)` call
anywhere in the package or the example roles."""

from __future__ import annotations

import ast
from pathlib import Path

import briefroom
from briefroom.runlog import RunLog

PACKAGE = Path(briefroom.__file__).parent
EXAMPLE_ROLES = PACKAGE.parent / "examples" / "roles"


def string_kind_writes(source: str) -> list[tuple[int, str]]:
    """(line, code) of each `<anything>.event(<string>, ...)` call: the string-keyed form of
    a log write. A call whose first argument is not a string is not that form."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "event"
                and node.args and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
                and (isinstance(node.args[0], ast.JoinedStr) or isinstance(node.args[0].value, str))):
            found.append((node.lineno, ast.unparse(node)[:120]))
    return found


def test_the_scan_finds_a_string_keyed_write():
    assert [line for line, _ in string_kind_writes(
        'log.event("tool_call", agent="s")\nctx.log.event(f"{kind}", round=1)\nlog.write(ToolCall())\n'
        'seen.event(1)\n')] == [1, 2]


def test_the_run_log_has_no_string_keyed_write():
    assert not hasattr(RunLog, "event")


def test_no_module_writes_the_run_log_by_string_kind():
    files = sorted(PACKAGE.rglob("*.py")) + sorted(EXAMPLE_ROLES.glob("*.py"))
    assert len(files) > 100 and any(f.parent == EXAMPLE_ROLES for f in files)
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line}: {code}"
                 for path in files for line, code in string_kind_writes(path.read_text(encoding="utf-8"))]
    assert not offenders, "write the event model instead (log.write(Model(...)), briefroom/events.py):\n" + \
        "\n".join(offenders)
