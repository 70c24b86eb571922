"""A section per part of the question, led by its best verified sentence: the Writer's
pipeline after the model (code verification, then the shape), with a model draft
written by hand."""

import pytest

from briefroom.records import Claim, DraftSection, Fact, Passage, ReportDraft, SourceRecord, WriterDraft
from briefroom.report.language import LABELS, question_parts
from briefroom.report.outline import proper_names
from briefroom.report.shape import assemble
from briefroom.report.spec import ReportSpec
from briefroom.report.verify import failures, quote_of, settle


def outline(draft: WriterDraft, facts: list[Fact], question: str, titles: dict[str, str] | None = None,
            embed=None) -> ReportDraft:
    """The model's draft verified by code (no judge, no second draft), then shaped."""
    texts: dict[str, str] = {}
    for f in facts:
        texts[f.source_id] = (texts.get(f.source_id, "") + " " + f.text).strip()
    sources = {sid: SourceRecord(source_id=sid, title=(titles or {}).get(sid, sid), path=f"{sid}.md",
                                 passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(t), text=t),))
               for sid, t in texts.items()}
    settled, _, _ = settle(draft, lambda claims: failures(claims, texts), lambda failed: draft,
                           lambda claim: quote_of(claim, texts))
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else "en"
    return assemble(settled, question_parts(question), question, facts, sources, {}, ReportSpec(), language, embed)


def fact(text: str, sid: str) -> Fact:
    return Fact(fact_id=f"F{abs(hash(text)) % 10**8}", text=text, source_id=sid, found_by="searcher", round=1)


def model_draft(short: str = "It is big.", sid: str = "S1") -> WriterDraft:
    return WriterDraft(title="Heat pump report", short_answer=Claim(text=short, source_ids=[sid]),
                       sections=[DraftSection(heading="Notes", claims=[Claim(text=short, source_ids=[sid])])])


QUESTION = "How many heat pumps were installed in Norvalia in 2025, and which installer was the largest?"
FACTS = [fact("Installers put 1.84 million heat pumps into service in Norvalia in 2025.", "S1"),
         fact("In 2024, 1.97 million heat pumps were installed in Norvalia.", "S2"),
         fact("Recipe: bake the bread for 40 minutes at 220 degrees.", "S3")]


def test_each_part_gets_a_section_and_an_unsupported_part_says_so():
    report = outline(model_draft(), FACTS, QUESTION)
    assert [s.heading for s in report.sections] == ["How many heat pumps were installed in Norvalia in 2025",
                                                     "Which installer was the largest"]
    assert "1.84 million" in report.sections[0].claims[0].text
    assert [c.text for c in report.sections[1].claims] == [LABELS["en"]["not_said"]]


def test_a_figure_of_another_year_never_leads_and_the_answer_leads_the_short_answer():
    report = outline(model_draft("Sales were 1.97 million.", "S2"), FACTS, QUESTION)
    assert "1.84 million" in report.short_answer.text  # the model's answer lacked the best figure
    assert all("1.97" not in c.text for s in report.sections for c in s.claims)
    assert all("1.97" not in c.text and "bread" not in c.text for c in report.key_figures)


def test_rival_figures_stand_side_by_side_with_who_says_them():
    question = "How big is the 2026 public cloud market?"
    facts = [fact("Worldwide spending on public cloud services is forecast to reach 723 billion USD in 2026.", "A"),
             fact("A research firm raised its forecast for 2026 public cloud spending to 680 billion USD.", "B")]
    report = outline(model_draft("Cloud is big.", "A"), facts, question, {"A": "Analyst brief", "B": "Newswire"})
    claims = report.sections[0].claims
    assert "723 billion" in claims[0].text and "680 billion" in claims[1].text
    assert [c.attribution for c in claims] == ["Analyst brief", "Newswire"]


def test_the_lead_in_the_models_words_says_who_gives_it_beside_a_rival():
    question = "How big is the 2026 public cloud market?"
    facts = [fact("Worldwide spending on public cloud services is forecast to reach 723 billion USD in 2026.", "A"),
             fact("A research firm raised its forecast for 2026 public cloud spending to 680 billion USD.", "B")]
    own = "Public cloud spending is forecast to reach 723 billion USD worldwide in 2026."
    report = outline(model_draft(own, "A"), facts, question, {"A": "Analyst brief", "B": "Newswire"})
    claims = report.sections[0].claims
    assert [(c.text, c.attribution) for c in claims] == [(own, "Analyst brief"), (f"“{facts[1].text}”", "Newswire")]


def test_a_rival_stands_beside_the_lead_whether_or_not_the_team_reported_it():
    from briefroom.report.outline import _rivals, _Scored

    part = "How big is the 2026 public cloud market"
    # the scores the cloud-market replay with Qwen2.5-Coder-1.5B gives: the lead confirmed by
    # the team (+0.05), the research firm's forecast only read in a passage
    confirmed = fact(CLOUD_FORECAST, "A").model_copy(update={"confirmed_by": ("searcher", "critic")})
    lead = _Scored(0.70, 0.782, 0, confirmed)
    rival = _Scored(0.53, 0.661, 1, fact("A research firm raised its forecast for 2026 public cloud spending to 680 "
                                         "billion USD, citing demand for generative AI services.", "B"))
    assert [f.source_id for f in _rivals([lead, rival], lead, part)] == ["B"]


def test_a_sentence_about_another_named_subject_does_not_lead():
    question = "How much offshore wind capacity did Norvalia add in 2025?"
    facts = [fact("Estmark, Norvalia's southern neighbour, added 3.3 GW of offshore wind capacity in 2025.", "E"),
             fact("Norvalia added 2.6 GW of new offshore wind capacity in 2025, the directorate said.", "N")]
    assert "Estmark" in proper_names([f.text for f in facts])
    report = outline(model_draft("Wind grew.", "N"), facts, question)
    assert "2.6 GW" in report.sections[0].claims[0].text


