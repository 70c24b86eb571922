"""What kind of report the user asked for: `--report brief|standard|detailed`,
`--words N` (a target length), `--audience TEXT` (its tone) and `--quotes keep|restate`
(the quotes code stands on, verbatim or said again in the model's words).

The kind sets how much the report says; the words, when given, are the target the
Writer's model is told and that code trims to; the audience goes only into the Writer's
prompt (code cannot check tone, so it does not pretend to).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ReportKind = Literal["brief", "standard", "detailed"]
QuoteMode = Literal["keep", "restate"]
REPORT_KINDS: tuple[str, ...] = ("brief", "standard", "detailed")


class ReportShape(BaseModel):
    """How much one kind of report says."""

    model_config = ConfigDict(frozen=True)

    sentences_per_section: int  # the most sentences a section keeps
    summary_sentences: int  # the executive summary's length
    # the summary may grow to a sentence for each part the short answer leaves (a
    # five-part question's fifth part is what a reader who stops there would miss)
    summary_every_part: bool
    rivals: int  # rival figures shown beside a part's lead
    words: int  # the default target length


SHAPES: dict[str, ReportShape] = {
    "brief": ReportShape(sentences_per_section=2, summary_sentences=2, summary_every_part=False, rivals=1, words=200),
    "standard": ReportShape(sentences_per_section=4, summary_sentences=3, summary_every_part=True, rivals=2, words=450),
    "detailed": ReportShape(sentences_per_section=8, summary_sentences=4, summary_every_part=True, rivals=2, words=1000),
}


class ReportSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ReportKind = "standard"
    words: int | None = Field(default=None, ge=50, le=20_000)
    audience: str | None = Field(default=None, max_length=300)
    # "restate": the Writer's model says each quote of the report again in its own words,
    # taken where code finds it says the same (`report.restate`; one call more a draft)
    quotes: QuoteMode = "keep"

    @property
    def shape(self) -> ReportShape:
        return SHAPES[self.kind]

    @property
    def target_words(self) -> int:
        return self.words or self.shape.words
