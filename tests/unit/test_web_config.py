"""Web settings and flags: off by default, the provider checked before a run starts, the
Brave key never in settings or run.json."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.runs import settings_for_record
from tests.web_fixture import BRAVE_KEY


def test_web_is_off_by_default_and_set_from_the_environment():
    assert Settings.from_env({}).web is False
    settings = Settings.from_env({"BRIEFROOM_WEB": "1", "BRIEFROOM_SEARXNG_URL": "http://localhost:8888",
                                  "BRIEFROOM_WEB_ALLOW_ADDRESSES": "127.0.0.1:8080, [::1]:8080",
                                  "BRIEFROOM_WEB_INTERVAL": "0.5"})
    assert settings.web and settings.search_provider == "searxng" and settings.searxng_url == "http://localhost:8888"
    assert settings.web_allow_addresses == ["127.0.0.1:8080", "[::1]:8080"] and settings.web_interval == 0.5


def test_flags_override_the_environment():
    settings = Settings.from_env({"BRIEFROOM_SEARCH_PROVIDER": "searxng"}, web=True, search_provider="brave",
                                 allow_domains=["example.com"], deny_domains=["ads.example.com"])
    assert settings.search_provider == "brave" and settings.allow_domains == ["example.com"]


@pytest.mark.parametrize("overrides, words", [
    ({"web": True}, "--searxng-url"),
    ({"web": True, "search_provider": "google"}, "--search-provider"),
    ({"searxng_url": "localhost:8888"}, "--searxng-url must be an http"),
    ({"web": True, "searxng_url": "http://s:8888", "database_url": "postgresql://u@db/x"}, "--database-url"),
])
def test_bad_web_settings_are_one_line_errors(overrides, words):
    with pytest.raises(ConfigError, match=words):
        Settings.from_env({}, **overrides)


def test_the_brave_key_is_not_a_setting(monkeypatch):
    monkeypatch.setenv("BRIEFROOM_BRAVE_API_KEY", BRAVE_KEY)
    settings = Settings.from_env(web=True, search_provider="brave")
    assert BRAVE_KEY not in str(settings_for_record(settings)) and BRAVE_KEY not in repr(settings)


def test_research_with_web_but_no_searxng_url_fails_before_the_run(tmp_path, data_dir):
    result = CliRunner().invoke(app, ["research", "q?", "--web", "--model", "test", "--out", str(tmp_path / "r"),
                                      "--data-dir", str(data_dir)])
    assert result.exit_code == 1 and "--searxng-url" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r" / "run.jsonl").exists()


def test_without_web_a_corpus_is_still_required(tmp_path, data_dir):
    result = CliRunner().invoke(app, ["research", "q?", "--no-web", "--model", "test", "--data-dir", str(data_dir)])
    assert result.exit_code == 1 and "no corpus" in result.output