def test_a_chinese_question_gets_chinese_notes():
    question = "2025年临江省公共充电桩保有量是多少？增长最快的是哪类充电桩？"
    facts = [fact("截至2025年底，临江省公共充电桩保有量达到48.6万台，同比增长27.4%。", "S1")]
    report = outline(WriterDraft(title="临江省充电桩", short_answer=Claim(text="很多。", source_ids=["S1"]),
                                 sections=[DraftSection(heading="概况", claims=[Claim(text="很多。", source_ids=["S1"])])]),
                     facts, question)
    assert "48.6万台" in report.sections[0].claims[0].text
    assert report.sections[1].claims[0].text == LABELS["zh"]["not_said"]


def test_an_unanswerable_question_is_not_answered_with_another_place():
    question = "What was the average cost per cubic metre of desalinated water in Port Karavel in 2025?"
    facts = [fact("The average production cost of desalinated water in Velmora was 0.83 USD per cubic metre in 2025.",
                  "V"),
             fact("Velmora Water said costs fell, and in Velmora prices stayed low.", "V"),
             fact("Port Karavel Water delivered 71 million cubic metres of drinking water in 2025.", "P")]
    report = outline(model_draft("Water costs money.", "P"), facts, question)
    assert all("0.83" not in c.text for s in report.sections for c in s.claims)
    assert all("0.83" not in c.text for c in report.key_figures)


def test_when_nothing_answers_the_first_part_the_short_answer_says_so():
    question = "Which installer was the largest in Norvalia?"
    report = outline(model_draft("Installer X was the largest with 999 units."), FACTS[2:], question)
    assert report.short_answer.text == LABELS["en"]["no_answer"] and report.short_answer.source_ids == []


def test_a_question_about_cost_is_not_answered_by_a_volume():
    question = "What was the average cost per cubic metre of desalinated water in Port Karavel in 2025?"
    volume = fact("Port Karavel Water delivered 71 million cubic metres of drinking water in 2025.", "P")
    report = outline(model_draft("Water costs money.", "P"), [volume], question)
    assert report.short_answer.text == LABELS["en"]["no_answer"]
    assert report.sections[0].claims[0].text == LABELS["en"]["not_said"]
    tariff = fact("Port Karavel Water set the household tariff for 2025 at 1.62 USD per cubic metre.", "T")
    report = outline(model_draft("Water costs money.", "T"), [volume, tariff], question)
    assert report.short_answer.text == LABELS["en"]["no_answer"]  # a price charged is not a cost
    priced = fact("Desalinated water in Port Karavel cost 0.91 USD per cubic metre to produce in 2025.", "Q")
    report = outline(model_draft("Water costs money.", "Q"), [volume, priced], question)
    assert "0.91 USD" in report.short_answer.text


def test_a_one_character_question_still_gets_a_valid_report():
    from briefroom.records import ReportDraft

    draft = model_draft("It is big.", "S1")
    draft.title = "It grew 5% in 2025."  # a claim, not a title: the question's own words would stand in
    report = outline(draft, FACTS, "0")
    ReportDraft.model_validate(report.model_dump())  # what the Critic does with it
    assert report.title.endswith("0") and len(report.title) >= 3


def test_who_is_answered_by_a_name_rather_than_a_segment():
    question = "How big is the 2026 public cloud market and who is growing fastest?"
    facts = [fact("Infrastructure as a service (IaaS) is the fastest-growing segment, expanding 24.8% in 2026.", "A"),
             fact("Among the three largest providers, Microsoft Azure is growing fastest, with revenue up 31%.", "A"),
             fact("Public cloud spending will reach 723 billion USD in 2026.", "A")]
    from briefroom.corpus.embeddings import make_embedder

    report = outline(model_draft("Cloud is big.", "A"), facts, question, embed=make_embedder("local").embed)
    assert "Microsoft Azure" in report.sections[1].claims[0].text


def test_the_answer_outranks_a_sentence_that_only_shares_the_subject():
    """The demo question: the total market size answers "how big is the market"; GPU
    spending, 11% of it, does not. The outline scores with the embedder its weights were
    set on (`answer_scorer`), whatever the corpus index uses."""
    from briefroom.report.outline import Scorer, answer_scorer

    question = "How big is the 2026 public cloud market and who is growing fastest?"
    gpu = ("Spending on GPU cloud capacity is estimated at 82 billion USD for 2026, roughly 11% of total public "
           "cloud spending.")
    total = ("Worldwide end-user spending on public cloud services is forecast to reach 723 billion USD in 2026, up "
             "from 595.7 billion USD in 2025.")
    parts = question_parts(question)
    score = Scorer(question, parts, [gpu, total], answer_scorer())
    assert score(total, parts[0]) > score(gpu, parts[0])


def test_the_answer_scorer_embeds_each_text_once():
    from briefroom.report.outline import _Remembered

    seen: list[str] = []

    def embed(texts):
        seen.extend(texts)
        return [[float(len(t))] for t in texts]

    remembered = _Remembered(embed)
    assert remembered(["a", "bb", "a"]) == [[1.0], [2.0], [1.0]]
    assert remembered(["bb", "ccc"]) == [[2.0], [3.0]]
    assert seen == ["a", "bb", "ccc"]


def test_a_forecast_does_not_lead_where_an_actual_answers():
    from briefroom.report.outline import Scorer, leads

    question = "How much electricity did solar panels generate in Corvale in 2025?"
    forecast = fact("The outlook expects solar panels to generate 12 TWh by 2025, covering about 17% of demand.", "O")
    actual = fact("Solar panels generated 9.84 TWh in 2025, meeting 13.8% of the country's electricity consumption.",
                  "S")
    parts = question_parts(question)
    score = Scorer(question, parts, [forecast.text, actual.text])
    authority = {"O": 1.0, "S": 0.8}  # the forecast's source outranks the actual's
    assert leads([forecast, actual], parts[0], score, {}, set(), authority)[0] is actual
    # with no actual, the forecast still answers (a 2026 market is only ever forecast)
    assert leads([forecast], parts[0], score, {}, set(), authority) == [forecast]


