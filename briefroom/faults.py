"""Crash points for the kill test: where a real SIGKILL lands, on purpose.

`BRIEFROOM_CRASH=checkpoint:N` kills the process right after the run's N-th checkpoint
is on disk (a node boundary); `llm_call:N` right after the N-th model reply arrives,
before the node that asked for it has finished (mid-node); `memory_commit:N` inside the
memory write gates, after their writes and before their commit. A third field `:int`
sends SIGINT instead (a Ctrl-C at that point). Unset, as in normal use, each hook is
one environment lookup (read each time: a test may set it after import). The tests that use them: `tests/e2e/test_kill_resume.py`,
`tests/graph/test_durable_runs.py`.
"""

from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}


def _target() -> tuple[str, int, int] | None:
    parts = os.environ.get("BRIEFROOM_CRASH", "").split(":")
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    how = signal.SIGINT if parts[2:] == ["int"] else signal.SIGKILL
    return parts[0], int(parts[1]), how


def reached(point: str) -> None:
    """Count one pass through `point`; signal this process if it is the chosen one."""
    target = _target()
    if target is None or target[0] != point:
        return
    _counts[point] = _counts.get(point, 0) + 1
    if _counts[point] == target[1]:
        if target[2] == signal.SIGINT:
            # raise(3), not kill(2): kill may deliver the signal to any thread (the
            # encoder's loader, onnxruntime's pool), whose C handler then flags it for the
            # main thread a little later, wherever that is by then; raise delivers it to
            # this thread, so the flag is set before this call returns.
            signal.raise_signal(signal.SIGINT)
        else:
            os.kill(os.getpid(), target[2])
        if target[2] == signal.SIGINT:
            # The handler normally raises KeyboardInterrupt in the main thread right after
            # raise_signal returns, and this line is never reached. It is reached in a
            # worker thread (Python runs handlers in the main thread, at its own pace: the
            # worker would go on and might finish the run first), and a handler that
            # runs late lets a run finish past its planned interrupt. Raising here makes
            # the interrupt land at this point, every time.
            raise KeyboardInterrupt
