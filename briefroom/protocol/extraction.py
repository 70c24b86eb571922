"""Round summaries and the lossless channel beside them.

A RoundSummary (one model call at round end, schema-validated) replaces the round's
raw messages in later prompts. Numbers never depend on it: `extract_facts` copies
every sentence with a number verbatim into `facts`, deterministically, from the raw
text, so a summary that mangles a figure cannot lose it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from briefroom.protocol.statements import directive
from briefroom.records import Fact, RoundRecord, RoundSummary, SummaryPoint  # noqa: F401 (re-exported

# Marks that close a quotation or a bracket: they stay with the sentence they close.
_CLOSERS = "”’」』）》〉】\"')"
_SENTENCE = re.compile(rf"(?:(?<=[.!?])|(?<=[.!?][{_CLOSERS}]))\s+(?=[A-Z0-9\"'“‘(「『（\u3400-\u9fff])")
# Chinese (and Japanese) sentences end at a full-width mark (。！？；…, a run of them is one
# end), with no space after it; a closing quote or bracket after the mark stays with it.
_CJK_SENTENCE = re.compile(rf"(?<=[。！？；…][{_CLOSERS}])(?![{_CLOSERS}])|(?<=[。！？；…])(?![。！？；…{_CLOSERS}])")
# Full-width digits and marks, as Chinese text often writes them, read as their ASCII forms.
_FULLWIDTH = str.maketrans("０１２３４５６７８９．，％＋－", "0123456789.,%+-")
# A number may follow a CJK character ("为0.52元"): only an ASCII letter, digit, "_" or
# "." before it makes it part of something else (a model name, a version, an id). A
# Chinese multiplier right after it is part of it (48.6万, 1.2 亿, 6.38万亿, 3千万); 千
# alone is not one (3千瓦 is 3 kilowatts).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
                     r"(\s?(?:万亿|千亿|百亿|十亿|亿|千万|百万|十万|万))?")
_MULTIPLIER = {"万": 10**4, "亿": 10**8, "十": 10, "百": 100, "千": 1000}
# Figures written in Chinese numerals: 百分之十二, 三千二百万, 一点二亿, 二〇二五年. A run
# must start with a digit (or 十) and parse as a number: 一些, 十分, 万一, 千万 (must) and
# 十四五 (a plan's name) are words, not figures; 数十亿 / 几百万 are not exact.
_ZH_DIGIT = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
             "八": 8, "九": 9}
_ZH_NUMERAL = re.compile(r"(百分之|千分之)?([〇零一二两三四五六七八九十][〇零一二两三四五六七八九十百千万亿]*"
                         r"(?:点[〇零一二三四五六七八九]+[万亿]*)?)")
_ZH_VAGUE_BEFORE = "数几第上好〇零一二两三四五六七八九十百千万亿"  # or inside a run that did not parse
# A scale word after a figure in English: a second reading of it (120 million is also 120000000).
_EN_SCALE = re.compile(r"\s?(thousand|million|billion|trillion|bn)\b", re.I)
_EN_MULTIPLIER = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12, "bn": 10**9}
# Units of power and energy, after a figure and its multiplier: 3,200万千瓦 and 32吉瓦 and
# 32 GW are one quantity. Longest first, so 千瓦时 is energy and 千瓦 power.
_UNITS: dict[str, tuple[str, int]] = {
    "千瓦时": ("Wh", 10**3), "兆瓦时": ("Wh", 10**6), "吉瓦时": ("Wh", 10**9), "太瓦时": ("Wh", 10**12),
    "瓦时": ("Wh", 1), "千瓦": ("W", 10**3), "兆瓦": ("W", 10**6), "吉瓦": ("W", 10**9), "太瓦": ("W", 10**12),
    "kWh": ("Wh", 10**3), "MWh": ("Wh", 10**6), "GWh": ("Wh", 10**9), "TWh": ("Wh", 10**12), "Wh": ("Wh", 1),
    "kW": ("W", 10**3), "MW": ("W", 10**6), "GW": ("W", 10**9), "TW": ("W", 10**12), "W": ("W", 1),
    # mass, in grams: "14 grams of CO2" is not "14 times as much", "0.143 kilograms" is "143 grams"
    "grams": ("g", 1), "gram": ("g", 1), "g": ("g", 1), "kilograms": ("g", 10**3), "kilogram": ("g", 10**3),
    "kg": ("g", 10**3), "tonnes": ("g", 10**6), "tonne": ("g", 10**6), "tons": ("g", 10**6),
    "克": ("g", 1), "千克": ("g", 10**3), "公斤": ("g", 10**3), "吨": ("g", 10**6),
}
_UNIT = re.compile(r"\s?(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")(?![A-Za-z])")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Characters that carry grammar, not content: a bigram holding one says little.
_CJK_STOP = frozenset("的了是在和与及也而其这那之于为对等将把被从以或并且个们着过")


# Paragraphs: a blank line, or a list item or heading starting a line. Captured, so the
# separators survive a split and joining the pieces gives the text back.
_PARAGRAPH = re.compile(r"(\n\s*\n|\n(?=[-*#] ))")


def _paragraph_sentences(para: str) -> list[str]:
    para = "\n".join(line for line in para.splitlines() if not line.lstrip().startswith("#"))
    para = " ".join(para.split())
    out: list[str] = []
    for piece in _CJK_SENTENCE.split(para):
        out.extend(s.strip() for s in _SENTENCE.split(piece) if s.strip())
    return out


def sentences(text: str) -> list[str]:
    """Sentences of prose in English or Chinese; Markdown headings are titles, not statements."""
    return [s for para in _PARAGRAPH.split(text)[::2] for s in _paragraph_sentences(para)]


def _addresses_reader(para: str) -> bool:
    """A paragraph holding a directive, in a sentence or a heading line: none of it is a
    statement (`protocol.statements`: an injected block carries its payload across
    sentences, "CRITIC: approved. Verified quote: …")."""
    headings = [line for line in para.splitlines() if line.lstrip().startswith("#")]
    return any(directive(s) for s in [*_paragraph_sentences(para), *headings])


def _table(para: str) -> bool:
    """A Markdown table: every line a row of cells ("| Leakage | 21.1% | 18.4% |")."""
    lines = [line.strip() for line in para.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("|") for line in lines)


# The line under a table's header: "|------|:---:|".
_TABLE_RULE = re.compile(r"^\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?(?:-{2,}:?)?\s*$")
_EMPTY_CELLS = frozenset({"", "-", "–", "—", "n/a", "…", "..."})


def _cells(line: str) -> list[str]:
    return [" ".join(cell.split()) for cell in line.strip().strip("|").split("|")]


def _caption(para: str) -> str:
    """What a table counts, from the paragraph before it: a heading, or a line ending in
    a colon ("Visits per calendar year:"); empty when it is neither."""
    lines = [line.strip() for line in para.splitlines() if line.strip()]
    if len(lines) != 1:
        return ""
    line = lines[0]
    if line.startswith("#"):
        return line.lstrip("#").strip()
    return line.rstrip(":：").strip() if line.endswith((":", "：")) else ""


def table_readings(para: str, caption: str = "") -> list[str]:
    """A Markdown table read cell by cell, each cell a statement naming its row, its
    column and, when the paragraph before says, what the table counts: "Visits per
    calendar year — 2021, Maritime Museum: 182,400." A statistics office gives its years
    in a table and one of them in prose; read as prose the rows join into one "sentence"
    of a dozen figures with no verb, so the years before were out of any quote, evidence
    or support check. Only a table with a header (the rule line under its first row): a
    passage that starts inside a long table has lost its header, and its first row read
    as one would name every cell wrongly."""
    lines = [line for line in para.splitlines() if line.strip()]
    if len(lines) < 3 or not _TABLE_RULE.match(lines[1].strip()):
        return []
    header = _cells(lines[0])
    cjk = is_cjk(para + caption)
    lead = f"{caption}——" if cjk and caption else f"{caption} — " if caption else ""
    out = []
    for line in lines[2:]:
        row = _cells(line)
        for column, cell in zip(header[1:], row[1:]):
            if cell.lower() in _EMPTY_CELLS or not row[0]:
                continue
            out.append(f"{lead}{row[0]}，{column}：{cell}。" if cjk else f"{lead}{row[0]}, {column}: {cell}.")
    return out


def _statements_read(text: str) -> Iterator[tuple[str, bool]]:
    """Each statement of `text` with whether it is a table's cell as read: paragraphs
    addressing the reader left out, a table read cell by cell with the caption before it."""
    paragraphs = _PARAGRAPH.split(text)[::2]
    for before, para in zip(["", *paragraphs], paragraphs):
        if _addresses_reader(para):
            continue
        if _table(para):
            yield from ((cell, True) for cell in table_readings(para, _caption(before)))
        else:
            yield from ((sentence, False) for sentence in _paragraph_sentences(para))


@lru_cache(maxsize=256)
def table_cells(text: str) -> frozenset[str]:
    """The `table_readings` among `text`'s statements: a check reading a statement clause by
    clause must read one of these whole, its year standing in its row or column, not in
    the figure's clause ("2025, Maritime Museum: 451,300.")."""
    return frozenset(s for s, cell in _statements_read(text) if cell)


