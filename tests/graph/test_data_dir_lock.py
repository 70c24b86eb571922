"""The embedded backend refuses what would corrupt it: one process at a time on a data
directory; a second one waits, then stops with an error naming the holder."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from briefroom.errors import ConfigError
from briefroom.run import data_dir_in_use


def test_a_second_process_on_a_data_directory_in_use_gets_a_clear_error(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from briefroom.run import data_dir_in_use
        with data_dir_in_use(Path({str(tmp_path)!r})):
            print("held", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=r"in use by briefroom pid \d+"):
            with data_dir_in_use(tmp_path, wait=0):
                pass
    finally:
        holder.communicate("go\n", timeout=60)
    with data_dir_in_use(tmp_path, wait=0):  # released when the holder finished
        assert "briefroom pid" in (tmp_path / "briefroom.lock").read_text()