def test_a_quarters_actual_does_not_push_out_the_years_forecast():
    from briefroom.report.asking import whole_period
    from briefroom.report.outline import Scorer, leads

    question = "How big is the 2026 public cloud market?"
    year = fact("Worldwide end-user spending on public cloud services is forecast to reach 723 billion USD in 2026.",
                "A")
    quarter = fact("Spending on public cloud infrastructure services reached 94 billion USD in the second quarter "
                   "of 2026.", "T")
    parts = question_parts(question)
    score = Scorer(question, parts, [year.text, quarter.text])
    assert not whole_period(quarter.text, parts[0]) and whole_period(year.text, parts[0])
    assert whole_period(quarter.text, "What was spent on public cloud in the second quarter of 2026?")
    found = leads([quarter, year], parts[0], score, {}, set(), {"A": 1.0, "T": 1.0})
    assert year in found  # the forecast for the year stays a candidate; the quarter cannot stand for the year


CLOUD = "How big is the 2026 public cloud market?"
CLOUD_FORECAST = "Worldwide end-user spending on public cloud services is forecast to reach 723 billion USD in 2026."
CLOUD_GPU = ("Spending on GPU cloud capacity is estimated at 82 billion USD for 2026, roughly 11% of total public "
             "cloud spending.")


def test_an_estimate_does_not_push_out_a_forecast_nor_stand_for_a_count():
    from briefroom.report.asking import projected
    from briefroom.report.outline import Scorer, leads

    question = CLOUD
    forecast, estimate = fact(CLOUD_FORECAST, "A"), fact(CLOUD_GPU, "G")
    assert projected(estimate.text) and projected(forecast.text)
    assert not projected("Installers put 1.84 million heat pumps into service across Europe in 2025.")
    parts = question_parts(question)
    score = Scorer(question, parts, [forecast.text, estimate.text])
    # neither is a measured figure, so the rule leaves both and the sources' authority ranks them
    assert leads([estimate, forecast], parts[0], score, {}, set(), {"A": 0.9, "G": 0.8})[0] is forecast


def test_a_share_is_led_by_a_percentage_not_by_a_count_on_the_subject():
    from briefroom.report.asking import states_share, wants_share
    from briefroom.report.outline import Scorer, leads

    question = ("How many battery-electric cars were registered in Tessaly at the end of 2025, and what share of "
                "all passenger cars was that?")
    count = fact("During 2025, 121,700 battery-electric cars were registered for the first time in Tessaly, out of "
                 "298,400 new passenger cars.", "R")
    share = fact("The register held 3,962,000 passenger cars of all kinds on the same date, so battery-electric cars "
                 "made up 10.6% of the passenger car fleet.", "R")
    parts = question_parts(question)
    assert wants_share(parts[1]) and not wants_share(parts[0])
    assert states_share(share.text) and not states_share(count.text)
    score = Scorer(question, parts, [count.text, share.text])
    assert leads([count, share], parts[1], score, {}, set(), {"R": 1.0})[0] is share
    # with no percentage among the candidates, the best answer on the subject still leads
    assert leads([count], parts[1], score, {}, set(), {"R": 1.0}) == [count]
    assert wants_share("各类乘用车中占比多少") and states_share("占乘用车总量的百分之十")


def test_a_percentage_of_change_is_no_share():
    from briefroom.report.asking import states_share

    for change in ["In 2025, 4.23 million passengers travelled, 3.4 percent more than in 2024.",
                   "Sales grew by about 17 percent on 2024.", "Revenue was up 6.5% on the year.",
                   "a growth of 9.9% in 2025", "全年客运量增长3.4%。"]:
        assert not states_share(change), change
    for share in ["…which was 58.2% of all ferry passengers.", "battery-electric cars made up 10.6% of the fleet",
                  "a share of 31.0%", "almost a third of the crossing's passengers", "占全市的12.5%",
                  "Traffic rose 4%, and the port's share of the region's traffic was 38%."]:
        assert states_share(share), share


WIND = ("How much offshore wind capacity did Norvalia add in 2025, which offshore wind project commissioned in "
        "Norvalia that year was the largest, and how much new offshore wind capacity do analysts expect Norvalia "
        "to add in 2027?")
WIND_FACTS = [
    fact("Norvalia added 2.6 GW (2,600 MW) of new offshore wind capacity in 2025, the energy directorate "
         "reported.", "D"),
    fact("Halvard Bank, at 880 MW, was the largest offshore wind project commissioned in Norvalia in 2025.", "H"),
    fact("Analysts at Meridian Energy Research expect Norvalia to add 4.1 GW of new offshore wind capacity in "
         "2027.", "M"),
    fact("Estmark, Norvalia's southern neighbour, added 3.3 GW of offshore wind capacity in 2025.", "E"),
    fact("Its operator expects the turbines at Halvard Bank to power 900,000 homes, as wind farms in Estmark do.",
         "H"),
]


def test_a_which_part_may_be_answered_by_a_name_the_question_never_used():
    from briefroom.report.outline import Scorer

    parts = question_parts(WIND)
    score = Scorer(WIND, parts, [f.text for f in WIND_FACTS])
    halvard, estmark = WIND_FACTS[1].text, WIND_FACTS[3].text
    assert score.other_subject(halvard) and not score.other_subject(halvard, parts[1])
    assert score.other_subject(estmark, parts[0])  # another country, for a part that asks no name
    report = outline(model_draft("Wind grew.", "D"), WIND_FACTS, WIND)
    assert "Halvard Bank" in report.sections[1].claims[0].text


