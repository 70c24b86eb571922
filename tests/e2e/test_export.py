"""Export end to end: a real run with --format, the PDF printed by headless Chromium and
read back with poppler (pdftotext for its words, pdftoppm for its pixels), Chinese
included; and a Chromium that fails is one line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import docx
import pytest
from typer.testing import CliRunner

from briefroom.cli import app
from briefroom.report.document import ReportDocument
from briefroom.report.export import export_run, load_document
from tests.conftest import SCENARIOS
from tests.e2e.browser import png_pixels
from tests.unit.test_export import ZH_SOURCES, make_run, zh_draft

pytestmark = pytest.mark.e2e
runner = CliRunner()
POPPLER = "pdftotext and pdftoppm read the PDF back: apt-get install poppler-utils"


def pdf_text(pdf: Path) -> str:
    assert shutil.which("pdftotext"), POPPLER
    done = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


def png_gray_pixels(png: Path) -> list[int]:
    """Gray values of an 8-bit RGB or gray PNG (what pdftoppm writes)."""
    _, _, channels, samples = png_pixels(png.read_bytes())
    assert channels in (1, 3), channels
    return [sum(samples[i:i + channels]) // channels for i in range(0, len(samples), channels)]


def first_page_variance(pdf: Path, tmp: Path) -> float:
    assert shutil.which("pdftoppm"), POPPLER
    done = subprocess.run(["pdftoppm", "-png", "-r", "30", "-f", "1", "-l", "1", str(pdf), str(tmp / "page")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (page,) = sorted(tmp.glob("page*.png"))
    pixels = png_gray_pixels(page)
    mean = sum(pixels) / len(pixels)
    return sum((p - mean) ** 2 for p in pixels) / len(pixels)


def test_blank_page_has_no_variance_so_the_check_can_fail(tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    from briefroom.report.export_pdf import print_pdf

    pdf = print_pdf(blank.read_text(), tmp_path / "blank.pdf")
    assert first_page_variance(pdf, tmp_path) == 0


def test_research_with_formats_writes_every_export_next_to_report_md(data_dir, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["research", "How big is the 2026 public cloud market and who is growing fastest?",
                                 "--corpus", str(SCENARIOS / "cloud-market" / "corpus"), "--model", "test",
                                 "--out", str(out), "--data-dir", str(data_dir), "--no-memory", "--quiet",
                                 "--format", "html,pdf", "--format", "docx,json,md"])
    assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html", "report.pdf", "report.docx", "report.json"):
        assert (out / name).stat().st_size > 0, name
    document = ReportDocument.model_validate_json((out / "report.json").read_text(encoding="utf-8"))
    assert document == load_document(out) and len(document.sources) >= 2
    assert all(c.passage is not None for c in document.citations())

    text = pdf_text(out / "report.pdf")
    for section in document.sections:
        assert " ".join(section.heading.split()) in text
    assert document.sources_heading in text
    for entry in document.sources:
        assert f"[{entry.number}]" in text and entry.title.split()[0] in text
    assert first_page_variance(out / "report.pdf", tmp_path) > 100

    word = docx.Document(str(out / "report.docx"))
    assert "References" in [p.text for p in word.paragraphs if p.style.name.startswith("Heading")]


def test_chinese_report_prints_with_a_cjk_font(tmp_path):
    run = make_run(tmp_path / "zh", zh_draft(), ZH_SOURCES, language="zh")
    (pdf,) = export_run(run, ["pdf"])
    text = pdf_text(pdf)
    for words in ("简短回答", "省会城市", "来源", "48.6万台", "[1]", "[2]", "临江省充电基础设施通报"):
        assert words in text.replace(" ", ""), words
    assert subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip(), \
        "no Chinese font: apt-get install fonts-noto-cjk (or fonts-wqy-zenhei)"
    # DejaVu (the Latin text's font) has no Chinese glyphs: the characters came from a second font,
    # which Chromium embeds (the Noto CJK collection as Type 3 glyphs, without a name).
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, timeout=60).stdout.splitlines()[2:]
    assert any("DejaVu" not in line for line in fonts), fonts
    assert first_page_variance(pdf, tmp_path) > 100


def test_a_failing_chromium_is_one_line(tmp_path, monkeypatch):
    run = make_run(tmp_path / "zh", zh_draft(), ZH_SOURCES, language="zh")
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    result = runner.invoke(app, ["export", str(run), "--format", "pdf", "--json"])
    assert result.exit_code == 1
    assert result.output.strip() == "error: Chromium could not print the PDF (exit 3): cannot open display"
    assert not (run / "report.pdf").exists()
