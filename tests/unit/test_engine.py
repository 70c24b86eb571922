"""The embedded engine: threads from the cores free, a slot per role, the server command."""

from __future__ import annotations

from pathlib import Path

import pytest

from briefroom.config import Settings
from briefroom.llm import build_pool, embedded_slots
from briefroom.models import embedded
from briefroom.models.embedded import EmbeddedServer, batch_threads_for, threads_for


def _server(tmp_path: Path, **kw) -> EmbeddedServer:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    server = EmbeddedServer(model_path=model, log_path=tmp_path / "log", **kw)
    server.port = 1234
    return server


def _flags(command: list[str]) -> dict[str, str]:
    start = command.index("--model")
    return dict(zip(command[start::2], command[start + 1::2]))


def test_the_server_runs_llama_cpps_own_server_with_a_full_window_per_slot(tmp_path):
    server = _server(tmp_path, slots=6, threads=1)
    command = server.command()
    assert command[1:3] == ["-m", "briefroom.models.llama_server"]
    flags = _flags(command)
    assert flags["--slots"] == "6" and flags["--slot-context"] == str(embedded.EMBEDDED_CONTEXT)
    assert flags["--threads"] == "1" and flags["--batch-threads"] == "1"  # set by the user: both


@pytest.mark.parametrize("free, cores, expected", [
    (0.0, 2, 1),
    (0.9, 2, 1),   # one core free: one thread reads the prompt too
    (1.8, 2, 2),   # idle: both cores read the prompt, none held back
    (5.0, 8, 5),
    (31.0, 32, 8),
])
def test_prompts_are_read_with_every_core_free_at_start(free, cores, expected):
    assert batch_threads_for(free, cores) == expected


def test_chosen_at_start_generation_leaves_a_core_and_reading_takes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(embedded, "free_cores", lambda *a, **k: 2.0)
    monkeypatch.setattr(embedded, "cpu_count", lambda: 2)
    server = _server(tmp_path)
    server.choose_threads()
    flags = _flags(server.command())
    assert (flags["--threads"], flags["--batch-threads"]) == ("1", "2")


@pytest.mark.parametrize("free, cores, expected", [
    (0.0, 2, 1),   # both cores busy: one thread, never zero
    (0.9, 2, 1),   # one core free: one thread (two would wait at every barrier)
    (2.0, 2, 1),   # idle: one core left for what comes later
    (3.8, 4, 3),
    (5.0, 8, 4),   # three cores taken by others
    (31.0, 32, 8),  # capped: more threads than this stop paying on small models
])
def test_threads_follow_the_cores_actually_free(free, cores, expected):
    assert threads_for(free, cores) == expected


def test_free_cores_are_read_from_the_machines_cpu_time(monkeypatch):
    samples = iter([(1000, 4000), (1000 + 500, 4000 + 1000)])  # half the machine busy in between
    monkeypatch.setattr(embedded, "_cpu_times", lambda: next(samples))
    monkeypatch.setattr(embedded.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(embedded, "cpu_count", lambda: 2)
    assert embedded.free_cores(sample_seconds=0) == pytest.approx(1.0)


def test_threads_set_by_the_user_are_kept_and_the_cores_are_not_sampled(tmp_path, monkeypatch):
    monkeypatch.setattr(embedded, "free_cores", lambda *a, **k: pytest.fail("sampled although set"))
    server = _server(tmp_path, threads=3)
    assert server.threads == 3 and _flags(server.command())["--threads"] == "3"


def test_each_role_has_its_own_slot_and_searcher_instances_share_the_searchers_and_the_extra_ones():
    roles = ["planner", "searcher", "critic", "writer"]
    slots = embedded_slots(roles, parallel=3)
    assert slots == 6 and embedded_slots(roles, parallel=1) == 4
    pool = build_pool(Settings(model="embedded"), roles, embedded_base_url="http://127.0.0.1:9/v1",
                      embedded_slots=slots)
    assert [pool.handles[r].slot for r in roles] == [0, 1, 2, 3]
    share = pool.for_role("searcher/1").shared_slots
    assert share is not None and share.slots == (1, 4, 5)  # the searcher's own, then those no role holds
    assert pool.for_role("searcher/7").shared_slots is share  # one share for every instance


def test_an_instance_takes_a_free_slot_per_call_the_one_it_had_last_when_it_can():
    from briefroom.llm import SlotShare

    share = SlotShare((1, 4, 5))
    first, second, third = share.take(None), share.take(None), share.take(None)
    assert (first, second, third) == (1, 4, 5)  # three at once: no two on one KV cache
    share.give(second)
    assert share.take(5) == 4  # its last slot is busy: the free one, not a queue behind another call
    share.give(first)
    share.give(third)
    assert share.take(5) == 5  # free again: back where its own prompt is cached
    assert share.take(None) == 1
    assert share.take(None) == 1  # none free: shares (the server queues it) rather than failing


def test_the_threads_setting_comes_from_the_environment():
    assert Settings.from_env({"BRIEFROOM_THREADS": "2"}).threads == 2
    assert Settings.from_env({"BRIEFROOM_IDLE_TIMEOUT": "42"}).idle_timeout == 42


def test_every_string_of_a_grammar_is_bounded_nested_models_too():
    from briefroom.graph.summary import SummaryDraft
    from briefroom.llm import bounded_strings

    bounded = bounded_strings(SummaryDraft.model_json_schema(), 500)

    def strings(node):
        if isinstance(node, dict):
            if node.get("type") == "string":
                yield node
            for value in node.values():
                yield from strings(value)
        elif isinstance(node, list):
            for value in node:
                yield from strings(value)

    found = list(strings(bounded))
    assert found and all("maxLength" in s for s in found)
    assert bounded["properties"]["next_action"]["maxLength"] == 300  # a limit the model set stays


def test_the_server_process_ends_when_its_parent_is_gone():
    from briefroom.models.llama_server import outlive_no_parent

    parents = iter([41, 41, 41, 1])  # re-parented to init on the fourth look
    slept: list[float] = []
    outlive_no_parent(41, poll_s=0.5, getppid=lambda: next(parents), sleep=slept.append)
    assert slept == [0.5, 0.5, 0.5]