def test_each_part_keeps_the_sentence_that_leads_it_alone():
    """The 2027 outlook scores well for "how much was added in 2025" too; quoted there (as
    a rival) it would be gone when the 2027 part is written."""
    report = outline(model_draft("Wind grew.", "D"), WIND_FACTS, WIND)
    firsts = [s.claims[0].text for s in report.sections]
    assert "2.6 GW" in firsts[0] and "Halvard Bank" in firsts[1] and "4.1 GW" in firsts[2]
    assert all("4.1 GW" not in c.text for c in report.sections[0].claims + report.sections[1].claims)


def test_another_estimate_of_the_same_quantity_stands_beside_the_lead():
    from briefroom.report.asking import close_figures
    from briefroom.report.outline import Scorer, leads

    question = CLOUD
    lead = fact(CLOUD_FORECAST[:-1] + ", up from 595.7 billion USD in 2025.", "A")
    rival = fact("A research firm raised its forecast for 2026 public cloud spending to 680 billion USD, citing "
                 "demand for generative AI services.", "N")
    part_of = fact(CLOUD_GPU, "G")
    last_year = fact("Public cloud spending reached 601 billion USD in 2024.", "L")
    assert close_figures(rival.text, lead.text)
    assert not close_figures(part_of.text, lead.text)  # a part of the market, an order of magnitude smaller
    assert not close_figures(last_year.text, lead.text)  # another year's figure is no rival estimate
    assert not close_figures("Solar generation reached 700 TWh in 2026.", lead.text)  # another unit
    parts = question_parts(question)
    score = Scorer(question, parts, [f.text for f in (lead, rival, part_of)])
    found = leads([lead, rival, part_of], parts[0], score, {}, set(), {"A": 0.9, "N": 0.8, "G": 0.8})
    assert found[0] is lead and rival in found and part_of not in found


def test_a_part_of_the_quantity_is_no_rival_however_well_it_scores():
    """When the market's best estimate was not retrieved, a segment's figure (GPU clouds'
    82 bn) must not stand as a rival to the market's 680 bn, on relevance alone."""
    from briefroom.report.asking import a_part_of
    from briefroom.report.outline import Scorer, leads

    lead = fact("Analysts put 2026 public cloud market spending at 680 billion USD.", "N")
    segment = fact("The 2026 public cloud market spending on GPU capacity is put at 82 billion USD.", "G")
    assert a_part_of(segment.text, lead.text) and not a_part_of(CLOUD_FORECAST, lead.text)
    assert not a_part_of("Public cloud spending grew 20% in 2026.", lead.text)  # no figure in the unit
    parts = question_parts(CLOUD)
    score = Scorer(CLOUD, parts, [lead.text, segment.text])
    found = leads([lead, segment], parts[0], score, {}, set(), {"N": 0.8, "G": 0.8})
    assert found == [lead]


def test_another_side_of_a_qualifier_the_part_names_is_no_rival():
    """Onshore capacity beside offshore, the fleet's total beside a year's additions: other
    quantities, which must not stand as rival estimates however well they score."""
    from briefroom.report.asking import qualified_otherwise
    from briefroom.report.outline import Scorer, leads

    lead = fact("Norvalia added 2.6 GW of new offshore wind capacity in 2025.", "D")
    onshore = fact("Norvalia added 1.9 GW of onshore wind capacity in 2025.", "O")
    fleet = fact("Norvalia's total installed offshore wind capacity stood at 10.4 GW at the end of 2025.", "F")
    rival = fact("A trade group counts 2.4 GW of offshore wind capacity added in Norvalia in 2025.", "T")
    part = question_parts(WIND)[0]
    assert qualified_otherwise(onshore.text, part) and qualified_otherwise(fleet.text, part)
    assert not qualified_otherwise(rival.text, part) and not qualified_otherwise(lead.text, part)
    # a part that names both sides asks about both: neither is another quantity
    assert not qualified_otherwise(onshore.text, "How much onshore and offshore wind capacity was added in 2025")
    assert qualified_otherwise("出口额为120亿元。", "2025年进口额是多少")
    facts = [lead, onshore, fleet, rival]
    score = Scorer(WIND, question_parts(WIND), [f.text for f in facts])
    found = leads(facts, part, score, {}, set(), {"D": 1.0, "O": 0.8, "F": 0.8, "T": 0.95})
    assert found[0] == lead and onshore not in found and fleet not in found


def test_a_sentence_about_the_report_itself_is_no_finding():
    from briefroom.report.asking import about_the_report

    for meta in ("The report includes a section on how heat pumps sold in Europe during 2025.",
                 "In this report, we will discuss the facts and figures of the current task.",
                 "This brief looks at installations first.", "本报告分为三个部分。",
                 "A report that is about the 2026 public cloud market.", "A report about heat pumps"):
        assert about_the_report(meta), meta
    for finding in ("The directorate's report counts 2.6 GW added in 2025.",
                    "Installers put 1.84 million heat pumps into service across Europe in 2025.",
                    "The summary statistics show 10.6% of cars are battery-electric.",
                    "A report by the directorate that covers 2025 counts 2.6 GW."):
        assert not about_the_report(finding), finding
    draft = WriterDraft(title="Heat pumps", short_answer=Claim(text="The report is about heat pumps in Norvalia.",
                                                               source_ids=["S1"]),
                        sections=[DraftSection(heading="Installed", claims=[
                            Claim(text="The report includes a section on heat pumps installed in Norvalia in 2025.",
                                  source_ids=["S1"])])])
    report = outline(draft, FACTS, QUESTION)
    said = [report.short_answer.text, *(c.text for c in report.summary),
            *(c.text for s in report.sections for c in s.claims)]
    assert not any("The report" in t for t in said) and "1.84 million" in report.short_answer.text


