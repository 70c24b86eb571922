"""CLI behaviour: exit codes and one-line errors (typer's CliRunner, no model)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.events import RunEnd, RunStart, read_events

runner = CliRunner()


def test_research_with_test_provider_writes_run_directory(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", "How big is the 2026 public cloud market?", "--corpus", str(small_corpus),
                                 "--model", "test", "--out", str(out), "--data-dir", str(data_dir), "--json", "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["models"] == ["briefroom TEST provider (deterministic, no language model)"]
    assert {p.name for p in out.iterdir()} >= {"report.md", "sources.json", "charter.json", "run.jsonl"}
    assert "TEST provider" in (out / "report.md").read_text()
    log = read_events(out / "run.jsonl")  # every line is a valid event
    assert isinstance(log[0], RunStart) and isinstance(log[-1], RunEnd)


def test_missing_corpus_is_one_line_and_exit_1(tmp_path, data_dir):
    result = runner.invoke(app, ["research", "q?", "--corpus", str(tmp_path / "nope"), "--model", "test",
                                 "--out", str(tmp_path / "r"), "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert "corpus folder not found" in result.output
    assert "Traceback" not in result.output


def test_no_corpus_at_all(tmp_path, data_dir):
    result = runner.invoke(app, ["research", "q?", "--model", "test", "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert "no corpus" in result.output


def test_bad_flag_is_a_usage_error():
    result = runner.invoke(app, ["research", "q?", "--rounds", "0"])
    assert result.exit_code == 2


def test_unknown_model_without_endpoint_is_explained(small_corpus, tmp_path, data_dir):
    result = runner.invoke(app, ["research", "q about cloud?", "--corpus", str(small_corpus), "--model", "gpt-4o-mini",
                                 "--out", str(tmp_path / "r"), "--data-dir", str(data_dir), "-q"])
    assert result.exit_code == 1
    assert "needs an endpoint" in result.output


def test_existing_run_directory_is_not_overwritten(small_corpus, tmp_path, data_dir):
    out = tmp_path / "run"
    out.mkdir()
    (out / "report.md").write_text("precious")
    result = runner.invoke(app, ["research", "q about cloud?", "--corpus", str(small_corpus), "--model", "test",
                                 "--out", str(out), "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert (out / "report.md").read_text() == "precious"


def test_bad_role_model_pair(small_corpus, data_dir):
    result = runner.invoke(app, ["research", "q?", "--corpus", str(small_corpus), "--role-model", "writer",
                                 "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert "ROLE=MODEL" in result.output


def test_index_twice_embeds_once(small_corpus, tmp_path):
    data = tmp_path / "data"
    first = runner.invoke(app, ["index", str(small_corpus), "--data-dir", str(data)])
    second = runner.invoke(app, ["index", str(small_corpus), "--data-dir", str(data)])
    assert first.exit_code == second.exit_code == 0
    assert "3 documents (0 already indexed)" in first.stdout
    assert "3 documents (3 already indexed), 0 chunks embedded" in second.stdout


def test_replay_of_a_folder_without_scenario(tmp_path):
    result = runner.invoke(app, ["replay", str(tmp_path)])
    assert result.exit_code == 1
    assert "not a scenario folder" in result.output


def test_replay_of_a_broken_scenario(tmp_path):
    (tmp_path / "scenario.yaml").write_text("name: x\nrounds: zero\n")
    result = runner.invoke(app, ["replay", str(tmp_path)])
    assert result.exit_code == 1
    assert "scenario.yaml" in result.output


def test_roles_lists_builtin_and_plugin_roles(tmp_path):
    (tmp_path / "echo.py").write_text(
        "from briefroom.agents.base import Role\n"
        "from briefroom.protocol.bus import Subscription\n"
        "from briefroom.protocol.messages import MsgType\n"
        "ROLE = Role(name='echo', prompt='planner.md', subscriptions=(Subscription(msg_type=MsgType.of('report')),),\n"
        "            publications=(), step=lambda turn: None, description='echoes')\n")
    result = runner.invoke(app, ["roles", "--roles-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == ["planner", "searcher", "critic", "writer", "echo"]
    assert rows[-1]["subscribes"] == ["report"] and rows[1]["tools"] == ["local_search", "read_source", "read_artifact",
                                                                                  "web_search (optional)",
                                                                                  "fetch_url (optional)"]


def test_roles_with_a_broken_plugin_file(tmp_path):
    (tmp_path / "bad.py").write_text("this is not python(\n")
    result = runner.invoke(app, ["roles", "--roles-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "failed to load" in result.output


def test_section_shares_and_floors_are_checked(small_corpus, data_dir):
    for flag, value, message in [("--share", "facts", "SECTION=VALUE"), ("--share", "charter=0.5", "one of"),
                                 ("--share", "facts=1.5", "fraction"), ("--floor", "whiteboard=-1", "token count"),
                                 ("--floor", "whiteboard=lots", "not an integer")]:
        result = runner.invoke(app, ["research", "q?", "--corpus", str(small_corpus), "--model", "test", flag, value,
                                     "--data-dir", str(data_dir), "-q"])
        assert result.exit_code == 1, (flag, value)
        assert message in result.output and "Traceback" not in result.output


def test_the_installed_command_exits_non_zero_on_errors(tmp_path):
    """Through `main()`, as a user runs it (CliRunner skips main's exit-code handling)."""
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "briefroom.cli", *args], capture_output=True, text=True,
                              timeout=120)

    bad_input = run("inspect", str(tmp_path / "missing"))
    assert bad_input.returncode == 1 and bad_input.stderr.strip() == f"error: run directory not found: " \
                                                                      f"{tmp_path / 'missing'}"
    usage = run("research")
    assert usage.returncode == 2 and "Missing argument" in usage.stderr
    assert run("research", "q", "--corpus", str(tmp_path / "none"), "--model", "test",
               "--out", str(tmp_path / "run")).returncode == 1
    assert not list(tmp_path.iterdir())  # a run that cannot start leaves no run directory


