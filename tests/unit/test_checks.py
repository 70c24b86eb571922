from briefroom.protocol.extraction import extract_facts, numbers_in
from briefroom.records import Claim, DraftSection, Fact, ReportDraft, SourceRecord
from briefroom.report.checks import claim_problems, markdown_problems, repair_draft
from briefroom.report.draft import render_markdown

TEXTS = {"S1": "Spending will reach 723 billion USD in 2026, up 21.4%.", "S2": "Azure grew 31% and AWS 17%."}
SOURCES = {sid: SourceRecord(source_id=sid, title=f"T{sid}", path=f"c/{sid}.md") for sid in TEXTS}


def test_numbers_are_normalised():
    assert numbers_in("It cost 1,050 units, 21.4% more, in 2026 [3].") == ["1050", "21.4", "2026", "3"]


def test_supported_claim_passes():
    assert claim_problems(Claim(text="Spending reaches 723 billion USD.", source_ids=["S1"]), TEXTS) == []


def test_paraphrased_number_is_caught():
    problems = claim_problems(Claim(text="Spending reaches 71.2 billion.", source_ids=["S1"]), TEXTS)
    assert [p.kind for p in problems] == ["unsupported_number"]
    assert "71.2" in problems[0].detail


def test_number_from_another_source_does_not_count():
    problems = claim_problems(Claim(text="Azure grew 31%.", source_ids=["S1"]), TEXTS)
    assert "unsupported_number" in [p.kind for p in problems]


def test_unretrieved_source_is_unresolved():
    problems = claim_problems(Claim(text="No numbers here.", source_ids=["S9"]), TEXTS)
    assert [p.kind for p in problems] == ["unresolved_citation"]


def draft(*claims):
    return ReportDraft(title="Spending report", short_answer=claims[0],
                       sections=[DraftSection(heading="Findings", claims=list(claims[1:]) or [claims[0]])])


def test_render_numbers_citations_by_first_use_and_lists_sources():
    md, order = render_markdown(draft(Claim(text="A 723 figure.", source_ids=["S1"]),
                                      Claim(text="Azure 31%.", source_ids=["S2", "S1"])), SOURCES)
    assert order == ["S1", "S2"]
    assert "A 723 figure. [1]" in md
    assert "Azure 31%. [2][1]" in md
    assert "[2] TS2 — `c/S2.md` (source `S2`)" in md
    assert markdown_problems(md, TEXTS) == []


def test_markdown_check_catches_dangling_citation_and_bad_number():
    md = "# R\n\n- It grew 99% [1].\n- Something [4].\n\n## Sources\n\n[1] T — `p` (source `S2`)\n"
    kinds = sorted(p.kind for p in markdown_problems(md, TEXTS))
    assert kinds == ["unresolved_citation", "unsupported_number"]


def test_repair_replaces_with_verified_fact_or_drops():
    facts = extract_facts(TEXTS["S1"], "S1", "searcher", 1)
    bad = Claim(text="Spending will reach 71.2 billion in 2026.", source_ids=["S1"])
    hopeless = Claim(text="Mars colonies spend 5 trillion.", source_ids=["S2"])
    good = Claim(text="Azure grew 31%.", source_ids=["S2"])
    repaired, log = repair_draft(draft(bad, hopeless, good), TEXTS, facts)
    assert repaired.short_answer.text == f"“{facts[0].text}”"
    assert [c.text for c in repaired.sections[0].claims] == ["Azure grew 31%."]
    assert len(log) == 2 and "replaced" in log[0] and "dropped" in log[1]
    md, _ = render_markdown(repaired, SOURCES)
    assert markdown_problems(md, TEXTS) == []


def test_extract_facts_is_verbatim():
    facts = extract_facts("Intro without digits. Revenue was 15.2 billion USD, up 32%.", "S3", "searcher", 2)
    assert len(facts) == 1
    assert facts[0].text == "Revenue was 15.2 billion USD, up 32%."
    assert facts[0].numbers == ("15.2", "32")
    assert isinstance(facts[0], Fact)


def test_fluff_is_ungrounded_but_faithful_paraphrase_is_not():
    fluff = Claim(text="This report presents a detailed analysis of recent global trends.", source_ids=["S1"])
    assert [p.kind for p in claim_problems(fluff, TEXTS)] == ["ungrounded_claim"]
    paraphrase = Claim(text="Spending will reach 723 billion USD by 2026.", source_ids=["S1"])
    assert claim_problems(paraphrase, TEXTS) == []


def test_short_answer_repair_prefers_fact_about_the_question():
    texts = {"S1": "Cloud spending will reach 723 billion USD in 2026. Bread costs 3 USD."}
    facts = extract_facts(texts["S1"], "S1", "searcher", 1)
    fluff = Claim(text="A detailed analysis of recent trends follows here.", source_ids=["S1"])
    repaired, _ = repair_draft(draft(fluff), texts, facts, question="How big is cloud spending in 2026?")
    assert "723 billion" in repaired.short_answer.text


