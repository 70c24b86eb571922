"""What kind of source a document is, and when it speaks: decided in code, from its own
title and opening lines, by the rule table below.

A report weighs its sources: a registry's count outranks a blogger's estimate of the
same thing, and a reader should see which is which. No model is asked: the same
document always gets the same kind, and the rule that decided it is named
(`SourceProfile.rule`), so a wrong kind is a rule to fix, not a mood.

The rules run in the table's order and the first that matches decides. Title rules
come first (a title that says "Opinion:" or "Press release" is the document telling
what it is); then phrases in the opening text, with the kinds that most distort a
figure (opinion, marketing) before the ones that vouch for it, so an opinion piece
that quotes a registry is still an opinion piece.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from briefroom.records import SourceRecord

SourceKind = Literal["official", "industry_body", "analyst", "company", "news", "opinion", "marketing",
                     "reference", "unknown"]

# How the kind reads in a report, in each report language.
KIND_LABELS: dict[str, dict[str, str]] = {
    "en": {"official": "official statistics or registry", "industry_body": "industry body", "analyst": "analyst",
           "company": "company", "news": "news", "opinion": "opinion or blog", "marketing": "marketing",
           "reference": "reference", "unknown": "document"},
    "zh": {"official": "官方统计或登记", "industry_body": "行业机构", "analyst": "研究机构", "company": "企业",
           "news": "新闻", "opinion": "观点或博客", "marketing": "营销材料", "reference": "参考资料",
           "unknown": "文档"},
}

# How much a kind's figure counts when the report chooses which figure answers a part:
# multiplies the sentence's relevance to the part (`report.rank`). The order is the
# issue's (registry first, marketing last); the steps are small between the kinds that
# measure (a primary count is preferred unless a secondary source answers clearly
# better) and large before opinion and marketing, which lead only when nothing else
# answers at all (their relevance would need to be more than twice the best other's).
# Checked on the development split (cloud-market, heat-pumps-sold-vs-installed,
# wind-multipart, zh-rail-ridership): with these weights every answer-key figure leads
# its part, and the heat-pump opinion's 2.9 million no longer does.
AUTHORITY: dict[str, float] = {"official": 1.0, "industry_body": 0.95, "analyst": 0.9, "company": 0.85,
                               "news": 0.8, "reference": 0.8, "unknown": 0.8, "marketing": 0.45, "opinion": 0.4}
# Kinds whose figures are someone's estimate or pitch: labelled as such wherever cited.
UNVERIFIED_KINDS = frozenset({"opinion", "marketing"})


def _any(*phrases: str) -> re.Pattern[str]:
    return re.compile("|".join(phrases), re.I)


# The parts of a "who publishes it" rule: the publishing verb or the "<kind of document>
# of" that names the publisher, the publisher's name, and the word that says what the
# publisher is. A city's or a county's council is a public body; an industry's council
# ("Installers' Council") is not.
_PUBLISHED_BY = r"\b(?:published|issued|adopted|compiled|released|prepared)\b[^.\n]{0,40}?\bby[ \t]+(?:the[ \t]+)?"
_OF_BODY = r"\b(?:press release|statistics|bulletin|figures|release)[ \t]*(?:of|from|by|,)[ \t]+(?:the[ \t]+)?"
_NAME = r"[^.,;:\n]{0,60}?"
_PUBLIC_BODY = (r"(?:authority|office|directorate|ministry|bureau|agency|administration|commission|government|"
                r"department|(?:city|county|municipal|regional|state|town) council|parliament)")
_COMPANY = r"(?:company|corporation|plc|inc|ltd|limited|gmbh|ab)"


def _title_names(body: str) -> str:
    """A title that opens with the publisher's name: "Varnholm City Energy Office: …"."""
    return rf"^[^:\n]{{0,60}}?\b{body}\b[^:\n]{{0,3}}:"


def _title_owns(body: str) -> str:
    """A title that names the publisher before its own document: "Kestrel Bus Company
    business plan 2022–2026", "Varnholm City Council's climate plan"; a headline that
    only starts with a name ("Kestrel Bus Company carries fewer people") does not."""
    return (rf"^[^:\n]{{0,60}}?\b{body}(?:['’]s)?[ \t]+(?:business |strategic |annual |investment |climate |"
            rf"transport |development |master )?(?:plan|report|strategy|accounts|review|prospectus)\b")


def _published_by(body: str) -> tuple[str, str]:
    """A text that names its publisher: "Published … by X", "bulletin of X"."""
    return rf"{_PUBLISHED_BY}{_NAME}\b{body}\b", rf"{_OF_BODY}{_NAME}\b{body}\b"