def test_record_refuses_to_replace_a_recording_without_force(tmp_path):
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "cassette.jsonl").write_text('{"kept": true}\n')
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    result = runner.invoke(app, ["research", "How big is it?", "--corpus", str(corpus), "--model", "test",
                                 "--record", str(scenario), "--out", str(tmp_path / "run"), "-q"])
    assert result.exit_code == 2
    assert "already holds a recording (cassette.jsonl); add --force" in result.output
    assert (scenario / "cassette.jsonl").read_text() == '{"kept": true}\n'
    assert not (tmp_path / "run").exists()  # refused before any work


def test_record_refuses_a_scenario_whose_answer_key_does_not_load_before_any_work(tmp_path):
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "scenario.yaml").write_text("name: s\nquestion: How big is it?\nmust_not:\n- 36.9\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nIt is 36.9 metres tall.\n")
    result = runner.invoke(app, ["research", "How big is it?", "--corpus", str(corpus), "--model", "test",
                                 "--record", str(scenario), "--out", str(tmp_path / "run"), "-q"])
    assert result.exit_code == 2 and "must_not.0" in result.output
    assert not (tmp_path / "run").exists()  # refused before the run, which it would have thrown away


def test_plain_mistakes_are_one_error_line_that_says_what_to_fix(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nCloud grew 21% in 2026.\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    base = ["research", "How fast did cloud grow?", "--corpus", str(corpus), "--model", "test", "-q"]
    cases = [
        (base + ["--out", str(a_file)], {}, "--out " + str(a_file) + " is a file"),
        (base + ["--data-dir", str(a_file), "--out", str(tmp_path / "r1")], {}, "is a file; give a folder"),
        (base + ["--out", str(tmp_path / "r2")], {"BRIEFROOM_MAX_TOKENS": "abc"}, "BRIEFROOM_MAX_TOKENS: input should"),
        (base + ["--role-model", "nobody=test", "--out", str(tmp_path / "r3")], {}, "names no role of this team"),
        (["research", "q?", "--corpus", str(corpus), "--model", "gpt-x", "--out", str(tmp_path / "r4")],
         {"OPENAI_BASE_URL": "not a url"}, "the endpoint must be an http(s) URL"),
    ]
    for args, env, expected in cases:
        result = runner.invoke(app, args, env=env)
        assert result.exit_code in (1, 2), (args, result.output)
        assert expected in result.output and "internal error" not in result.output, result.output


def test_a_huge_or_binary_question_is_refused_before_any_work(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nCloud grew 21% in 2026.\n")
    for question, expected in (("why? " * 30_000, "at most 2,000"), ("what\x00 is it?", "NUL or replacement")):
        result = runner.invoke(app, ["research", question, "--corpus", str(corpus), "--model", "test", "-q",
                                     "--out", str(tmp_path / "run")])
        assert result.exit_code == 1 and expected in result.output, result.output
        assert not (tmp_path / "run").exists()


def test_sighup_and_sigterm_stop_a_run_like_ctrl_c(monkeypatch):
    import signal

    from briefroom import cli

    installed = {}
    monkeypatch.setattr(signal, "signal", lambda sig, handler: installed.__setitem__(sig, handler))
    cli.install_stop_signals()
    assert set(installed) == {signal.SIGTERM, signal.SIGHUP}
    for handler in installed.values():
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGHUP, None)


def test_shares_are_fractions_of_one_budget_and_controls_leave_the_question(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nCloud spending grew 21% in 2026.\n")
    result = runner.invoke(app, ["research", "q?", "--corpus", str(corpus), "--model", "test", "-q",
                                 "--share", "facts=0.9", "--share", "sources=0.9", "--share", "memory=0.9"])
    assert result.exit_code != 0 and "add up to 2.7" in result.output
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", "How fast did cloud\x1b[31m spending\x07 grow in 2026?", "--corpus",
                                 str(corpus), "--model", "test", "-q", "--out", str(out), "--no-memory"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "\x1b" not in result.output and "\x07" not in report and "\x1b" not in report
    assert json.loads((out / "charter.json").read_text())["goal"] == "How fast did cloud [31m spending grow in 2026?"


def test_a_run_that_spends_past_its_budget_says_so_and_exits_3(tmp_path, capsys):
    import typer

    from briefroom import cli
    from briefroom.run import RunResult

    over = RunResult(tmp_path, "# r\n", {}, {"test"}, [], tokens_used=1_466, budget=1_000)
    with pytest.raises(typer.Exit) as stop:
        cli._print_result(over, as_json=False)
    assert stop.value.exit_code == 3
    assert "spent 1,466 tokens, 466 past its budget of 1,000" in capsys.readouterr().err
    cli._print_result(RunResult(tmp_path, "# r\n", {}, {"test"}, [], tokens_used=999, budget=1_000), as_json=False)


def test_run_end_records_what_the_run_spent_against_its_budget(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nCloud spending grew 21% in 2026.\n")
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", "How fast did cloud spending grow in 2026?", "--corpus", str(corpus),
                                 "--model", "test", "--out", str(out), "-q", "--no-memory"])
    assert result.exit_code == 0, result.output
    end = read_events(out / "run.jsonl")[-1]
    assert isinstance(end, RunEnd) and end.tokens_used > 0 and end.budget is None  # no budget set


def test_a_damaged_store_file_is_named_with_what_to_do(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nCloud spending grew 21% in 2026.\n")
    data = tmp_path / "data"
    ok = runner.invoke(app, ["research", "How fast did cloud spending grow?", "--corpus", str(corpus), "--model",
                             "test", "-q", "--data-dir", str(data), "--out", str(tmp_path / "r1")])
    assert ok.exit_code == 0, ok.output
    (store,) = data.rglob("memory.sqlite")
    store.write_bytes(bytes(range(256)) * 64)  # random bytes where the database was
    for wal in store.parent.glob("memory.sqlite-*"):
        wal.unlink()
    result = runner.invoke(app, ["research", "How fast did cloud spending grow?", "--corpus", str(corpus), "--model",
                                 "test", "-q", "--data-dir", str(data), "--out", str(tmp_path / "r2")])
    assert result.exit_code == 1
    assert f"{store} (long-term memory) cannot be read" in " ".join(result.output.split()) or \
        "memory.sqlite (long-term memory) cannot be read" in result.output.replace("\n", "")
    assert "move it aside" in " ".join(result.output.split()) and "internal error" not in result.output


def test_research_shows_each_draft_and_the_verdict_on_stderr_as_they_happen(small_corpus, data_dir, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", "How big is the 2026 public cloud market?", "--corpus", str(small_corpus),
                                 "--model", "test", "--out", str(out), "--data-dir", str(data_dir), "--json"])
    assert result.exit_code == 0, result.output
    drafts = [json.loads(line)["draft"] for line in result.stderr.splitlines() if line.startswith('{"draft"')]
    assert drafts and not drafts[0]["accepted"] and drafts[-1]["accepted"]  # handed over, then let ship
    report = (out / "report.md").read_text()
    final = drafts[-1]
    assert final["sections"] and all(f"## {h}" in report for h in final["sections"])
    assert final["short_answer"] and final["short_answer"][:40] in report


def test_a_draft_outline_is_its_headings_and_the_first_line_under_the_first():
    from briefroom.cli.drafts import follow_drafts, outline_of
    from briefroom.records import Report

    md = "# Q?\n\n## Short answer\n\nIt is 723 bn. [1]\n\n## Size\n\n- x [1]\n\n## Sources\n\n[1] a\n\n---\n\n## no\n"
    assert outline_of(md) == (["Short answer", "Size"], "It is 723 bn.")
    lines: list[str] = []
    follow = follow_drafts(quiet=False, as_json=False, write=lines.append)
    draft = Report(markdown=md, revision=0)
    for update in ({"writer": {"report": draft}}, {"writer": {"report": draft}}, {"critic": {"notes": 1}},
                   {"critic": {"report": draft.model_copy(update={"accepted": True})}}):
        follow(update)
    assert len(lines) == 2  # the same draft seen twice is shown once; updates without a report show nothing
    assert lines[0].startswith("draft, revision 0: Short answer · Size") and "723 bn" in lines[0]
    assert lines[1].startswith("report accepted (revision 0)")


def test_a_re_recording_with_reuse_asks_the_model_only_what_changed(tmp_path):
    import json

    import yaml

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Cloud\n\nPublic cloud spending will reach 723 billion USD in 2026.\n")
    scenario = tmp_path / "scenario"
    question = "How big is the cloud market?"

    def record(*extra: str, run: str):
        return runner.invoke(app, ["research", question, "--corpus", str(corpus), "--model", "test", "--record",
                                   str(scenario), "--out", str(tmp_path / run), "--data-dir", str(tmp_path / "data"),
                                   "--no-memory", *extra])

    assert record("-q", run="first").exit_code == 0
    entries = [json.loads(line) for line in (scenario / "cassette.jsonl").read_text().splitlines()]
    report = (scenario / "report.md").read_text()
    # a prompt "changed since": the earlier recording's last writer call no longer matches
    last_writer = max(n for n, e in enumerate(entries) if e["role"] == "writer")
    edited = [dict(e, prompt_sha="0" * 64) if n == last_writer else e for n, e in enumerate(entries)]
    (scenario / "cassette.jsonl").write_text("".join(json.dumps(e) + "\n" for e in edited))
    result = record("--reuse", run="second")
    assert result.exit_code == 0, result.output
    n = len(entries)
    assert f"{n - 1} of {n} call(s) reused from the recording it replaced, 1 asked of the model" in result.output
    assert (scenario / "report.md").read_text() == report
    assert [json.loads(line)["prompt_sha"] for line in (scenario / "cassette.jsonl").read_text().splitlines()] == [
        e["prompt_sha"] for e in entries]  # the new recording is whole again

    assert "--reuse goes with --record" in runner.invoke(app, ["research", question, "--corpus", str(corpus),
                                                               "--model", "test", "--reuse"]).output
    fields = yaml.safe_load((scenario / "scenario.yaml").read_text())
    fields["handles"]["writer"]["label"] = "embedded smollm2-135m-instruct (llama.cpp, local)"
    (scenario / "scenario.yaml").write_text(yaml.safe_dump(fields))
    other = record("--reuse", run="fourth")
    assert other.exit_code != 0
    assert "--reuse: the recording's writer was 'embedded smollm2-135m-instruct" in other.output
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    refused = runner.invoke(app, ["research", question, "--corpus", str(corpus), "--model", "test", "--record",
                                  str(nothing), "--reuse"])
    assert refused.exit_code == 2 and "holds no recording to reuse" in refused.output


def test_a_re_recording_keeps_what_a_person_wrote_about_the_scenario(tmp_path):
    import yaml

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Cloud\n\nPublic cloud spending will reach 723 billion USD in 2026.\n")
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    written = {"name": "scenario", "question": "How big is the cloud market?", "split": "dev",
               "answer_key": [{"name": "size", "any": ["723 billion"], "part": 1}], "must_not": ["680 billion"],
               "trap": ["credibility"], "authoritative": ["723 billion"], "note": "680 bn is a newswire's rival."}
    (scenario / "scenario.yaml").write_text(yaml.safe_dump(written))
    result = runner.invoke(app, ["research", "How big is the cloud market?", "--corpus", str(corpus), "--model",
                                 "test", "--record", str(scenario), "--out", str(tmp_path / "run"),
                                 "--data-dir", str(tmp_path / "data"), "--no-memory", "-q"])
    assert result.exit_code == 0, result.output
    kept = yaml.safe_load((scenario / "scenario.yaml").read_text())
    for field in ("split", "answer_key", "must_not", "trap", "authoritative", "note"):
        assert kept[field] == written[field], field
