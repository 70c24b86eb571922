"""The report's language: the question's by default, `--language` to choose; every
role's charter says which, and the report's own labels follow it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.report.language import LABELS


def test_language_flag_overrides_the_questions_language(small_corpus, data_dir, tmp_path):
    runner = CliRunner()
    for language, out in (("zh", tmp_path / "zh"), (None, tmp_path / "en")):
        args = ["research", "How big is the 2026 public cloud market?", "--corpus", str(small_corpus), "--model",
                "test", "--rounds", "1", "--out", str(out), "--data-dir", str(data_dir), "--no-memory", "-q"]
        result = runner.invoke(app, [*args, *(["--language", language] if language else [])])
        assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "zh" / "charter.json").read_text())["language"] == "zh"
    assert json.loads((tmp_path / "en" / "charter.json").read_text())["language"] == "en"
    zh_report, en_report = (tmp_path / "zh" / "report.md").read_text(), (tmp_path / "en" / "report.md").read_text()
    assert LABELS["zh"]["sources"] in zh_report and LABELS["en"]["sources"] in en_report
    prompt = (tmp_path / "zh" / "run.jsonl").read_text()
    assert "Language: zh: write every sentence of your own in Chinese" in prompt


def test_an_unknown_language_is_a_one_line_error():
    with pytest.raises(ConfigError, match="--language"):
        Settings.from_env({}, language="fr")