def test_a_why_part_is_answered_by_the_source_that_explains_it():
    from briefroom.report.asking import asks_why

    question = "How many heat pumps were installed in Norvalia in 2025, and why do sales figures differ?"
    titles = {"S1": "Installer survey 2025", "X": "Why heat pump sales and installations diverged in 2025",
              "M": "Manufacturer shipments, 2025"}
    facts = [fact("Installers put 1.84 million heat pumps into service in Norvalia in 2025.", "S1"),
             fact("Manufacturers shipped 2.61 million heat pumps to Norvalia in 2025.", "M"),
             fact("The gap between heat pumps sold and installed in Norvalia in 2025 was 0.77 million units.", "X"),
             fact("About 0.46 million heat pumps were added to distributor inventory during 2025.", "X"),
             fact("Recipe: bake the bread for 40 minutes.", "S1")]
    parts = question_parts(question)
    assert asks_why(parts[1]) and not asks_why(parts[0]) and asks_why("什么因素限制了增长")
    report = outline(model_draft("Heat pumps sold well.", "S1"), facts, question, titles)
    why = [c.text for c in report.sections[1].claims]
    assert why[:2] == [f"“{facts[2].text}”", f"“{facts[3].text}”"]  # the explainer, in its order
    assert all(c.attribution is None for c in report.sections[1].claims)  # not rivals of each other
    # no title answers the part: no explanation, and the part is led as any other
    from briefroom.report.outline import Scorer, explanation

    score = Scorer(question, parts, [f.text for f in facts])
    assert explanation(facts, parts[1], score, titles, set())[0] is facts[2]
    assert explanation(facts, parts[1], score, {sid: "Notes" for sid in titles}, set()) == []


def test_a_why_part_keeps_every_step_of_the_reasons_its_source_counts():
    from briefroom.report.outline import Scorer, explanation

    question = "How many heat pumps were installed in Norvalia in 2025, and why do sales figures differ?"
    titles = {"X": "Why heat pump sales and installations diverged in 2025", "M": "Manufacturer shipments, 2025"}
    facts = [fact("Manufacturers sold 2.61 million heat pumps in Norvalia in 2025, installers 1.84 million.", "X"),
             fact("The gap between heat pumps sold and installed in Norvalia in 2025 was 0.77 million units.", "X"),
             fact("First, about 0.46 million heat pumps were added to distributor inventory during 2025, as "
                  "wholesalers stocked up.", "X"),
             fact("The institute is based in Vardo.", "X"),
             fact("Second, about 0.19 million units were re-exported to markets outside Europe.", "X"),
             fact("Third, about 0.12 million units were delivered in late 2025 but commissioned in 2026.", "X"),
             fact("Second, manufacturers shipped 0.3 million units to Europe.", "M")]
    parts = question_parts(question)
    found = explanation(facts, parts[1], Scorer(question, parts, [f.text for f in facts]), titles, set())
    assert [f.text for f in found if f.text.startswith(("First", "Second", "Third"))] == \
        [facts[2].text, facts[4].text, facts[5].text]  # each step of the explainer's count, in its order, its own
    assert facts[3] not in found


def test_a_level_the_model_gives_only_as_a_gap_is_answered_by_the_levels_it_is_made_of():
    question = "How many heat pumps were installed in Norvalia in 2025, and why do sales figures differ?"
    titles = {"X": "Why heat pump sales and installations diverged in Norvalia in 2025"}
    facts = [fact("Manufacturers sold 2.61 million units into the market, while installers put 1.84 million "
                  "units into service.", "X"),  # the levels, in too few of the part's words to lead by them
             fact("The gap between heat pumps sold and heat pumps installed in Norvalia in 2025 was 0.77 million "
                  "units.", "X"),
             fact("First, about 0.46 million heat pumps were added to distributor inventory during 2025.", "X")]
    gap = Claim(text=facts[1].text, source_ids=["X"])
    draft = WriterDraft(title="Heat pumps", short_answer=gap,
                        sections=[DraftSection(heading="Installed", claims=[gap], part=1)])
    report = outline(draft, facts, question, titles)
    first = [c.text for c in report.sections[0].claims]
    assert "1.84 million" in first[0] and "1.84 million" in report.short_answer.text
    assert first[1:] == [facts[1].text]  # the gap stays, beside the level it is the difference of


def test_the_levels_of_a_gap_are_two_figures_in_its_unit_that_differ_by_it():
    from briefroom.report.asking import levels_of

    gap = "The gap between heat pumps sold and installed was 0.77 million units."
    assert levels_of("Manufacturers sold 2.61 million units, while installers put 1.84 million units into service.",
                     gap)
    assert levels_of("Sales were 2,610,000 units and installations 1,840,000 units.", gap)  # written out
    assert not levels_of("Manufacturers sold 2.61 million units, while installers put 1.54 million units into "
                         "service.", gap)  # they differ by another amount
    assert not levels_of("Sales were 2.61 million euros and installations 1.84 million units.", gap)  # two units
    assert not levels_of("Installers put 1.84 million units into service.", gap)  # one level alone


def test_a_note_on_the_document_is_no_reason_when_the_reasons_run_out():
    from briefroom.report.outline import Scorer, explanation

    question = "How many heat pumps were installed in Norvalia in 2025, and why do sales figures differ?"
    titles = {"X": "Why heat pump sales and installations diverged in 2025"}
    facts = [fact("The gap between heat pumps sold and installed in Norvalia in 2025 was 0.77 million units.", "X"),
             fact("First, about 0.46 million heat pumps were added to distributor inventory during 2025.", "X"),
             fact("*Synthetic document written for an evaluation suite.", "X")]
    parts = question_parts(question)
    found = explanation(facts, parts[1], Scorer(question, parts, [f.text for f in facts]), titles, set())
    assert [f.text for f in found] == [facts[0].text, facts[1].text]