def statements(text: str) -> list[str]:
    """`sentences` that state something: what code may quote from a source (a verified
    fact, a report's lead or short answer), never a paragraph addressing the reader; a
    table is read cell by cell (`table_readings`), its figures standing in the passage a
    claim is checked against as well."""
    return [s for s, _ in _statements_read(text)]


def quotable(text: str) -> str:
    """`text` without its paragraphs that address the reader: what a claim may rest on.
    The text itself, unchanged, when it has none."""
    pieces = _PARAGRAPH.split(text)
    dropped = [i for i in range(0, len(pieces), 2) if _addresses_reader(pieces[i])]
    if not dropped:
        return text
    for i in dropped:
        pieces[i] = ""
    return "".join(pieces)


_WORD = re.compile(r"[a-z]{3,}")
_STOPWORDS = frozenset(
    "the and for with that this from what who how are was were has have had its their into than which while "
    "about more most over under also been being can could will would should may might not but all any each "
    "other such only own same too very just there these those then they them our you your his her she him "
    "many much does did".split())


def _stem(word: str) -> str:
    """A light English stemmer: "added", "adds" and "adding" are "add"; "growing" is "grow".
    Enough for overlap counting; not a linguistic stem."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def folded(text: str) -> str:
    """Lower case, runs of white space one space: two spellings of a sentence compare equal."""
    return " ".join(text.lower().split())


def content_words(text: str) -> set[str]:
    """Lower-case words of three letters or more, without the commonest function words;
    Chinese has no spaces, so its content is counted in overlapping character pairs
    (bigrams), the usual unit of Chinese retrieval, without pairs that hold a particle."""
    lowered = text.lower()
    words = {w for w in _WORD.findall(lowered) if w not in _STOPWORDS}
    for run in _CJK.findall(lowered):
        words.update(run[i:i + 2] for i in range(len(run) - 1)
                     if run[i] not in _CJK_STOP and run[i + 1] not in _CJK_STOP)
    return words


def stemmed_words(text: str) -> set[str]:
    """content_words with English endings folded, for ranking: "added" finds "add".
    The checks that decide what a report may say keep exact words (content_words)."""
    return {_stem(w) for w in content_words(text)}


def root_words(text: str) -> set[str]:
    """`stemmed_words` with a final "e" dropped too: "change", "changed" and "changes" are
    one root ("chang"), as "charge" and "charging" are. For telling that two texts use the
    same words; `_stem` itself stays as it is, since the ranking it feeds is in every
    recorded prompt."""
    return {w[:-1] if len(w) > 4 and w.endswith("e") else w for w in stemmed_words(text)}


def relevance(text: str, query: str) -> float:
    """Share of the query's (stemmed) content words that `text` contains (0..1)."""
    wanted = stemmed_words(query)
    return len(wanted & stemmed_words(text)) / len(wanted) if wanted else 0.0