def test_words_stitched_from_different_sentences_are_ungrounded():
    texts = {"S1": "Public cloud spending grows. Azure is growing fastest among providers."}
    stitched = Claim(text="The public cloud market is growing fastest.", source_ids=["S1"])
    assert "ungrounded_claim" in [p.kind for p in claim_problems(stitched, texts)]


def test_a_question_is_not_a_finding():
    claim = Claim(text="How big is spending in 2026?", source_ids=["S1"])
    assert "not_a_statement" in [p.kind for p in claim_problems(claim, TEXTS)]


def test_off_topic_title_and_heading_are_flagged_and_repaired():
    bad = ReportDraft(title="Fix these before shipping", short_answer=Claim(text="Spending will reach 723 billion USD.",
                                                                           source_ids=["S1"]),
                      sections=[DraftSection(heading="Unrelated gardening tips",
                                             claims=[Claim(text="Azure grew 31%.", source_ids=["S2"])])])
    from briefroom.report.checks import draft_problems
    kinds = [p.kind for p in draft_problems(bad, TEXTS, "How big is cloud spending?")]
    assert kinds.count("off_topic_label") == 2
    repaired, log = repair_draft(bad, TEXTS, [], question="How big is cloud spending?")
    assert repaired.title == "How big is cloud spending?"
    assert repaired.sections[0].heading == "Findings"
    assert draft_problems(repaired, TEXTS, "How big is cloud spending?") == []


def test_a_claims_figure_must_match_with_its_scale_and_unit_not_just_its_digits():
    from briefroom.report.checks import readings_in, unsupported_numbers

    wrong = [("Spending reached 723 million.", "Spending will reach 723 billion USD."),
             ("Capacity is 32 MW.", "Capacity is 32 GW."),
             ("充电桩占比为5%。", "占比为千分之五。"),
             ("占比为零点八。", "占比为0.5。"),
             ("Rail emitted 14 grams of CO2 per kilometre.", "A flight emitted about 14 times as much as rail."),
             ("排放量为32万吨。", "排放量为32万千瓦时。")]
    right = [("It will reach 723 billion.", "Spending will reach 723 billion USD."),
             ("It reaches 723.", "Spending will reach 723 billion USD."),
             ("The total is 1.2亿.", "There were 120 million riders."),
             ("新增32吉瓦。", "新增装机3,200万千瓦。"),
             ("占比为0.5%。", "占比为千分之五。"),
             ("Rail emitted 143 g of CO2.", "High-speed rail emitted 143 grams of CO2."),
             ("It emitted 0.143 kilograms.", "It emitted 143 grams."),
             ("排放量为32万吨。", "The plant emitted 320,000 tonnes.")]
    assert all(unsupported_numbers(claim, readings_in(source)) for claim, source in wrong)
    assert not any(unsupported_numbers(claim, readings_in(source)) for claim, source in right)


def test_the_recall_threshold_follows_the_embedder_however_it_is_spelled():
    from briefroom.corpus.embeddings import recall_threshold_for

    assert {recall_threshold_for(s) for s in ("", "local", "USE", " use", "use-multilingual-v3")} == {0.45}
    assert recall_threshold_for("minilm") == recall_threshold_for("all-MiniLM-L6-v2-int8") == 0.75


def test_a_mixed_question_in_english_is_split_as_english():
    from briefroom.report.language import question_parts

    parts = question_parts("What is the 充电桩 number in 临江省, and how much did 临江省 spend on them in 2025?")
    assert len(parts) == 2


def test_names_are_capitalised_words_that_are_no_function_word_month_or_unit():
    from briefroom.report.checks import names
    assert names("In March 2025 the Port of Halvik handled 3.9 million TEU, 12 GW and 5 USD.") == {"Port", "Halvik"}
    assert names("“Adopted by the Port of Halvik Authority on June 6, 2019.”") == {"Port", "Halvik", "Authority"}
    assert names("青川市2025年末常住人口为512.4万人。") == set()  # Chinese names carry no mark code relies on


def test_a_finding_that_moves_a_figure_to_another_place_is_rejected_as_evidence():
    from briefroom.agents.critic import EVIDENCE_PROBLEMS
    texts = {"S1": "Velmora's tram network carried 41 million passengers in 2025. Dunmere has no tram."}
    moved = Claim(text="In 2025 Dunmere's tram network carried 41 million passengers.", source_ids=["S1"])
    problems = claim_problems(moved, texts)
    assert [p.kind for p in problems] == ["misattributed_figure"] and problems[0].kind in EVIDENCE_PROBLEMS
    kept = Claim(text="In 2025 Velmora's tram network carried 41 million passengers.", source_ids=["S1"])
    assert claim_problems(kept, texts) == []
    # a capital opening the sentence is grammar, not a name
    dated = Claim(text="Counted by Velmora's tram operator, the network carried 41 million passengers in 2025.",
                  source_ids=["S1"])
    assert claim_problems(dated, texts) == []
