"""The team's report drafts as messages: the Writer publishes them, the Critic reviews them.

Its own module because two roles read it and roles never import each other; the
protocol below knows nothing of reports (`protocol/payloads.py` holds only the types the
framework itself reads).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from briefroom.protocol.messages import MsgType
from briefroom.protocol.payloads import PayloadModel, register_payload
from briefroom.records import ReportDraft


@register_payload
class ReportMessage(PayloadModel):
    """A report draft for review: the structured draft, its Markdown and its footer."""

    type: Literal["report"] = "report"
    # The draft lives on in the state's `report` and in the run log: not archived.
    archive_policy: ClassVar[Literal["summarize", "archive", "discard"]] = "discard"
    draft: ReportDraft
    markdown: str
    footer: str = ""


REPORT = MsgType.of("report")
