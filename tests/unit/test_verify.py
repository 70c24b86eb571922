"""The sentence verifier and the send-back-once-then-quote-or-drop flow."""

from briefroom.records import Claim, DraftSection, WriterDraft
from briefroom.report.verify import (
    cited_where_held,
    code_problems,
    failures,
    narrowed_citations,
    quote_of,
    restates,
    settle,
)

TEXTS = {
    "S1": "Installers put 1.84 million heat pumps into service across Europe in 2025. "
          "The 2025 installation count was about 7 percent lower than in 2024.",
    "S2": "Manufacturers sold 2.61 million heat pumps into the European market in 2025.",
}


def kinds(claim: Claim) -> list[str]:
    return [p.kind for p in code_problems(claim, TEXTS)]


def test_a_wrong_number_fails():
    claim = Claim(text="Installers put 1.94 million heat pumps into service across Europe in 2025.", source_ids=["S1"])
    assert kinds(claim) == ["unsupported_number"]


def test_a_wrong_scale_or_unit_fails():
    scale = Claim(text="Installers put 1.84 billion heat pumps into service across Europe in 2025.", source_ids=["S1"])
    assert "unsupported_number" in kinds(scale)
    percent = Claim(text="Installers put 7% more heat pumps into service in Europe in 2025.", source_ids=["S1"])
    assert "unsupported_number" not in kinds(percent)  # "7 percent" in the source is 7%
    units = Claim(text="Installers put 1.84% of heat pumps into service across Europe in 2025.", source_ids=["S1"])
    assert "unsupported_number" in kinds(units)  # 1.84 million is not a percentage


def test_an_unsupported_claim_fails_the_floor_and_a_wrong_citation_too():
    fluff = Claim(text="This analysis reveals a dramatic transformation of domestic comfort.", source_ids=["S1"])
    assert kinds(fluff) == ["ungrounded_claim"]
    elsewhere = Claim(text="Manufacturers sold 2.61 million heat pumps into the European market.", source_ids=["S1"])
    assert "unsupported_number" in kinds(elsewhere)
    assert kinds(Claim(text="Heat pumps sold well in Europe in 2025.", source_ids=["S9"])) == ["unresolved_citation"]


def test_a_supported_paraphrase_passes_code_and_goes_to_the_judge():
    paraphrase = Claim(text="Across Europe, 1.84 million heat pumps were put into service by installers in 2025, "
                            "about 7 percent lower than in 2024.", source_ids=["S1"])
    assert kinds(paraphrase) == [] and not restates(paraphrase, TEXTS)
    judged: list[str] = []

    def judge(claims):
        judged.extend(c.text for c in claims)
        return {}

    assert failures([paraphrase], TEXTS, judge) == {} and judged == [paraphrase.text]
    assert failures([paraphrase], TEXTS, lambda claims: {0: "adds a claim"}) == {0: "not supported by its "
                                                                                 "sources: adds a claim"}


def test_a_restatement_needs_no_judgement():
    quote = Claim(text="Installers put 1.84 million heat pumps into service across Europe in 2025.", source_ids=["S1"])
    assert restates(quote, TEXTS)
    assert failures([quote], TEXTS, lambda claims: {0: "never asked"}) == {}


def draft(*sentences: str) -> WriterDraft:
    return WriterDraft(title="Heat pumps in Europe", short_answer=Claim(text=sentences[0], source_ids=["S1"]),
                       sections=[DraftSection(heading="Installed", claims=[Claim(text=s, source_ids=["S1"])
                                                                            for s in sentences[1:]])])


def code_check(claims):
    return failures(claims, TEXTS)


GOOD = "Installers put 1.84 million heat pumps into service across Europe in 2025."
WRONG = "Installers put 1.94 million heat pumps into service across Europe in 2025."
FLUFF = "This analysis reveals a dramatic transformation of domestic comfort."