def test_a_rival_says_what_it_measures_when_the_lead_measures_another_thing():
    from briefroom.report.asking import measured_apart

    installed = "Installers put 1.84 million heat pumps into service in Norvalia in 2025."
    sold = "Manufacturers sold 2.23 million heat pumps into Norvalia in 2025."
    forecast = "The plan expects 2.1 million heat pumps to be installed in Norvalia in 2025."
    assert measured_apart(sold, installed) == "sold"
    assert measured_apart(forecast, installed) == "forecast"
    assert measured_apart("Fitters installed 1.9 million heat pumps in Norvalia in 2025.", installed) is None
    assert measured_apart(forecast, "Analysts expect 2.0 million heat pumps in 2025.") is None  # both forecasts
    question = "How many heat pumps were installed in Norvalia in 2025?"
    planned = "Heat pump installations in Norvalia in 2025 were forecast at 2.1 million in the 2020 plan."
    facts = [fact(installed, "R"), fact(planned, "P")]
    report = outline(model_draft("Heat pumps were installed.", "R"), facts, question,
                     {"R": "Installer survey 2025", "P": "Heat pump plan 2020"})
    labels = [c.attribution for c in report.sections[0].claims if c.attribution]
    assert labels == ["Installer survey 2025", "Heat pump plan 2020: a forecast, not a measured figure"]


def test_a_model_title_about_the_report_gives_way_to_the_question():
    about = WriterDraft(title="The report is about the current task",
                        short_answer=Claim(text="It is big.", source_ids=["S1"]),
                        sections=[DraftSection(heading="Notes", claims=[Claim(text="It is big.", source_ids=["S1"])])])
    assert outline(about, FACTS, QUESTION).title == QUESTION  # the Critic would have sent it back for this
    a_report_on = about.model_copy(update={"title": "A report on the facts and figures of heat pumps in Norvalia"})
    assert outline(a_report_on, FACTS, QUESTION).title == QUESTION
    named = about.model_copy(update={"title": "Heat pumps installed in Norvalia"})
    assert outline(named, FACTS, QUESTION).title == "Heat pumps installed in Norvalia"
    from briefroom.report.asking import about_the_report, labels_the_report
    cited = "A report on heat pumps by the registry counts 1.84 million installed."
    assert labels_the_report(cited) and not about_the_report(cited)  # as a sentence it may cite a source


def test_a_forecast_that_restates_the_question_does_not_lead_over_the_count():
    from briefroom.report.outline import Scorer, leads

    question = "For Brennick International Airport in 2025: how many passengers did it handle, and how much cargo?"
    forecast = fact("The master plan's central forecast expected Brennick International Airport to handle "
                    "17.5 million passengers in 2025.", "P")
    count = fact("Brennick International Airport handled 14.82 million passengers in 2025, counting every arriving "
                 "and departing passenger once, and transfer passengers twice.", "T")
    parts = question_parts(question)
    score = Scorer(question, parts, [forecast.text, count.text])
    assert score(forecast.text, parts[0]) > score(count.text, parts[0])  # by score alone the forecast wins
    found = leads([forecast, count], parts[0], score, {}, set(), {"P": 0.9, "T": 0.8})
    assert found[0] is count and forecast in found  # the count leads; the forecast stands beside it


def test_a_measured_figure_of_something_else_does_not_push_out_the_forecast():
    from briefroom.report.outline import _measured_first, _Scored

    part = "How big is the 2026 public cloud market"
    # the scores the cloud-market replay gives these sentences (lexical and semantic)
    forecast = _Scored(0.70, 0.782, 0, fact(CLOUD_FORECAST, "A"))
    quarter = _Scored(0.54, 0.598, 1, fact("Enterprise spending on cloud infrastructure services reached 94 billion "
                                           "USD in the second quarter of 2026, 22% more than a year earlier.", "T"))
    growth = _Scored(0.46, 0.515, 2, fact("Specialist GPU clouds such as CoreWeave reported revenue growth above "
                                          "100% in 2026.", "G"))
    assert _measured_first([forecast, quarter, growth], part)[0] is forecast
    # a count of the forecast's quantity (its unit, within a factor of two) does lead
    count = _Scored(0.40, 0.45, 3, fact("Spending on public cloud services reached 690 billion USD in 2026.", "R"))
    assert _measured_first([forecast, quarter, growth, count], part)[0] is count


def test_another_name_of_the_asked_kind_is_another_subject_and_so_is_its_sources_text():
    from briefroom.report.outline import Scorer, leads

    question = "For Brennick International Airport in 2025: how many aircraft movements were there, and how much cargo?"
    other = fact("Haverlow Airport, 90 kilometres north of Brennick, handled 48,900 aircraft movements in 2025.", "H")
    its_cargo = fact("Cargo reached 18,700 tonnes in 2025.", "H")
    movements = fact("There were 131,650 aircraft movements (take-offs and landings) in 2025.", "T")
    cargo = fact("The airport handled 212,400 tonnes of cargo and mail in 2025.", "T")
    titles = {"H": "Haverlow Airport: record year in 2025", "T": "Brennick International Airport: traffic report 2025"}
    parts = question_parts(question)
    score = Scorer(question, parts, [other.text, its_cargo.text, movements.text, cargo.text])
    assert score.names_another(other.text) and score.other_subject(other.text, parts[0])
    assert not score.names_another(movements.text) and not score.names_another("Brennick International Airport grew.")
    assert score.other_subject(its_cargo.text, parts[1], titles["H"])  # about Haverlow, by its source's title
    assert not score.other_subject(its_cargo.text, parts[1], titles["T"])
    assert leads([other, movements], parts[0], score, titles, set()) == [movements]
    assert leads([its_cargo, cargo], parts[1], score, titles, set()) == [cargo]


