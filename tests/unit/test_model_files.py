"""`--model path/to/file.gguf` runs that file on the embedded server."""

import pytest

from briefroom.config import Settings
from briefroom.errors import ConfigError
from briefroom.llm import _provider, embedded_model_file


def test_a_gguf_path_is_the_embedded_provider_even_with_an_endpoint(tmp_path):
    model = tmp_path / "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"
    model.write_bytes(b"GGUF")
    settings = Settings(model=str(model), base_url="http://127.0.0.1:9/v1")
    assert _provider(settings, settings.model) == "embedded"
    assert embedded_model_file(settings, ["planner", "writer"]) == model.resolve()
    assert embedded_model_file(Settings(model="embedded"), ["planner"]) is None


def test_roles_must_agree_on_one_model_file_and_it_must_exist(tmp_path):
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF")
    b.write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match="one model file"):
        embedded_model_file(Settings(model=str(a), role_models={"writer": str(b)}), ["planner", "writer"])
    with pytest.raises(ConfigError, match="not found"):
        embedded_model_file(Settings(model=str(tmp_path / "missing.gguf")), ["planner"])