def test_a_failed_sentence_is_sent_back_once_with_its_reason_and_a_fix_is_kept():
    sent: list[list[tuple[Claim, str]]] = []

    def redraft(failed):
        sent.append(failed)
        return draft(GOOD, GOOD)

    settled, repairs, sent_back = settle(draft(GOOD, WRONG), code_check, redraft, lambda c: quote_of(c, TEXTS))
    assert sent_back == 1 and len(sent) == 1
    assert sent[0][0][0].text == WRONG and "1.94 does not appear" in sent[0][0][1]
    assert repairs == [] and settled.sections[0].claims[0].text == GOOD


def test_what_fails_twice_is_quoted_from_the_sentence_it_rests_on_or_dropped():
    calls = []

    def redraft(failed):
        calls.append(failed)
        return draft(GOOD, WRONG, FLUFF)  # the model did not fix them

    settled, repairs, _ = settle(draft(GOOD, WRONG, FLUFF), code_check, redraft, lambda c: quote_of(c, TEXTS))
    assert len(calls) == 1  # once, never twice
    assert [r.action for r in repairs] == ["quoted", "dropped"]
    assert [c.text for c in settled.sections[0].claims] == [f"“{GOOD}”"]
    assert settled.short_answer.text == GOOD


def test_a_clean_draft_is_not_sent_back():
    def redraft(failed):
        raise AssertionError("nothing failed")

    settled, repairs, sent_back = settle(draft(GOOD, GOOD), code_check, redraft, lambda c: quote_of(c, TEXTS))
    assert (sent_back, repairs) == (0, []) and settled == draft(GOOD, GOOD)


def test_a_sentence_cites_only_the_sources_that_give_its_figures():
    both = Claim(text="Manufacturers sold 2.61 million heat pumps into the European market in 2025.",
                 source_ids=["S2", "S1"])
    assert cited_where_held(both, TEXTS).source_ids == ["S2"]  # S1 names 2025, not 2.61 million
    each = Claim(text="Installers put 1.84 million heat pumps into service while manufacturers sold 2.61 million.",
                 source_ids=["S1", "S2"])
    assert cited_where_held(each, TEXTS).source_ids == ["S1", "S2"]
    no_figures = Claim(text="Installers and manufacturers count heat pumps differently.", source_ids=["S1", "S2"])
    assert cited_where_held(no_figures, TEXTS).source_ids == ["S1", "S2"]
    draft = WriterDraft(title="Heat pumps", short_answer=both, summary=[],
                        sections=[DraftSection(heading="Sold", claims=[both, no_figures])])
    narrowed = narrowed_citations(draft, TEXTS)
    assert narrowed.short_answer.source_ids == ["S2"]
    assert [c.source_ids for c in narrowed.sections[0].claims] == [["S2"], ["S1", "S2"]]


def test_a_byline_is_not_the_sentence_a_claim_rests_on_but_a_figure_line_is():
    plan = ("# 岚江省“十四五”可再生能源发展规划\n\n岚江省发展和改革委员会、岚江省能源局 2021年9月印发\n\n"
            "- 风电装机：1500万千瓦\n\n规划提出，要重点建设沿海海上风电基地。")
    texts = {"P": plan}
    about_the_plan = Claim(text="岚江省能源局发布的规划确定了全省的发展目标。", source_ids=["P"])
    assert quote_of(about_the_plan, texts) is None  # shares the agency and the place with the byline only
    target = Claim(text="岚江省规划的风电装机目标为1500万千瓦。", source_ids=["P"])
    quoted = quote_of(target, texts)
    assert quoted is not None and "1500万千瓦" in quoted.text  # a list item holding the claim's figure