def test_a_chinese_sentence_about_another_province_is_another_subject():
    from briefroom.report.outline import Scorer, leads, zh_places

    question = "2025年岚江省风电累计并网装机容量是多少？"
    other = fact("澄江省能源局消息，截至2025年底，澄江省风电累计并网装机容量为934万千瓦。", "C")
    aside = fact("截至2025年底，风电累计并网装机容量为934万千瓦。", "C")
    ours = fact("截至2025年底，全省风电累计并网装机容量达到1268万千瓦，比2024年底增加187万千瓦。", "B")
    titles = {"C": "澄江省2025年风电发展情况", "B": "岚江省2025年能源发展统计公报"}
    assert zh_places("澄江省与岚江省相邻，全省节省电费") == {"澄江省", "岚江省"}
    assert zh_places("2025年澜州市城市轨道交通") == {"澜州市"}  # 城市 (city) is no name
    parts = question_parts(question)
    score = Scorer(question, parts, [other.text, aside.text, ours.text])
    assert score.other_subject(other.text, parts[0]) and not score.other_subject(ours.text, parts[0], titles["B"])
    assert score.other_subject(aside.text, parts[0], titles["C"])  # its source is about 澄江省
    assert leads([other, ours], parts[0], score, titles, set()) == [ours]


def test_a_price_or_a_step_of_a_reasons_count_does_not_answer_how_many_were_installed():
    from briefroom.report.outline import Scorer, leads, part_leads

    question = "How many heat pumps were installed in Europe in 2025, and why do sales figures for the same year differ?"
    step = fact("Third, about 0.12 million units were delivered to building sites in late 2025 but were not "
                "commissioned until early 2026, so they count as sold in 2025 and installed in 2026.", "A")
    price = fact("The average retail price of a 200-litre heat pump water heater in Europe was about 2,100 euros "
                 "in 2025.", "W")
    count = fact("Installers put 1.84 million heat pumps into service across Europe in 2025.", "R")
    parts = question_parts(question)
    score = Scorer(question, parts, [step.text, price.text, count.text])
    titles = {"A": "Why heat pump sales and installations diverged in Europe in 2025", "W": "Heat pump water heaters",
              "R": "European installer survey 2025"}
    assert leads([step, price], parts[0], score, titles, set()) == []
    assert leads([step, price, count], parts[0], score, titles, set()) == [count]
    assert step in part_leads([step], parts[1], score, titles, set())  # the step still explains why


@pytest.mark.parametrize(("question", "theirs", "ours", "titles"), [
    # English, where a part asking which may be answered by a name the question never used
    ("For Qingchuan City in 2025: how many electric buses did it run, and which type grew fastest?",
     "By type, plug-in hybrid buses grew fastest.", "Hydrogen fuel-cell buses grew fastest, by 58.3%, to 380 vehicles.",
     ("Chengchuan City: electric buses in 2025", "Qingchuan City transport statistics 2025")),
    ("2025年末青川市新能源公交车保有量是多少？其中增长最快的是哪类车型？",
     "分车型看，增长最快的是插电式混合动力公交车。", "氢燃料电池公交车380辆，比上年末增长58.3%，是增长最快的车型。",
     ("澄川市2025年新能源公交车发展情况", "青川市2025年交通运输行业发展统计公报")),
])
def test_which_type_grew_fastest_is_not_answered_by_a_neighbour_citys_source(question, theirs, ours, titles):
    from briefroom.report.outline import Scorer, leads

    theirs_, ours_ = fact(theirs, "C"), fact(ours, "Q")  # theirs: no name, no figure
    parts = question_parts(question)
    score = Scorer(question, parts, [theirs, ours])
    assert score.other_subject(theirs, parts[1], titles[0]) and not score.other_subject(ours, parts[1], titles[1])
    assert leads([theirs_, ours_], parts[1], score, {"C": titles[0], "Q": titles[1]}, set()) == [ours_]


def test_a_count_dated_another_year_does_not_lead_a_part_its_scope_dates():
    from briefroom.report.asking import dated_year
    from briefroom.report.outline import Scorer, leads

    earlier = "In 2024 the airport handled 13.57 million passengers, so traffic grew by 9.2% in 2025."
    count = ("Brennick International Airport handled 14.82 million passengers in 2025, counting every arriving "
             "and departing passenger once, and transfer passengers twice (once on arrival, once on departure), "
             "as the international airport councils recommend.")
    assert (dated_year(earlier), dated_year(count), dated_year("2024年末全市常住人口为505.6万人。")) == \
        ("2024", None, "2024")
    question = ("For Brennick International Airport in 2025: how many passengers did it handle, how much cargo, "
                "how many aircraft movements were there, what share of departures left on time, and how did "
                "passenger numbers compare with 2024?")
    parts = question_parts(question)
    confirmed = fact(earlier, "T").model_copy(update={"confirmed_by": ("critic",)})  # the Critic's bonus
    facts = [confirmed, fact(count, "T")]
    score = Scorer(question, parts, [f.text for f in facts])
    assert leads(facts, parts[0], score, {}, set())[0].text == count  # the part names no year: its scope does
    assert leads(facts, parts[4], score, {}, set())[0].text == earlier  # a comparison dates by either year


def test_a_forecast_the_model_wrote_beside_the_count_says_it_is_a_forecast():
    count = "Brennick International Airport handled 14.82 million passengers in 2025."
    plan = ("The master plan's central forecast expected Brennick International Airport to handle 17.5 million "
            "passengers in 2025 and 24 million in 2035.")
    question = "How many passengers did Brennick International Airport handle in 2025?"
    draft = WriterDraft(title="Brennick", short_answer=Claim(text=count, source_ids=["T"]), sections=[
        DraftSection(heading="Passengers", part=1, claims=[Claim(text=count, source_ids=["T"]),
                                                           Claim(text=plan, source_ids=["P"])])])
    report = outline(draft, [fact(count, "T"), fact(plan, "P")], question)
    written = next(c for c in report.sections[0].claims if "17.5 million" in c.text)
    assert written.attribution and "forecast" in written.attribution  # not standing as if it were measured