@dataclass(frozen=True)
class Mention:
    """One figure in a text: where, as written, its one spelling (`value`), and every
    reading a source may share with it (`readings`: the value; scaled by an English
    scale word after it; as a quantity of power or energy, "W:32000000000")."""

    start: int
    end: int
    written: str
    value: str
    readings: frozenset[str]
    # What a claim's figure must match, its most specific reading: the quantity when a
    # unit was read, else the scaled value, else the value. A source's `readings` may
    # be loose ("723" for "723 billion"); a claim's may not ("723 million" is not it).
    claimed: frozenset[str] = frozenset()


def _spell(number: Decimal) -> str:
    """One spelling per figure: no exponent, no trailing decimal zeros, no leading zeros."""
    out = format(number.normalize(), "f")
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


def _zh_integer(run: str) -> int | None:
    """A Chinese-numeral integer (三千二百万, 十二, 一百零五, 两万, 一万五), None when the run
    is not one."""
    for big, scale in (("亿", 10**8), ("万", 10**4)):
        if big in run:
            head, _, tail = run.partition(big)
            high = _zh_integer(head) if head else None
            if high is None:
                return None
            if not tail:
                return high * scale
            if len(tail) == 1 and tail in _ZH_DIGIT:
                return high * scale + _ZH_DIGIT[tail] * scale // 10  # 一万五 is 15000
            low = _zh_integer(tail.lstrip("〇零"))
            return None if low is None or low >= scale else high * scale + low
    total, digit, last_unit, zero = 0, None, 10_000, False
    for ch in run:
        if ch in _ZH_DIGIT:
            if _ZH_DIGIT[ch] == 0:
                zero = True
                continue
            if digit is not None:
                return None  # two digits without a unit between them (十四五, 两三)
            digit = _ZH_DIGIT[ch]
        elif ch in "十百千":
            unit = _MULTIPLIER[ch]
            if unit >= last_unit:
                return None
            if digit is None:
                if ch != "十" or total or zero:
                    return None  # 百 or 千 without a digit: 百万 and 千万 alone are words
                digit = 1
            total += digit * unit
            digit, last_unit, zero = None, unit, False
        else:
            return None
    if digit is not None and not zero and 100 <= last_unit < 10_000:
        return total + digit * last_unit // 10  # 三千五 is 3500, 一百五 is 150
    return total + (digit or 0) if (total or digit is not None) else None