def test_a_failed_sentence_is_quoted_from_the_sentence_with_its_figure_and_year():
    bulletin = ("2024年末全市常住人口为505.6万人。年末全市常住人口512.4万人，比上年末增加6.8万人。")
    texts = {"B": bulletin}
    claim = Claim(text="2025年末青川市常住人口为512.4万人。", source_ids=["B"])
    assert quote_of(claim, texts).text == "“年末全市常住人口512.4万人，比上年末增加6.8万人。”"
    report = ("In 2024 the airport handled 13.57 million passengers, so traffic grew by 9.2% in 2025. "
              "The airport handled 14.82 million passengers in 2025.")
    invented = Claim(text="In 2025 the airport handled 14.82 million passengers, a 28% increase on 2024.",
                     source_ids=["R"])
    assert "14.82 million" in quote_of(invented, {"R": report}).text  # not the 2024 sentence, with more words shared


NEIGHBOURS = {
    "S7": "Ferry traffic on the northern coast, 2025\n\n"
          "Ridership on the Ostrava Bay ferries reached 2.4 million trips in 2025. "
          "Lindholm Ferries carried 1.1 million trips in 2025, its first full year. "
          "Kestrel Harbour also runs a ferry, but its operator published no ridership for 2025.",
    "S8": "Kestrel Harbour ferry report 2025\n\nThe ferry carried 0.9 million trips in 2025.",
}


def test_a_figure_given_to_a_place_its_sentence_does_not_name_fails():
    # every word and figure is in the source; the place is taken from the sentence that
    # says it has no figure
    moved = Claim(text="Ridership on the Kestrel Harbour ferries reached 2.4 million trips in 2025.", source_ids=["S7"])
    assert code_problems(moved, NEIGHBOURS)[0].kind == "misattributed_figure"
    assert "Kestrel Harbour" in code_problems(moved, NEIGHBOURS)[0].detail
    assert not restates(moved, NEIGHBOURS)
    # the same sentence with the place its source gives the figure to passes
    kept = Claim(text="Ridership on the Ostrava Bay ferries reached 2.4 million trips in 2025.", source_ids=["S7"])
    assert kinds_in(kept, NEIGHBOURS) == []


def test_a_name_that_only_qualifies_what_the_figure_sentence_speaks_of_is_no_move():
    stats = {"S9": "Harbour statistics 2025\n\nEvery operator on the Ostrava–Brisk route files its boarding records "
                   "each month. Lindholm Ferries carried 1.1 million trips on the route in 2025."}
    # the source calls "the route" the Ostrava–Brisk route: naming it so moves nothing
    named = Claim(text="Lindholm Ferries carried 1.1 million trips on the Ostrava–Brisk route in 2025.",
                  source_ids=["S9"])
    assert kinds_in(named, stats) == []
    # a name the figure's sentence gives (Lindholm Ferries) swapped for another is still a move
    swapped = Claim(text="Kestrel Harbour ferries carried 1.1 million trips on the Ostrava–Brisk route in 2025.",
                    source_ids=["S9"])
    assert "misattributed_figure" in kinds_in(swapped, stats)
    # and so is a qualifier the source never gives that thing
    invented = Claim(text="Lindholm Ferries carried 1.1 million trips on the Kestrel route in 2025.",
                     source_ids=["S9"])
    assert "misattributed_figure" in kinds_in(invented, stats)


def test_a_chinese_sentence_naming_a_place_another_source_is_about_fails():
    # invented provinces, as in the suite: the bulletin speaks of 全省, its title names 岚江省
    texts = {"B": "# 岚江省2025年能源发展统计公报\n\n截至2025年底，全省风电累计并网装机容量达到1268万千瓦。",
             "C": "# 澄江省2025年风电发展情况\n\n截至2025年底，澄江省风电累计并网装机容量为934万千瓦。",
             "P": "# 关于2025年全省风电的说明\n\n全省风电装机容量继续增长。"}
    moved = Claim(text="截至2025年底，澄江省风电累计并网装机容量为1268万千瓦。", source_ids=["B"])
    problem = code_problems(moved, texts)[0]
    assert problem.kind == "misattributed_figure" and "澄江省" in problem.detail
    # the place its cited source names, or the neighbour's own figure from the neighbour's document, pass
    assert kinds_in(Claim(text="截至2025年底，岚江省风电累计并网装机容量为1268万千瓦。", source_ids=["B"]), texts) == []
    assert kinds_in(Claim(text="截至2025年底，澄江省风电累计并网装机容量为934万千瓦。", source_ids=["C"]), texts) == []
    # a title that opens with no place ("关于…全省") gives none
    assert kinds_in(Claim(text="全省风电装机容量继续增长。", source_ids=["B"]), texts) == []


