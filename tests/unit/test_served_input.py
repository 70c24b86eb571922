"""A served run's input and context are hostile: `RunInput`, `ServeOptions` and
`ServePolicy` refuse what a client may not ask, in one line, before anything outside the
server's allow-lists is touched; a run that fails records its error and says why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from briefroom.errors import ConfigError
from briefroom.run_request import RunInput, checked_input
from briefroom.server.langgraph_app import (
    CORPORA_ENV,
    ROLES_DIRS_ENV,
    RUNS_DIR_ENV,
    RunFailed,
    ServePolicy,
    build_served_graph,
    check_run,
)

QUESTION = "How big is the 2026 public cloud market?"


@pytest.fixture
def allowed(tmp_path) -> Path:
    root = tmp_path / "allowed"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "market.md").write_text("# Market\n\nPublic cloud spending will reach 723 billion USD "
                                              "in 2026.\n", encoding="utf-8")
    return root


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("# Secret\n\nThe vault code is 4711.\n", encoding="utf-8")
    return folder


@pytest.fixture
def policy(allowed, tmp_path) -> ServePolicy:
    return ServePolicy.from_env({CORPORA_ENV: str(allowed), RUNS_DIR_ENV: str(tmp_path / "served-runs")},
                                cwd=tmp_path)


@pytest.mark.parametrize("fields, expected", [
    ({"question": 12345, "corpus": ["notes"]}, "invalid run input: question: Input should be a valid string"),
    ({"question": QUESTION, "corpus": "/a/b"}, "invalid run input: corpus: Input should be a valid list"),
    ({"question": QUESTION, "corpus": [1, 2]}, "corpus.0: a corpus folder is a path as text, not int '1'; "
                                               "corpus.1: a corpus folder is a path as text, not int '2'"),
    ({"question": "  ", "corpus": ["notes"]}, "question: the question is empty"),
    ({"question": QUESTION, "corpus": [""]}, "corpus.0: a corpus folder is a path as text, not an empty text"),
    ({"question": QUESTION, "constraints": "be brief"}, "constraints: Input should be a valid list"),
    ({"question": QUESTION, "roles_dirs": ["/tmp"]}, "roles_dirs: Extra inputs are not permitted"),
])
def test_bad_inputs_are_refused_in_one_line(fields, expected):
    with pytest.raises(ConfigError) as caught:
        checked_input(**fields)
    message = str(caught.value)
    assert expected in message and "\n" not in message, message


def test_the_cli_and_the_server_clean_a_question_alike():
    ask = checked_input(question="What grew\x1b[31m fastest?\n", corpus=[Path("notes")])
    assert ask == RunInput(question="What grew [31m fastest?", corpus=[Path("notes")])


@pytest.mark.parametrize("context, expected", [
    ({"runs_dir": "../../etc"}, "runs_dir: the server decides this (its operator sets BRIEFROOM_SERVE_RUNS_DIR)"),
    ({"roles_dirs": ["/tmp/evil"]}, "roles_dirs: the server decides this (its operator sets "
                                    "BRIEFROOM_SERVE_ROLES_DIRS)"),
    ({"data_dir": "/"}, "data_dir: the server decides this"),
    ({"model": "/models/../../home/u/x.gguf"}, "model: a model name ('test', 'embedded' or a model on the "
                                               "endpoint), not a path or file"),
    ({"model": "~/x"}, "model: a model name"),
    ({"rounds": "3"}, "rounds: Input should be a valid integer"),
    ({"rounds": 500}, "rounds: Input should be less than or equal to 20"),
    ({"parallel": 0}, "parallel: Input should be greater than or equal to 1"),
])
def test_a_client_chooses_only_what_the_server_lets_it(policy, context, expected):
    with pytest.raises(ConfigError) as caught:
        check_run({"question": QUESTION, "corpus": ["notes"]}, context, policy)
    assert expected in str(caught.value), caught.value


def test_a_corpus_inside_the_allow_list_is_resolved(policy, allowed):
    run = check_run({"question": QUESTION, "corpus": ["notes", str(allowed / "sub/../notes")]},
                    {"model": "test", "thread_id": "mirrored by the server"}, policy)
    assert run.corpus == [allowed / "notes", allowed / "notes"]
    assert run.options.model == "test"


@pytest.mark.parametrize("asked", ["../outside", "notes/../../outside", "/etc", "{outside}", "{allowed}/../outside"])
def test_a_corpus_outside_the_allow_list_is_refused(policy, allowed, outside, asked):
    asked = asked.format(outside=outside, allowed=allowed)
    with pytest.raises(ConfigError, match="outside the folders this server may read"):
        policy.corpus_folder(Path(asked))


def test_links_out_of_the_allow_list_are_refused(policy, allowed, outside):
    (allowed / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match="leads outside the folders this server may read: linked"):
        policy.corpus_folder(Path("linked"))
    (allowed / "notes" / "innocent.md").symlink_to(outside / "secret.md")
    with pytest.raises(ConfigError, match="holds a link leading outside .*: innocent.md"):
        policy.corpus_folder(Path("notes"))


def test_a_link_that_stays_inside_is_read(policy, allowed):
    (allowed / "notes" / "again.md").symlink_to(allowed / "notes" / "market.md")
    assert policy.corpus_folder(Path("notes")) == allowed / "notes"


def test_a_server_with_no_corpora_reads_none(tmp_path):
    policy = ServePolicy.from_env({}, cwd=tmp_path)
    assert policy.runs_dir == tmp_path / "runs" and policy.roles_dirs == ()
    with pytest.raises(ConfigError, match=f"reads no corpus folders .*{CORPORA_ENV}"):
        policy.corpus_folder(tmp_path)


def test_an_operator_typo_stops_the_server_at_start(tmp_path):
    with pytest.raises(ConfigError, match=f"{ROLES_DIRS_ENV}: not a folder"):
        ServePolicy.from_env({ROLES_DIRS_ENV: os.pathsep.join([str(tmp_path), str(tmp_path / "nope")])},
                             cwd=tmp_path)


def test_a_run_that_fails_records_its_error_and_says_why(policy, allowed, data_dir, monkeypatch):
    monkeypatch.setenv("BRIEFROOM_DATA_DIR", str(data_dir))
    (allowed / "empty").mkdir()
    (allowed / "empty" / "blob.bin").write_bytes(b"\x00\x01\x02")
    graph = build_served_graph(policy)
    with pytest.raises(RunFailed) as caught:
        graph.invoke({"question": QUESTION, "corpus": ["empty"]}, context={"model": "test"})
    assert str(caught.value).startswith("no readable documents"), caught.value
    [run_dir] = list(policy.runs_dir.iterdir())
    assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["status"] == "failed"
    events = [json.loads(line) for line in (run_dir / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[-1]["event"] == "error" and events[-1]["message"].startswith("no readable documents")
    assert "Traceback" in events[-1]["traceback"]


def test_a_bad_input_fails_before_a_run_directory_exists(policy):
    graph = build_served_graph(policy)
    with pytest.raises(RunFailed, match=r"^invalid run: question: Input should be a valid string"):
        graph.invoke({"question": 12345, "corpus": ["notes"]}, context={"model": "test"})
    assert not policy.runs_dir.exists()
