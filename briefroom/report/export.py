"""Export a finished run's report: report.html, report.pdf, report.docx, report.json.

This reads a run directory (report.md and sources.json, as the run's finish step wrote
them), parses the report once into a `ReportDocument` and renders each format asked
for from it, into the run directory next to report.md. It runs after the run, from the
CLI, so a run never fails for want of a browser, and an old run can be exported again.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

from briefroom.errors import BriefroomError
from briefroom.files import write_atomic
from briefroom.report.document import ReportDocument, parse_report
from briefroom.report.sources import load_sources

Format = Literal["md", "html", "pdf", "docx", "json"]
FORMATS: tuple[Format, ...] = get_args(Format)
REPORT_FILE = "report.md"


def parse_formats(values: Iterable[str]) -> list[Format]:
    """`--format` values, each possibly comma-separated ("html,pdf"), in order, each once."""
    wanted: list[Format] = []
    for value in values:
        for name in (part.strip().lower() for part in value.split(",")):
            if not name:
                continue
            if name not in FORMATS:
                raise BriefroomError(f"unknown format {name!r}: choose from {', '.join(FORMATS)}")
            if name not in wanted:
                wanted.append(name)  # type: ignore[arg-type]  # checked against FORMATS just above
    return wanted


def load_document(run_dir: Path) -> ReportDocument:
    """The run's report as a `ReportDocument`; a one-line BriefroomError if the run
    directory or its report is missing (an unfinished run has no report yet)."""
    if not run_dir.is_dir():
        raise BriefroomError(f"{run_dir} is not a run directory (no such folder)")
    report = run_dir / REPORT_FILE
    if not report.is_file():
        raise BriefroomError(f"{run_dir} has no {REPORT_FILE}: the run has not finished (see `briefroom runs show "
                             f"{run_dir}`)")
    markdown = report.read_text(encoding="utf-8")
    sources = load_sources(run_dir)
    return parse_report(markdown, sources.sources, sources.cited,
                        {sid: web.retrieved for sid, web in sources.web.items()})


def export_document(document: ReportDocument, run_dir: Path, formats: Iterable[Format]) -> list[Path]:
    formats = list(formats)
    if "pdf" in formats:
        from briefroom.report.export_pdf import find_chromium

        find_chromium()  # no browser: say so before writing any of the other files
    written = []
    for name in formats:
        out = run_dir / f"report.{name}"
        if name == "md":
            pass  # the run wrote report.md itself; it is the source of the others, never rewritten
        elif name == "json":
            write_atomic(out, document.model_dump_json(indent=2) + "\n")
        elif name == "html":
            from briefroom.report.export_html import render_html

            write_atomic(out, render_html(document))
        elif name == "pdf":
            from briefroom.report.export_html import render_html
            from briefroom.report.export_pdf import print_pdf

            print_pdf(render_html(document), out)
        elif name == "docx":
            from briefroom.report.export_docx import render_docx

            render_docx(document, out)
        written.append(out)
    return written


def export_run(run_dir: Path, formats: Iterable[Format]) -> list[Path]:
    """Write each format into `run_dir`; returns the files, report.md included if asked for."""
    return export_document(load_document(run_dir), run_dir, formats)
