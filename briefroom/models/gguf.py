"""GGUF headers, read with a reader of our own rather than llama.cpp or the `gguf` package:
listing a folder of multi-gigabyte models must not load one, and a damaged file must fail
with one line that says where, not with an exception from deep inside a library. Every read
is bounded twice, by the file's size (a cut-off download says "truncated") and by
MAX_HEADER_BYTES (garbage that claims a 2**60-byte string fails at once, without a loop
or an allocation of that size).
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from briefroom.errors import BriefroomError

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