def kinds_in(claim: Claim, texts: dict[str, str]) -> list[str]:
    return [p.kind for p in code_problems(claim, texts)]


def test_a_name_in_the_title_or_beside_another_figure_of_the_claim_counts():
    # "the ferry" of the sentence is the one its title names
    titled = Claim(text="Kestrel Harbour's ferry carried 0.9 million trips in 2025.", source_ids=["S8"])
    assert kinds_in(titled, NEIGHBOURS) == []
    # two figures from two sentences: each name stands beside one of them
    both = Claim(text="Ostrava Bay ferries made 2.4 million trips and Lindholm Ferries 1.1 million in 2025.",
                 source_ids=["S7"])
    assert "misattributed_figure" not in kinds_in(both, NEIGHBOURS)
    # a capital that starts the sentence names nothing; a month dates, it does not name
    plain = Claim(text="Ridership reached 2.4 million trips on the Ostrava Bay ferries in 2025.", source_ids=["S7"])
    assert kinds_in(plain, NEIGHBOURS) == []


def test_a_figure_given_to_another_year_than_its_source_gives_it_fails():
    texts = {"P": "Port of Tarnow annual statistics\n\nThe Port of Tarnow handled 1.64 million TEU in 2025, "
                  "up from 1.52 million TEU in 2024. In 2025, the port also moved 0.8 million tonnes of grain.",
             "Z": "2025年统计公报\n\n2024年末全市常住人口为512.6万人。截至2025年末，全市常住人口达到518.3万人，比上年末增加5.7万人。"}
    # every word and figure is in the source; the year is the other clause's
    swapped = Claim(text="The Port of Tarnow handled 1.64 million TEU in 2024.", source_ids=["P"])
    problem = next(p for p in code_problems(swapped, texts) if p.kind == "misdated_figure")
    assert "1.64 million" in problem.detail and "2025" in problem.detail
    assert "misdated_figure" in kinds_in(Claim(text="The Port of Tarnow handled 1.52 million TEU in 2025.",
                                               source_ids=["P"]), texts)
    assert "misdated_figure" in kinds_in(Claim(text="2025年末全市常住人口为512.6万人。", source_ids=["Z"]), texts)
    # each figure with its own year passes, in one clause or two, and so does a change
    for kept in ["The Port of Tarnow handled 1.64 million TEU in 2025.",
                 "The Port of Tarnow handled 1.52 million TEU in 2024 and 1.64 million TEU in 2025.",
                 "Throughput at the Port of Tarnow rose from 1.52 million TEU in 2024 to 1.64 million TEU in 2025."]:
        assert "misdated_figure" not in kinds_in(Claim(text=kept, source_ids=["P"]), texts), kept
    assert "misdated_figure" not in kinds_in(Claim(text="2024年末全市常住人口为512.6万人。", source_ids=["Z"]), texts)
    # a source clause without a year leaves the figure's year unread: nothing to contradict
    grain = Claim(text="The Port of Tarnow moved 0.8 million tonnes of grain in 2024.", source_ids=["P"])
    assert "misdated_figure" not in kinds_in(grain, texts)