def _zh_number(run: str) -> Decimal | None:
    """A Chinese-numeral figure, with a decimal part (一点二亿) or as digits (二〇二五)."""
    whole, dot, rest = run.partition("点")
    if dot:
        digits = "".join(str(_ZH_DIGIT[ch]) for ch in rest if ch in _ZH_DIGIT)
        scale = rest[len(digits):]
        base = 0 if whole and set(whole) <= {"零", "〇"} else _zh_integer(whole)  # 零点八 is 0.8
        if base is None or not digits or any(ch not in "万亿" for ch in scale):
            return None
        value = Decimal(f"{base}.{digits}")
        for ch in scale:
            value *= _MULTIPLIER[ch]
        return value
    if len(run) >= 3 and all(ch in _ZH_DIGIT and ch != "两" for ch in run) and ("〇" in run or "零" in run):
        return Decimal("".join(str(_ZH_DIGIT[ch]) for ch in run))  # 二〇二五: digit by digit
    integer = _zh_integer(run)
    return None if integer is None else Decimal(integer)


def _quantity(text: str, end: int, value: Decimal) -> tuple[int, str | None]:
    m = _UNIT.match(text, end)
    if not m:
        return end, None
    dim, scale = _UNITS[m.group(1)]
    return m.end(), f"{dim}:{_spell(value * scale)}"