def test_a_common_word_of_the_asked_name_does_not_make_another_sources_sentence_about_it():
    from briefroom.report.outline import Scorer, leads

    question = "For Kestrel Bus Company in 2025: how many passengers did it carry, and what was its average fare?"
    theirs = fact("The average fare was 2.10 euros per bus journey in 2025.", "H")
    ours = fact("The average fare paid per journey was 1.85 euros in 2025.", "K")
    named = fact("The average fare on Kestrel Bus Company routes was 1.85 euros per bus journey in 2025.", "H")
    titles = {"H": "Harrowmere Bus Company: 2025 at a glance", "K": "Kestrel Bus Company: annual report 2025"}
    parts = question_parts(question)
    score = Scorer(question, parts, [theirs.text, ours.text, named.text, *titles.values()])
    assert score.written_as_names(theirs.text) == set()  # "bus" in lower case is no name
    assert score.other_subject(theirs.text, parts[1], titles["H"])
    assert not score.other_subject(named.text, parts[1], titles["H"])  # the asked name, written as one
    assert leads([theirs, ours], parts[1], score, titles, set()) == [ours]


def test_another_doer_of_the_asked_verb_in_common_nouns_is_another_subject():
    from briefroom.report.doers import asked_doings, done_by_another
    from briefroom.report.outline import Scorer, leads

    question = ("How much electricity did solar panels generate in Corvale in 2025, and what share of the "
                "country's electricity consumption did that meet?")
    doings = asked_doings(question)
    assert [(sorted(d.doer), d.verb) for d in doings] == [(["panel", "solar"], "gener")]
    wind = fact("Wind farms in Corvale generated 18.6 TWh in 2025, about a quarter of the country's electricity "
                "consumption.", "W")
    solar = fact("In 2025 the country's panels met 13.8% of its electricity consumption.", "G")
    assert done_by_another(wind.text, question, doings)
    assert done_by_another("In 2025, gas turbines generated 30 TWh.", question, doings)
    for same in ("Solar panels generated 9.84 TWh in 2025.", "Rooftop solar systems generated 2 TWh.",
                 "Installations of solar panels generated 2 TWh.", "Electricity generation reached 71.3 TWh.",
                 "In 2024 they generated 8.1 TWh."):
        assert not done_by_another(same, question, doings), same
    parts = question_parts(question)
    score = Scorer(question, parts, [wind.text, solar.text])
    assert leads([wind, solar], parts[1], score, {}, set()) == [solar]
    # no doer in common nouns: a pronoun, a name, a plural noun where the bare verb stands
    assert asked_doings("How many passengers did it handle in 2025?") == []
    assert asked_doings("How much offshore wind capacity did Norvalia add in 2025?") == []
    assert asked_doings("Why do sales figures for the same year differ?") == []
    assert [d.verb for d in asked_doings("How many turbines have wind farms installed?")] == ["insta"]


def test_a_figure_from_a_source_that_never_names_the_asked_subject_is_another_subjects():
    from briefroom.report.outline import Scorer, documents_by_title, leads
    from briefroom.report.source_kinds import AUTHORITY

    question = "For Kestrel Bus Company in 2025: how many passengers did it carry?"
    region = fact("Across the region's four operators, buses carried 96.0 million passengers in 2025.", "R")
    ours = fact("The company's buses carried 48.6 million passengers, up from 46.9 million.", "K")
    defined = fact("A passenger is counted each time someone boards a bus.", "G")
    titles = {"R": "Regional Transport Authority: bus operators compared, 2025",
              "K": "Kestrel Bus Company: annual report 2025", "G": "Glossary of bus statistics"}
    sources = {sid: SourceRecord(source_id=sid, title=t, path=f"{sid.lower()}.md") for sid, t in titles.items()}
    texts = {"R": region.text, "K": "Kestrel Bus Company runs the estuary's routes. " + ours.text,
             "G": defined.text}
    parts = question_parts(question)
    authority = {"R": AUTHORITY["official"], "K": AUTHORITY["company"]}
    blind = Scorer(question, parts, [region.text, ours.text])
    assert leads([region, ours], parts[0], blind, titles, set(), authority)[0] == region  # what it answered before
    score = Scorer(question, parts, [region.text, ours.text], documents=documents_by_title(sources, texts))
    assert score.silent_titles == {titles["R"], titles["G"]}
    assert leads([region, ours], parts[0], score, titles, set(), authority) == [ours]
    assert not score.other_subject(defined.text, parts[0], titles["G"])  # no figure: it may still explain
    # the model saying the region's figure as the company's, citing only the silent source, is left out
    draft = WriterDraft(title="Kestrel", short_answer=Claim(text="Buses carried 96.0 million passengers.",
                                                            source_ids=["R"]),
                        sections=[DraftSection(heading="Passengers", claims=[
                            Claim(text="Buses carried 96.0 million passengers in 2025.", source_ids=["R"])])])
    report = outline(draft, [region, ours], question, titles)
    said = " ".join(c.text for s in report.sections for c in s.claims) + report.short_answer.text
    assert "48.6 million" in report.short_answer.text and "96.0" not in said


def test_a_source_naming_the_subject_another_way_is_not_silent():
    from briefroom.report.outline import Scorer, documents_by_title

    question = "How many heat pumps were installed in Europe and the EU in 2025?"
    sources = {"A": SourceRecord(source_id="A", title="European installer survey", path="a.md"),
               "B": SourceRecord(source_id="B", title="Installations across the European Union", path="b.md"),
               "C": SourceRecord(source_id="C", title="Heat pumps in Japan", path="c.md")}
    texts = {"A": "Installers put 1.84 million heat pumps into service.", "B": "The union counted 1.9 million.",
             "C": "Japan installed 0.6 million heat pumps."}
    score = Scorer(question, question_parts(question), [], documents=documents_by_title(sources, texts))
    assert score.silent_titles == {"Heat pumps in Japan"}  # "European" names Europe; "EU" decides nothing