# (rule name, kind, where it looks, pattern). "title" looks at the title only; "text" at
# the title and the opening lines (`OPENING_CHARS`).
RULES: tuple[tuple[str, SourceKind, Literal["title", "text"], re.Pattern[str]], ...] = (
    ("title says opinion", "opinion", "title",
     _any(r"^\s*(?:opinion|op-ed|commentary|column|blog|editorial)\b", r"随笔|评论[:：]|观点[:：]|博客")),
    # a byline under the title naming a column or a blog ('Travel column, "Gate Notes", 9 September 2025';
    # '"Deck Log" shipping blog, 11 January 2026': the name may be quoted)
    ("byline says column", "opinion", "text",
     _any(r"(?:^|\n)[ \t]*(?:[\"“‘']?[\w-]+[\"”’']?[ \t]){0,3}(?:column|blog|op-ed|commentary)[ \t]*[,:—–]", r"(?:^|\n)\s*\S{0,6}(?:专栏|博客)[，,:：]")),
    ("title says press release", "company", "title", _any(r"\bpress release\b", r"新闻稿")),
    ("title says bulletin", "official", "title", _any(r"\bstatistical (?:bulletin|release)\b", r"统计公报|公报")),
    ("title says earnings", "company", "title", _any(r"\bearnings\b", r"\bquarterly results\b", r"财报")),
    ("title says news", "news", "title", _any(r"\bnewswire\b", r"\bnews\b", r"快讯|新闻")),
    ("first-person estimate", "opinion", "text",
     _any(r"\bby my (?:own )?estimate", r"\bback-of-the-envelope\b", r"\bin my (?:view|opinion)\b",
          r"\bthe views (?:below )?are the author'?s own\b", r"\bopinion (?:piece|post)\b", r"\bpersonal (?:energy )?blog\b",
          r"\bposted on (?:a|the) .{0,40}blog\b", r"个人观点|笔者认为|我认为|个人博客")),
    ("promotional wording", "marketing", "text",
     _any(r"\bsponsored\b", r"\badvertisement\b", r"\bbuy now\b", r"\brequest a (?:demo|quote)\b",
          r"\bour (?:award-winning|industry-leading|market-leading)\b", r"\blimited[- ]time offer\b",
          r"广告|推广(?:活动|内容|信息)|立即购买|限时优惠")),  # a plan's 推广纯电动公交车 promotes no product
    # Who publishes the document, where it says so, decides before a phrase it only
    # mentions: a charging operator's "registered charging accounts" is the operator's
    # figure, a city council's plan is no industry council's.
    ("title names a public body", "official", "title", _any(_title_names(_PUBLIC_BODY), _title_owns(_PUBLIC_BODY))),
    ("title names a company", "company", "title", _any(_title_names(_COMPANY), _title_owns(_COMPANY))),
    ("published by a public body", "official", "text", _any(*_published_by(_PUBLIC_BODY))),
    ("published by a company", "company", "text", _any(
        *_published_by(_COMPANY),
        # "Voltline, the largest public charging operator": a name (capitalised, whatever the
        # table's case rule) and what it is
        r"(?:^|\n)[ \t]*(?-i:[A-Z])[\w'’ .&-]{1,50},[ \t]+(?:the|a|an)[ \t]+[^,.\n]{0,50}?\b(?:company|operator|maker|manufacturer|"
        r"carrier|utility|airline|developer|retailer)\b",
        r"(?:^|\n|。)[ \t]*[^\s。，,]{2,20}?(?:集团|公司)(?:发布|消息|统计|公告|表示)")),
    ("statistics office or registry", "official", "text",
     _any(r"\bstatistic(?:s|al) (?:office|bureau|agency)\b", r"\bofficial statistics\b", r"\bregist(?:ry|er|ers)\b",
          r"\bregistered\b", r"\bcensus\b", r"\bministry\b", r"\bdirectorate\b", r"\bcommissioning records\b",
          r"统计局|统计公报|交通运输局|能源局|登记|主管部门|政府")),
    ("industry association", "industry_body", "text",
     _any(r"\bassociation\b", r"\bcouncil\b", r"\bfederation\b", r"\bforum\b", r"\bmanufacturers group\b",
          r"\bindustry (?:body|group)\b", r"\bmember companies\b", r"\bchamber of\b", r"协会|联盟|商会|行业组织")),
    ("analyst or forecast", "analyst", "text",
     _any(r"\banalysts?\b", r"\bresearch (?:firm|group|institute)\b", r"\bforecasts?\b", r"\boutlook\b",
          r"\bmarket tracker\b", r"\bmarket research\b", r"研究院|研究报告|预测|分析师|研究机构")),
    ("company results", "company", "text",
     _any(r"\bearnings\b", r"\bquarterly results\b", r"\binvestor relations\b", r"\bannual report\b",
          r"\bthe company said\b", r"\bpress release\b", r"财报|公司公告|年报")),
    ("news report", "news", "text", _any(r"\bnewswire\b", r"\bnews\b", r"\breported on\b", r"消息|报道|记者")),
    ("glossary or reference", "reference", "text", _any(r"\bglossary\b", r"\bdefinitions?\b", r"术语|释义")),
)
# How much of a document's beginning the text rules read: its title and first lines say
# what it is; a phrase deep inside (a quote of a registry) does not.
OPENING_CHARS = 600
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")
# A year named as a target or a forecast's horizon ("by 2029", "until 2030", "forecast for 2026").
_YEAR_AHEAD = re.compile(r"\b(?:by|until|till|through|before|forecasts? for|outlook for|expected in|planned for)\s+"
                         r"(?:the end of\s+)?((?:19|20)\d{2})(?!\d)"
                         r"|(?<!截)(?:到|至|预计|力争)((?:19|20)\d{2})年", re.IGNORECASE)  # 到2025年: by 2025 (截至: as of)
