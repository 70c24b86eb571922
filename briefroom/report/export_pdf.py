"""The HTML export printed to PDF by headless Chromium.

Chromium lays out Chinese and English alike with the system's fonts (fontconfig), so
the PDF needs no typesetting code of ours and looks like the HTML page. Its profile is
a throwaway folder and its background services are off: printing a local file must
not reach the network or leave state behind.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from briefroom.errors import BriefroomError

PRINT_TIMEOUT_S = 120
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                  "--no-pdf-header-footer")  # no file path and date printed in the margins


class ChromiumMissing(BriefroomError):
    pass


def find_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ChromiumMissing("PDF export needs headless Chromium, which is not installed: run `make browser` "
                              "(or `apt-get install chromium`)")
    return found


def print_pdf(html: str, out: Path) -> Path:
    """Write `html` as the PDF `out`; BriefroomError, in one line, if Chromium fails."""
    chromium = find_chromium()
    with tempfile.TemporaryDirectory(prefix="briefroom-pdf-") as tmp:
        page, printed = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        profile = Path(tmp) / "profile"
        try:
            done = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                   f"--print-to-pdf={printed}", page.as_uri()],
                                  capture_output=True, text=True, timeout=PRINT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BriefroomError(f"Chromium did not print the PDF within {PRINT_TIMEOUT_S}s") from None
        except OSError as exc:
            raise BriefroomError(f"cannot start Chromium ({chromium}): {exc.strerror}") from None
        if done.returncode != 0 or not printed.is_file() or printed.stat().st_size == 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BriefroomError(f"Chromium could not print the PDF (exit {done.returncode}): {last[:200]}")
        # Moved into place whole: a reader never sees half a PDF.
        staged = out.with_name(f".{out.name}.tmp")
        shutil.copyfile(printed, staged)
        staged.replace(out)
    return out