def test_a_forecast_stated_as_an_outcome_fails():
    texts = {"F": "Heat pump outlook 2026\n\nThe institute forecasts that installers will put 2.05 million heat pumps "
                  "into service across Europe in 2026, a recovery from the 2025 level."}
    # every word and figure is the source's; the source forecasts what the sentence says happened
    outcome = Claim(text="Installers put 2.05 million heat pumps into service across Europe in 2026.", source_ids=["F"])
    assert "forecast_as_fact" in kinds_in(outcome, texts)
    for hedged in ["Installers will put 2.05 million heat pumps into service across Europe in 2026.",
                   "The institute expects 2.05 million heat pumps to be put into service in Europe in 2026.",
                   "The institute projects 2.05 million heat pump installations in Europe in 2026."]:
        assert "forecast_as_fact" not in kinds_in(Claim(text=hedged, source_ids=["F"]), texts), hedged
    # a figure some cited sentence gives as measured may be stated as measured
    texts["M"] = "Installer count 2026\n\nInstallers put 2.05 million heat pumps into service across Europe in 2026."
    assert "forecast_as_fact" not in kinds_in(outcome.model_copy(update={"source_ids": ["F", "M"]}), texts)


def test_a_failed_sentence_is_dropped_not_replaced_by_a_sentence_that_holds_none_of_its_figures():
    # the sentence cites the wind council for solar's share: the council's sentence sharing most
    # of its words gives wind's 18.6 TWh, which would put another subject's figure in the report
    council = ("Wind farms in Corvale generated 18.6 TWh in 2025, about a quarter of the country's electricity "
               "consumption. The council has 140 member companies.")
    claim = Claim(text="Solar panels generated 13.8% of the country's electricity consumption in Corvale in 2025.",
                  source_ids=["W"])
    assert quote_of(claim, {"W": council}) is None
    held = Claim(text="Wind farms met a quarter of Corvale's electricity use with 18.6 TWh in 2025.", source_ids=["W"])
    assert "18.6 TWh" in quote_of(held, {"W": council}).text  # one of its figures: the sentence it rests on


def test_a_sentence_copied_from_one_source_and_citing_another_cites_the_one_it_copies():
    texts = {"MIN": "In 2025, a short-haul flight emitted roughly fourteen times as much CO2 per passenger-kilometre "
                    "as the high-speed train, measured on an operational basis.",
             "LCA": "On a lifecycle basis, high-speed rail was responsible for 32 grams of CO2-equivalent per "
                    "passenger-kilometre in 2025. Lifecycle and operational figures should not be compared directly."}
    copied = Claim(text="In 2025, a short-haul flight emitted roughly fourteen times as much CO2 per passenger-kilometre "
                        "as the high-speed train, measured on an operational basis.", source_ids=["LCA"])
    draft = WriterDraft(title="Rail and air", short_answer=copied, summary=[],
                        sections=[DraftSection(heading="Which is lower", claims=[copied])])
    fixed = narrowed_citations(draft, texts)
    assert fixed.short_answer.source_ids == ["MIN"] and fixed.sections[0].claims[0].source_ids == ["MIN"]
    own = Claim(text="Rail emitted less CO2 than flights on the corridor in 2025.", source_ids=["LCA"])
    assert narrowed_citations(draft.model_copy(update={"short_answer": own}), texts).short_answer == own  # no copy


def test_a_list_items_number_is_given_to_no_year():
    # the draft numbers its items; the source holds a 1 dated 2026 (its January)
    texts = {"F": "出行论坛 · 网友帖子（2026年1月）\n\n全市2025年末新能源公交车保有量为4860辆。"}
    item = Claim(text="1. 2025年末全市新能源公交车保有量为4860辆。", source_ids=["F"])
    assert "misdated_figure" not in kinds_in(item, texts)
    # the item's own figure is still read with its year, and a decimal is no item number
    assert "misdated_figure" in kinds_in(Claim(text="2. 2026年末全市新能源公交车保有量为4860辆。", source_ids=["F"]), texts)
    decimal = {"P": "Port of Tarnow statistics\n\nThe port handled 1.5 million TEU in 2025."}
    assert "misdated_figure" in kinds_in(Claim(text="1.5 million TEU passed through the port in 2024.",
                                               source_ids=["P"]), decimal)