# The end of a span a title names ("Plan 2020–2035", "（2020—2035年）"): the horizon, not the date.
_YEAR_RANGE_END = re.compile(r"(?<=\d)\s*[-–—~至到]\s*(?:19|20)\d{2}(?!\d)")
# When a Chinese document says it was issued: "2021年9月印发", "本计划于2024年3月发布".
_ZH_ISSUED = re.compile(r"((?:19|20)\d{2})年(?:\d{1,2}月)?(?:\d{1,2}日)?\s*(?:印发|发布|公布|出版)")
# When a title says its document was written: "(submitted 2021)", "published in May 2024".
_EN_ISSUED = re.compile(r"\b(?:submitted|issued|published|adopted|released|written)\b[^()\d]{0,20}?((?:19|20)\d{2})(?!\d)",
                        re.IGNORECASE)
_ISO_DATE = re.compile(r"(?<!\d)((?:19|20)\d{2}-[01]\d-[0-3]\d)(?!\d)")
# When an English opening says its document came out: "Published on 27 January 2026",
# "Published in July 2025", "Posted 3 November 2025" (a day and a month may stand before the year).
_EN_PUBLISHED = re.compile(r"\b(?i:published|issued|released|posted)\b(?:\s+(?:on|in))?\s+(?:\d{1,2}\s+)?"
                           r"(?:[A-Z][a-z]+\.?\s+)?(?:\d{1,2},?\s+)?((?:19|20)\d{2})(?!\d)")


class SourceProfile(BaseModel):
    """A source's kind and date, and the rule that decided the kind."""

    model_config = ConfigDict(frozen=True)

    source_id: str
    kind: SourceKind
    date: str | None = None  # an ISO date or a year, as the document gives it
    rule: str = "no rule matched"

    def label(self, language: str = "en") -> str:
        words = KIND_LABELS.get(language, KIND_LABELS["en"])[self.kind]
        return f"{words}, {self.date}" if self.date else words

    @property
    def authority(self) -> float:
        return AUTHORITY[self.kind]

    @property
    def unverified(self) -> bool:
        return self.kind in UNVERIFIED_KINDS


def opening_text(record: SourceRecord) -> str:
    """The beginning of what the team saw of a document: its passages in document order."""
    text = " ".join(p.text for p in sorted(record.passages, key=lambda p: p.start))
    return text[:OPENING_CHARS]


def classify(title: str, opening: str) -> tuple[SourceKind, str]:
    """The kind the first matching rule gives, and that rule's name."""
    for name, kind, where, pattern in RULES:
        if pattern.search(title if where == "title" else f"{title}\n{opening}"):
            return kind, name
    return "unknown", "no rule matched"


def source_date(title: str, opening: str) -> str | None:
    """An ISO date in the opening, else the year the title says it was written in, else
    the year the title names (when it names a span, "statistics 2021–2025", the year the
    opening says it was published, if it says: the span may be the years it counts), else the year a
    Chinese opening says it was issued, else the year the
    opening names most often (ties: the latest), not counting the years it looks ahead
    to: a news item "expects the market to pass 1 trillion by 2029" was not written in 2029."""
    iso = _ISO_DATE.search(opening)
    if iso:
        return iso.group(1)
    issued_title = _EN_ISSUED.search(title)
    if issued_title:  # "business plan 2022–2026 (submitted 2021)": the title says when it was written
        return issued_title.group(1)
    in_title = _YEAR.findall(_YEAR_RANGE_END.sub("", title))
    if in_title and not _YEAR_RANGE_END.search(title):
        return max(in_title)
    published = _EN_PUBLISHED.search(opening)
    if published and in_title:  # "statistics 2021–2025 … Published on 27 January 2026": a span of past years
        return published.group(1)
    if in_title:
        return max(in_title)
    issued = _ZH_ISSUED.search(opening)
    if issued:
        return issued.group(1)
    ahead = {m.group(1) or m.group(2) for m in _YEAR_AHEAD.finditer(opening)}
    counts = Counter(y for y in _YEAR.findall(opening) if y not in ahead)
    return max(counts, key=lambda y: (counts[y], y)) if counts else None


def profile(record: SourceRecord) -> SourceProfile:
    opening = opening_text(record)
    kind, rule = classify(record.title, opening)
    return SourceProfile(source_id=record.source_id, kind=kind, date=source_date(record.title, opening), rule=rule)


def profiles(sources: dict[str, SourceRecord]) -> dict[str, SourceProfile]:
    return {sid: profile(record) for sid, record in sources.items()}
