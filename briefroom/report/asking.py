"""What a part of the question asks for, and what a sentence gives: the predicates the
outline ranks by (`report.outline`) and the report's shape checks with.

A part asks for a figure ("how many"), an amount of money, a share, a cause ("why"), a
measure (installed, sold, forecast), a level or a change, a period; a sentence gives
figures of some size and unit, for some years, of some measure, measured or projected,
or speaks of the report itself. Each is a small test on text, kept apart from how the
outline weighs them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from briefroom.protocol.extraction import Mention, content_words, number_mentions, numbers_in, root_words
from briefroom.records import SOURCE_ID

# Years in a part pick the facts of that year over those of another.
YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
# Words that open a sentence or a clause with a comma after them and name nothing
# ("First, about 0.46 million…", "However, …"), though written capitalised.
CONNECTIVES = frozenset("first second third fourth fifth firstly secondly thirdly finally lastly however "
                        "meanwhile moreover furthermore overall instead therefore nevertheless also".split())


def allowed_years(question: str) -> set[str]:
    """The years a question is about: those it names, and every year between two it names."""
    years = sorted(int(y) for y in YEAR.findall(question))
    if len(years) >= 2:
        return {str(y) for y in range(years[0], years[-1] + 1)}
    return {str(y) for y in years}


def about_other_years(text: str, question: str, title: str = "") -> bool:
    """A sentence that names years, none of them the question's, is about another time.
    One that names none ("that year the fastest-growing type was…") is about its
    document's time, when the document's title names one."""
    wanted = allowed_years(question)
    named = set(YEAR.findall(text)) or set(YEAR.findall(title))
    return bool(wanted and named and not named & wanted)


def dated_year(text: str) -> str | None:
    """The year a sentence dates its first figure by: the last year it names before that
    figure ("In 2024 the airport handled 13.57 million passengers, so traffic grew by
    9.2% in 2025" gives 2024's count; "2024年末全市常住人口为505.6万人"). None when it
    names no year before its first figure ("…handled 14.82 million passengers in 2025")."""
    mentions = figure_mentions(text)
    if not mentions:
        return None
    before = YEAR.findall(text[:mentions[0].start])
    return before[-1] if before else None


def figure_mentions(text: str) -> list[Mention]:
    """The figures of a sentence that are not years, where they stand."""
    return [m for m in number_mentions(text) if not YEAR.fullmatch(m.value)]


def figures(text: str) -> set[str]:
    """The figures of a sentence that are not years (what two rival sentences differ in)."""
    return {n for n in numbers_in(text) if not YEAR.fullmatch(n)}


_WANTS_FIGURE = re.compile(r"\bhow (?:many|much|big|large|fast|high|low)\b|\bby how\b|\bwhat (?:was|is|were|are|will) "
                           r"the (?:number|share|total|average|size|cost|price|capacity|rate|value|level)\b|"
                           r"多少|几|规模|比例|增长了|增速", re.I)


def wants_figure(part: str) -> bool:
    """"How many…", "by how much", "…是多少": only a sentence with a figure answers it."""
    return bool(_WANTS_FIGURE.search(part))


# A question about money is answered by an amount of money, not by the volume, count or
# share a sentence on the same subject gives ("71 million cubic metres" is not a cost).
_ASKS_MONEY = re.compile(r"\b(?:costs?|price[sd]?|spend(?:ing)?|spent|revenues?|tariffs?|fees?|paid|invest(?:ed|ment)?)\b|"
                         r"成本|价格|费用|收入|营收|投资|花费|多少钱", re.I)
_MONEY = re.compile(r"[$€£¥₹]|\b(?:USD|EUR|GBP|CNY|RMB|JPY|dollars?|euros?|cents?|yuan|yen)\b|元", re.I)


# Money measures that are not interchangeable: a household tariff is not what water
# costs to produce, sales are not spending. A sentence answers a money question only
# with the measure the question names (or a word for the same measure).
# "cheaper … by 6.5 euros" speaks of what a thing costs, or of its price, as "costs" does.
_CHEAPER = r"\bcheap(?:er|est)\b|\bdear(?:er|est)\b|\bcostl(?:ier|iest)\b"
_COST = re.compile(r"\bcost(?:s|ing)?\b|\bexpenses?\b|成本|" + _CHEAPER, re.I)
_PRICE = re.compile(r"\bpric(?:e|es|ed|ing)\b|\btariffs?\b|\bfees?\b|\bcharged?\b|价格|电价|票价|收费|" + _CHEAPER, re.I)
_MEASURES = [_COST, _PRICE, *(re.compile(p, re.I) for p in (
    r"\brevenues?\b|\bsales\b|\bturnover\b|\bincome\b|收入|营收",
    r"\bspen(?:d|ding|t)\b|\bexpenditures?\b|支出|花费",
    r"\binvest(?:ed|ment|ments)?\b|投资",
))]


# Measures of a quantity that are not interchangeable: units sold are not units installed,
# a forecast is not an outcome. A part that names one is answered (led) only by a
# sentence naming it; a sentence naming only another may stand beside the lead as a
# rival, labelled with what it measures (`measure_of`).
MEASURE_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("installed", re.compile(r"\binstall(?:ed|ing|ation|ations|s)?\b|\bcommission(?:ed|ing)?\b|\binto service\b|"
                             r"装机|安装|投运|投产", re.I)),
    ("sold", re.compile(r"\bsold\b|\bsales?\b|\bsell(?:s|ing)?(?:-in|-out)?\b|\bship(?:ped|ments?)\b|销量|销售|出货", re.I)),
    ("forecast", re.compile(r"\bforecasts?\b|\bexpect(?:s|ed)?\b|\bproject(?:ed|ions?)\b|\boutlook\b|预测|预计|有望", re.I)),
)
# A sentence whose subject is a difference ("The gap between … was 0.77 million") gives
# by how much two figures differ, not how many there are.
_DIFFERENCE_SUBJECT = re.compile(r"^\W*(?:the\s+)?(?:gap|difference|increase|decrease|change|shortfall)\b|^\W*(?:差距|差额)",
                                 re.I)
_ASKS_CHANGE = re.compile(r"\bby how much\b|\bchange[ds]?\b|\bgap\b|\bdiffer(?:ence)?\b|\bgrow(?:th|n)?\b|"
                          r"\bcompare[ds]?\b|变化|增长|相比|差距", re.I)


# Chinese gives a change by the verb before the figure ("增加34.3万人次"); a sentence all of
# whose figures come after one gives differences only.
_ZH_CHANGE_VERBS = "增加|减少|增长|下降|提高|降低|多出|少了"
_ZH_CHANGE_BEFORE = re.compile(rf"(?:{_ZH_CHANGE_VERBS})了?约?$")


def asks_change(part: str) -> bool:
    """The part asks by how much something changed or differs, not for a level."""
    return bool(_ASKS_CHANGE.search(part))


# "fourteen times as much", "3.7 times higher", "是……的14倍": a difference as a ratio.
_TIMES = re.compile(r"\btimes\s+(?:as|more|less|higher|lower|greater|smaller)\b|倍", re.I)
STATES_CHANGE = re.compile(r"\b(?:up|down|more|less|fewer|grew|rose|fell|increased?|decreased?|growth)\b|"
                           r"增加|减少|增长|下降|提高|降低|同比", re.I)


def answers_comparison(text: str, part: str) -> bool:
    """The part asks how something changed on a year it names ("how did passenger numbers
    compare with 2024", "与2024年相比各增加了多少") and the sentence gives a change on that
    year ("…1268万千瓦，比2024年底增加187万千瓦"); or the part asks only by how much, of
    what the question compared before it ("Which emits less, rail or flights, and by how
    much?"), and the sentence gives a difference with its figure ("…emitted 143 grams less
    than…", "…about 14 times as much…")."""
    if not asks_change(part) or not figures(text):
        return False
    if only_by_how_much(part):
        return bool(STATES_CHANGE.search(text)) or differs_between(text)
    return bool(set(YEAR.findall(part)) & set(YEAR.findall(text))) and bool(STATES_CHANGE.search(text))


# A difference between the things a question compares, not a change over time: "cheaper
# of the two …, by 6.5 euros", "a gap of 5.1 euros", "143 grams less than a flight" (not
# "3.0 percent more than in 2024", nor "more than 2 million").
_DIFFERENCE_BETWEEN = re.compile(
    r"\b(?:cheaper|dearer|costlier|higher|lower|larger|smaller|bigger|greater|fewer|more|less|faster|slower)\b"
    r"[^.;。]{0,40}?\bby\s+(?:about\s+|around\s+|some\s+)?\d"
    r"|\b(?:gap|difference)\s+(?:of|was|is|had\s+been|stood\s+at)\s+(?:about\s+)?\d"
    r"|\b(?:less|more|fewer)\s+than\s+(?!(?:in\s+|the\s+end\s+of\s+)?(?:19|20)\d{2})(?!\d)", re.I)


def differs_between(text: str) -> bool:
    """The sentence gives a difference between two things with its figure, not a change on
    a year: what "…, and by how much?" asks of the things the question compared."""
    return bool(figures(text)) and bool(_TIMES.search(text) or _DIFFERENCE_BETWEEN.search(text))


def only_by_how_much(part: str) -> bool:
    """The part asks by how much and says nothing else ("…, and by how much?"): it asks
    of what the question compared before it, in the question's words."""
    return asks_change(part) and not content_words(part)


def gives_only_differences(text: str) -> bool:
    if _DIFFERENCE_SUBJECT.search(text):
        return True
    mentions = figure_mentions(text)
    return bool(mentions) and all(_ZH_CHANGE_BEFORE.search(text[max(0, m.start - 4):m.start]) for m in mentions)


# Figures a source rounds (2.61 and 1.84 million, a gap of 0.77 million): their difference
# and the difference it states agree within this share of the larger level.
DIFFERENCE_ROUNDING = 0.005


def levels_of(text: str, difference: str) -> bool:
    """The sentence gives two figures in one unit whose difference `difference` states in
    that unit: the levels a gap is made of ("Manufacturers sold 2.61 million units …,
    while installers put 1.84 million units into service" behind "The gap between heat
    pumps sold and installed was 0.77 million units")."""
    gaps = _sized(difference)
    levels = _sized(text)
    return any(unit == u and abs(abs(a - b) - gap) <= DIFFERENCE_ROUNDING * max(a, b)
               for unit, gap in gaps for i, (u, a) in enumerate(levels) for v, b in levels[i + 1:] if v == u)


_PART_OFYEAR = re.compile(r"\b(?:quarter|Q[1-4]|half[- ]year|first half|second half|month|week)\b|"
                           r"季度|上半年|下半年|个月", re.I)


_ESTIMATE = re.compile(r"\bestimat(?:e[sd]?|ion)\b|估计|估算", re.I)


def projected(text: str) -> bool:
    """The figure is a forecast or an estimate, not a measured count."""
    return "forecast" in measures_in(text) or bool(_ESTIMATE.search(text))


def whole_period(text: str, part: str) -> bool:
    """The sentence's figure covers the period the part asks about: not a quarter, half
    year or month when the part does not ask for one."""
    return not _PART_OFYEAR.search(text) or bool(_PART_OFYEAR.search(part))


def measures_in(text: str) -> set[str]:
    return {name for name, pattern in MEASURE_FAMILIES if pattern.search(text)}


def measure_of(text: str) -> str | None:
    """What a sentence measures, when it names one family only (for a rival's label)."""
    found = measures_in(text)
    return next(iter(found)) if len(found) == 1 else None


def measured_apart(text: str, lead: str) -> str | None:
    """What a rival sentence measures that its lead does not: "forecast" for a forecast or
    estimate beside a measured figure, else its one measure family when the lead names
    another (`measure_of`); None when they measure alike."""
    if projected(text) and not projected(lead):
        return "forecast"
    mine, theirs = measure_of(text), measures_in(lead) - {"forecast"}
    return mine if mine and mine != "forecast" and theirs and mine not in theirs else None


def answers_measure(text: str, part: str) -> bool:
    """The sentence gives the measure the part asks for (any, when the part names none),
    and a level when the part asks for a level, not a difference."""
    asked = measures_in(part) - {"forecast"}
    if asked and not asked & measures_in(text):
        return False
    return bool(_ASKS_CHANGE.search(part)) or not gives_only_differences(text)


# A part asking for a share ("what share of all cars", "占比") is answered by a
# percentage or a fraction, not by a count on the same subject.
_ASKS_SHARE = re.compile(r"\b(?:shares?|percent(?:age)?s?|proportions?|fractions?)\b|占比|比例|比重|份额|百分之", re.I)
_STATES_SHARE = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:%|％|percent\b|per cent\b)|百分之|\bone (?:in|out of) (?:\w+)\b|"
                           r"\b(?:half|a third|a quarter)\b|[一二三四五六七八九十]成", re.I)
# A percentage that is a change, not a share of a whole: "3.4 percent more than in 2024",
# "up 6.5%", "grew by 31%", "增长3.4%" (but "made up 10.6%" is a share).
_CHANGE_AFTER = re.compile(r"\s*(?:more|less|fewer|higher|lower|up|down|increase|decrease|rise|drop|fall|growth|"
                           r"gain|year[- ]on[- ]year)\b", re.I)
_CHANGE_BEFORE = re.compile(
    r"(?:\b(?:(?<!made )(?<!make )(?<!makes )up|down|rose|fell|grew|increased|decreased|declined|climbed|dropped|"
    r"(?:growth|increase|decrease|rise|fall|drop) of)\s+(?:by\s+)?(?:about\s+|around\s+|some\s+|nearly\s+|"
    rf"almost\s+)?|(?:{_ZH_CHANGE_VERBS}|增幅|降幅|同比)了?约?为?)$", re.I)


def wants_share(part: str) -> bool:
    return bool(_ASKS_SHARE.search(part))


def states_share(text: str) -> bool:
    """The text gives a share of a whole: a percentage or a fraction that is not a change."""
    for m in _STATES_SHARE.finditer(text):
        change = m.group(0)[0].isdigit() and (_CHANGE_AFTER.match(text, m.end())
                                              or _CHANGE_BEFORE.search(text[max(0, m.start() - 40):m.start()]))
        if not change:
            return True
    return False


def wants_money(part: str) -> bool:
    return bool(_ASKS_MONEY.search(part))


def same_measure(text: str, part: str) -> bool:
    """The sentence speaks of the money measure the part asks about (if it names one)."""
    asked = [m for m in _MEASURES if m.search(part)]
    return not asked or any(m.search(text) for m in asked)


def states_money(text: str) -> bool:
    return bool(_MONEY.search(text))


# A part asking how many of something there were counts them; 多少 with a measure word for
# things (辆, 台, 个…) does too. "How much" may ask for money, so it is not here.
_ASKS_COUNT = re.compile(r"\bhow many\b|多少(?:辆|台|个|座|家|人|套|处|条|架|艘|户)", re.I)


def asks_count(part: str) -> bool:
    return bool(_ASKS_COUNT.search(part))


# "how many buses did it run": the words after "how many" name what is counted.
_COUNTED = re.compile(r"\bhow many\s+((?:[^\W\d][\w-]*\s+){0,2}[^\W\d][\w-]*)", re.I)
# The words right after a figure name what it counts ("612 buses", "48.6 million passengers").
_AFTER_FIGURE = 3


def counts_what_is_asked(text: str, part: str) -> bool:
    """A figure of the sentence counts the thing the part asks how many of ("how many
    buses did it run": "a fleet of 612 buses" does, "48.6 million passengers" does not);
    true when the part names no such thing (English only: Chinese counts by measure word)."""
    m = _COUNTED.search(part)
    wanted = root_words(m.group(1)) if m else set()
    if not wanted:
        return True
    return any(wanted & root_words(" ".join(text[mention.end:].split()[:_AFTER_FIGURE]))
               for mention in figure_mentions(text))


def prices(text: str) -> bool:
    """The sentence gives a price or a cost in money ("The average retail price of a 200-litre
    heat pump water heater … was about 2,100 euros"): what something costs, not how many
    of it there were, however well its words match a count."""
    return states_money(text) and bool(_COST.search(text) or _PRICE.search(text))


# A sentence about the report itself ("The report includes a section on…", "In this
# report, we…", "本报告…") says nothing of the world: it is no finding, whatever it cites.
_ABOUT_THE_REPORT = re.compile(r"^\W*(?:the|this|our)\s+(?:report|brief|document|section|summary|analysis)\s+"
                               r"(?:includes?|contains?|concludes?|discuss(?:es)?|covers?|describes?|presents?|"
                               r"shows?|provides?|is|will|aims?|looks?|focuse?s?)\b|"
                               r"^\W*an?\s+(?:report|brief|document|summary|analysis)\s+(?:about|(?:that|which)\s+"
                               r"(?:is|will|covers?|looks?|discuss(?:es)?|describes?|presents?|focuse?s?))\b|"
                               r"\b(?:in|throughout) this (?:report|brief|section)\b|^\W*(?:本|该)(?:报告|简报|节)", re.I)


def about_the_report(text: str) -> bool:
    return bool(_ABOUT_THE_REPORT.search(text))


# A source id as the Writer's evidence list prints it ("[S747b86f2, industry body, 2025] …").
_SOURCE_ID = re.compile(rf"\b{SOURCE_ID}\b")


def only_labels(text: str) -> bool:
    """The "sentence" is the evidence list's label of a source, not a statement: a bare
    source id ("S80f99d08", which holds no word or figure for any check to hold it to),
    or an id with its kind and date ("S747b86f2, industry body, 2025"), as a small model
    copies them into a claim."""
    if not _SOURCE_ID.search(text):
        return False
    rest = _SOURCE_ID.sub("", text).strip(" ,;:[]()-—.")
    return not rest or (_SOURCE_ID.match(text.strip(" [(")) is not None and len(rest.split()) <= 6
                        and not rest.endswith(("。", "！", "？")))


def restates_question(text: str, question: str) -> bool:
    """The sentence gives no figure and no word the question did not: the question said
    back ("Lindale Water Company in 2025: how much drinking water did it put into
    supply, …"), which a small model writes as a claim and a judge may pass. Words are
    compared by their roots: "the number of heat pumps installed changed" says back "how
    did the number … change" as much as the question's own words would."""
    words = root_words(text)
    return bool(words) and not figures(text) and words <= root_words(question)


# A title or heading naming the report ("A report on the facts and figures of …") labels
# nothing a reader looks for; in a sentence the same words may cite a source's report.
_REPORT_LABEL = re.compile(r"^\W*(?:an?|the|this|our)\s+(?:report|brief|summary|overview|analysis)\s+"
                           r"(?:on|about|of|into|for)\b", re.I)


def labels_the_report(label: str) -> bool:
    return about_the_report(label) or bool(_REPORT_LABEL.search(label))


# A Markdown table flattened into one line ("| Measure | 2024 | 2025 | |---|---|---| …"):
# cells, not a sentence a reader can take as an answer.
_TABLE = re.compile(r"\|\s*:?-{3,}:?\s*\||(?:\|[^|]*){4,}\|")


def holds_table(text: str) -> bool:
    return bool(_TABLE.search(text))


def is_statement(text: str) -> bool:
    """A sentence, not a heading or caption that lost its markup; a clause a semicolon ends
    is one too (a Chinese sentence is read clause by clause at its "；": "氢燃料电池公交车380辆，
    比上年末增长58.3%，是增长最快的车型；")."""
    return text.rstrip(" ”\"'）)").endswith((".", "!", "?", "。", "！", "？", "；", ";")) or len(text.split()) >= 12


# A part asking for a cause ("why do sales figures differ", "what holds back growth",
# "为什么…") is answered by the document that explains it, not by the figure that scores
# best: its title names the question, and its sentences give the reasons.
_ASKS_WHY = re.compile(r"^\W*(?:and\s+)?(?:why|how come)\b|\bwhat (?:explains|causes|caused|drives|limits|"
                       r"hold(?:s)? back|held back)\b|\breasons?\b|为什么|为何|原因|什么因素", re.I)


def asks_why(part: str) -> bool:
    return bool(_ASKS_WHY.search(part))


# Another estimate of one quantity lies within this factor of it; a figure further off
# is a part of it or something else (82 bn of GPU clouds beside a 723 bn market).
CLOSE_FACTOR = 2.0
# A figure this many times smaller than the lead's, in its unit, measures a part of the
# quantity (one segment of a market), not the quantity.
APART_FACTOR = 4.0
_UNIT_WORD = re.compile(r"\s*([A-Za-z]+|[\u4e00-\u9fff])")


def _valued(text: str) -> list[tuple[Mention, str | None, float]]:
    """Each figure of the sentence (not a year) with a value: the figure, the word after it
    (None if none), its value ("W:480000": a value in base units, the largest reading)."""
    out = []
    for m in figure_mentions(text):
        unit = _UNIT_WORD.match(text, m.end)
        values = [_number(v.rpartition(":")[2]) for v in m.claimed]
        value = max((v for v in values if v), default=None)
        if value:
            out.append((m, unit.group(1).lower() if unit else None, value))
    return out


@lru_cache(maxsize=4096)  # a rival's candidates are each held against the same lead
def _sized(text: str) -> tuple[tuple[str, float], ...]:
    """Each figure of the sentence (not a year) as (the word after it, its value)."""
    return tuple((word, value) for _, word, value in _valued(text) if word)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _ratios_to(text: str, lead: str) -> list[list[float]]:
    """For each figure of the sentence in a unit the lead uses, its ratios to the lead's
    figures in that unit."""
    theirs = _sized(lead)
    out = [[value / v for u, v in theirs if u == unit] for unit, value in _sized(text)]
    return [ratios for ratios in out if ratios]


def close_figures(text: str, lead: str) -> bool:
    """The sentence gives a figure in the lead's unit within `CLOSE_FACTOR` of one of the
    lead's, for a year the lead speaks of: another estimate of the same quantity (last
    year's count is no rival to this year's)."""
    years = set(YEAR.findall(text))
    if years and not years & set(YEAR.findall(lead)):
        return False
    return _close_in_size(text, lead)


def _close_in_size(text: str, lead: str) -> bool:
    """A figure of the sentence in a unit the lead uses is within `CLOSE_FACTOR` of one of the lead's."""
    return any(1 / CLOSE_FACTOR <= r <= CLOSE_FACTOR for ratios in _ratios_to(text, lead) for r in ratios)


def base_level(text: str, lead: str, year: str) -> bool:
    """The sentence gives the lead's quantity in `year`, the year a change is measured
    from: a measured figure (no forecast) dated that year, in the lead's unit and within
    `CLOSE_FACTOR` of the lead's ("2024年…日均客运量为352.4万人次" beside 2025's 386.7万人次;
    not the year's total of 12.9亿人次)."""
    if projected(text) or year not in YEAR.findall(text) or (dated_year(text) or year) != year:
        return False
    return _close_in_size(text, lead)


# A part asking how something went over a span of years: "from 2021 to 2025", "between
# 2021 and 2025", "2021–2025", "2021年至2025年", "2021—2025年". Longer spans than this
# are a history, not a series a section lists year by year.
_SPAN = re.compile(r"\bfrom\s+((?:19|20)\d{2})\s+(?:to|until|through)\s+((?:19|20)\d{2})(?!\d)"
                   r"|\bbetween\s+((?:19|20)\d{2})\s+and\s+((?:19|20)\d{2})(?!\d)"
                   r"|(?<!\d)((?:19|20)\d{2})年?\s*(?:[-–—~]+|至|到)\s*((?:19|20)\d{2})(?!\d)", re.I)
MAX_SPAN_YEARS = 12


def span_in(text: str) -> re.Match[str] | None:
    """Where the text names a span of years, if it does."""
    return _SPAN.search(text)


def span_start(found: re.Match[str]) -> str:
    """The first year of a span `span_in` found."""
    return next(year for year in found.groups() if year)


def span_years(part: str) -> list[str]:
    """The years of the span the part asks about, first to last; none if it names none."""
    found = span_in(part)
    if not found:
        return []
    first, last = (int(year) for year in found.groups() if year)
    return [str(year) for year in range(first, last + 1)] if 0 < last - first <= MAX_SPAN_YEARS else []


# Words after a figure that say nothing of what it counts ("451,300 in 2025").
_NO_UNIT = frozenset("in for during of and to from at on by than a an the".split())
# The year a figure is given for, when it follows the figure: "451,300 in 2025", "301,200
# paid admissions in 2025".
_YEAR_AFTER = re.compile(r"\s*(?:[^\W\d]+\s+){0,3}?(?:in|for|during)\s+((?:19|20)\d{2})(?!\d)", re.I)


@lru_cache(maxsize=4096)  # a series holds every fact against the year after's level
def _levels(text: str) -> tuple[tuple[str, float, str | None], ...]:
    """Each figure of the sentence as (the word after it, "" if none or a function word,
    its value, the year it is given for): the year right after it, else the last one
    before it ("2021, Maritime Museum: 182,400." — a table's cell has no word after its
    figure; "…after it reopened in March 2021, to 451,300 in 2025" gives 2025's level)."""
    out = []
    for m, word, value in _valued(text):
        after = _YEAR_AFTER.match(text, m.end)
        before = YEAR.findall(text[:m.start])
        year = after.group(1) if after else before[-1] if before else None
        out.append(("" if word is None or word in _NO_UNIT else word, value, year))
    return tuple(out)


def level_of_year(text: str, near: str, year: str) -> bool:
    """The sentence gives, for `year`, a measured level (no forecast, no change) within
    `CLOSE_FACTOR` of one of `near`'s figures in the same unit (the word after each, when
    both have one that is no function word): a series' neighbouring year ("2024, Maritime
    Museum: 438,100." beside 2025's 451,300), not the year's share or growth rate. A figure
    that names no year of its own counts for the one year the sentence names."""
    if projected(text) or gives_only_differences(text) or year not in YEAR.findall(text):
        return False
    alone = set(YEAR.findall(text)) == {year}
    return any(1 / CLOSE_FACTOR <= value / other <= CLOSE_FACTOR
               for unit, value, given in _levels(text) if given == year or (given is None and alone)
               for word, other, _ in _levels(near) if not unit or not word or unit == word)


def a_part_of(text: str, lead: str) -> bool:
    """The sentence gives figures in a unit of the lead's, each under 1/`APART_FACTOR`
    of the lead's largest in that unit: it measures a part of the quantity (GPU clouds'
    82 bn beside a 723 bn market), however well it scores. A larger figure stays: a
    year's forecast beside a quarter's actual tells the reader the whole."""
    shared = _ratios_to(text, lead)
    return bool(shared) and all(min(ratios) * APART_FACTOR < 1 for ratios in shared)


# Qualifiers that split one quantity into others: onshore wind is not offshore wind,
# exports are not imports, a year's additions are not the fleet that stands at its end.
# Each pair is (one side, the other side).
CONTRASTS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(a, re.I), re.compile(b, re.I)) for a, b in (
        (r"\bonshore\b|陆上", r"\boffshore\b|海上"),
        (r"\bimport(?:s|ed)?\b|进口", r"\bexport(?:s|ed)?\b|出口"),
        (r"\bdomestic\b|国内", r"\binternational\b|\bforeign\b|国际|境外"),
        (r"\burban\b|城镇", r"\brural\b|农村"),
        (r"\badd(?:s|ed|ing|itions?)?\b|\bnew(?:ly)?\b|新增|新装",
         r"\btotal (?:installed|capacity|fleet|stock)\b|\bcumulative\b|\bstood at\b|累计|保有量|总装机"),
    ))


def qualified_otherwise(text: str, part: str) -> bool:
    """The sentence names only the other side of a qualifier the part names on one side
    (`CONTRASTS`): onshore capacity where the part asks for offshore, the fleet's total
    where it asks what was added. It measures another quantity, however well it scores."""
    for one, other in CONTRASTS:
        for asked, counterpart in ((one, other), (other, one)):
            if (asked.search(part) and not counterpart.search(part)
                    and counterpart.search(text) and not asked.search(text)):
                return True
    return False


def close_rival(text: str, lead: str) -> bool:
    """Another estimate of the lead's quantity (`close_figures`), of the same kind: a
    forecast beside a forecast, a count beside a count, of the measure the lead names
    (next year's sales forecast is no rival to this year's installations)."""
    named = measures_in(lead) - {"forecast"}
    return close_figures(text, lead) and projected(text) == projected(lead) \
        and (not named or bool(named & measures_in(text)))


def is_title(text: str) -> bool:
    """A title names a subject; a sentence with figures is a claim, not a title."""
    words = text.split()
    return 2 <= len(words) <= 16 and not text.rstrip().endswith((".", "。", "?", "？")) and not figures(text) \
        and len(text) <= 120