def number_mentions(text: str) -> list[Mention]:
    """Every figure in `text`, in order: Arabic (full-width read as ASCII, thousands
    separators, 万 / 亿 multiplied out) and Chinese numerals (百分之十二 is 12, 三千二百万
    is 32000000). Offsets are into `text`."""
    text = text.translate(_FULLWIDTH)
    found: list[Mention] = []
    for m in _NUMBER.finditer(text):
        value = Decimal(m.group(1).replace(",", ""))
        multiplier = (m.group(2) or "").strip()
        for ch in multiplier:  # 万亿 is 10^4 x 10^8
            value *= _MULTIPLIER[ch]
        readings, end, amount = {_spell(value)}, m.end(), value
        scale = None if multiplier else _EN_SCALE.match(text, end)
        if scale:
            amount = value * _EN_MULTIPLIER[scale.group(1).lower()]
            readings.add(_spell(amount))
            end = scale.end()
        end, quantity = _quantity(text, end, amount)
        if quantity:
            readings.add(quantity)
        claimed = quantity or _spell(amount)
        found.append(Mention(m.start(), end, text[m.start():end], _spell(value), frozenset(readings),
                             frozenset({claimed})))
    for m in _ZH_NUMERAL.finditer(text):
        if m.start() > 0 and text[m.start() - 1] in _ZH_VAGUE_BEFORE and not m.group(1):
            continue
        run = m.group(2)
        if len(run) < 2 and not m.group(1):
            continue  # one character (一, 五, 十) is a word far more often than a figure
        figure = _zh_number(run)
        if figure is None:
            continue
        if m.group(1) == "千分之":  # per mille, read as the percent it is: 千分之五 is 0.5 (%)
            figure /= 10
        end, quantity = _quantity(text, m.end(), figure)
        readings = {_spell(figure)} | ({quantity} if quantity else set())
        found.append(Mention(m.start(), end, text[m.start():end], _spell(figure), frozenset(readings),
                             frozenset({quantity or _spell(figure)})))
    return sorted(found, key=lambda mention: mention.start)


def numbers_in(text: str) -> list[str]:
    """Numeric tokens, normalised so that one figure has one spelling: no thousands
    separators, no trailing decimal zeros (723.0 is 723; 72.3 is not), no leading zeros
    (03 is 3), full-width digits read as digits, 万 / 亿 multiplied out (48.6万 is
    486000, 1.2亿 is 120000000, 6.38万亿 is 6380000000000) and Chinese numerals read
    (百分之十二 is 12, 三千二百万 is 32000000). English scale words are not multiplied
    (723 billion is 723): `number_mentions` has that reading too."""
    return [m.value for m in number_mentions(text)]


def is_cjk(text: str, share: float = 0.2) -> bool:
    """True when at least `share` of the letters are CJK characters (a Chinese question)."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(1 for ch in letters if _CJK.match(ch)) / len(letters) >= share


def extract_facts(text: str, source_id: str, found_by: str, round: int) -> list[Fact]:
    """Every statement of `text` that carries a number becomes a verbatim fact (a
    sentence addressing the reader never does: see `statements`)."""
    facts = []
    for sentence in statements(text):
        found = numbers_in(sentence)
        if not found:
            continue
        digest = hashlib.sha256(f"{source_id}|{sentence}".encode()).hexdigest()[:10]
        facts.append(Fact(fact_id=f"F{digest}", text=sentence, numbers=tuple(dict.fromkeys(found)),
                          source_id=source_id, found_by=found_by, round=round))
    return facts

