"""The source-kind classifier: each kind from a document's own title and opening lines."""

import pytest

from briefroom.records import Passage, SourceRecord
from briefroom.report.source_kinds import AUTHORITY, RULES, classify, profile, source_date


def record(title: str, text: str, sid: str = "S1") -> SourceRecord:
    return SourceRecord(source_id=sid, title=title, path=f"{sid}.md",
                        passages=(Passage(chunk_id=f"{sid}:0", start=0, end=len(text), text=text),))


@pytest.mark.parametrize(("title", "opening", "kind"), [
    ("Heat pump installations by country, 2025", "Figures from national installer registers.", "official"),
    ("Population 2025", "The national statistics office published the census results.", "official"),
    ("Sales report", "The Heating Manufacturers Association collects data from member companies.", "industry_body"),
    ("Cloud market tracker", "Analysts at a research firm forecast strong growth.", "analyst"),
    ("Press release: Acme opens a plant", "Acme today announced a new factory.", "company"),
    ("Hyperscaler earnings roundup, Q3 2026", "Microsoft said revenue grew, ahead of analyst expectations.",
     "company"),
    ("Cloud spending forecast raised again (newswire item)", "A research firm raised its forecast.", "news"),
    ("Opinion: the boom is bigger than anyone admits", "Official registry counts are too low.", "opinion"),
    ("Why I think so", "By my own back-of-the-envelope estimate, Europe installed 2.9 million.", "opinion"),
    ("Why the airport feels like it handles 20 million", 'Travel column, "Gate Notes", 9 September 2025\n\n'
     "Anyone who queued at security will tell you.", "opinion"),
    ("Halvik is bigger than its statistics", '"Deck Log" shipping blog, 11 January 2026\n\n'
     "I have worked the quays for twenty years.", "opinion"),
    ("Fleet notes", "“Harbour Watch” blog: what the cranes see.", "opinion"),
    ("地铁为什么这么挤", "城市专栏，2025年9月\n\n早高峰的车厢里站满了人。", "opinion"),
    ("Port traffic 2025", "The port authority's column of figures: 3.87 million TEU.", "unknown"),
    ("The best heat pump", "Sponsored. Our award-winning pump. Request a quote today.", "marketing"),
    ("Glossary of metrics", "Definitions of the terms used.", "reference"),
    ("Lentil soup", "Rinse the lentils.", "unknown"),
    ("澜州市2025年城市轨道交通运营统计公报", "澜州市交通运输局发布。", "official"),
    ("随笔：地铁越来越空了？", "作者：一名普通上班族（个人观点）", "opinion"),
    ("充电设施发展报告", "中国充电联盟发布数据。", "industry_body"),
    ("澜州市轨道交通客流预测报告", "研究院预测客流继续增长。", "analyst"),
    ("澜州地铁单日客运量创历史新高", "据本报记者报道。", "news"),
    # a plan that promotes a kind of bus (推广纯电动公交车) sells nothing
    ("青川市公共交通发展规划（2021—2025年）", "本规划由青川市交通运输局于2021年3月印发。规划期内，将重点推广纯电动公交车。",
     "official"),
    ("新品上市", "推广活动：立即购买享受限时优惠。", "marketing"),
    # who publishes the document decides before a phrase it mentions
    ("Harbour Energy Office: heating statistics 2024", "Figures for the calendar year.", "official"),
    ("Northfield Bus Company: 2024 at a glance", "It runs the routes north of the river.", "company"),
    ("Traffic report 2024", "Published by Northfield Airport Company, the operator of the airport, on 3 March 2025.",
     "company"),
    ("Heat plan 2020–2030", "Adopted by the city council in May 2020. The plan expects 3 TWh.", "official"),
    ("Installer count", "The Heat Installers' Council compiles the count each year.", "industry_body"),
    ("Charging network: customer figures", "Amperline, the largest public charging operator in the country, "
     "had 41,000 registered accounts.", "company"),
    ("Freight on the crossing, 2024", "Freight bulletin of the Harbour Port Authority, 2024.", "official"),
    # a sentence that opens with a year is no name in apposition
    ("Ferry traffic 2025", "in 2025, the operator added a second vessel.", "unknown"),
    ("A record summer", "Press release, Fjordline, 4 January 2025. We carried 1.1 million passengers.", "company"),
    ("Plug-in cars pass 100,000", "Press release, 2 May 2025. The Motor Dealers' Association welcomes the figure.",
     "industry_body"),
    # a title that names its publisher before the document it is; a headline that starts with a name does not
    ("Northfield Bus Company business plan 2023–2027", "We expect to carry 40 million passengers.", "company"),
    ("Harbour City Council's climate plan", "We expect emissions to halve.", "official"),
    ("Northfield Bus Company carries fewer people than it says", "Buses ran half empty.", "unknown"),
    ("某市地铁2025年进站量", "某市轨道交通集团统计，2025年日均进站量为120万人次。", "company"),
])
def test_each_kind_from_its_own_words(title, opening, kind):
    assert classify(title, opening)[0] == kind


def test_an_opinion_quoting_a_registry_is_still_an_opinion():
    kind, rule = classify("Europe's boom", "Posted on a personal energy blog. The registry figures are too low.")
    assert kind == "opinion" and rule == "first-person estimate"


def test_the_profile_names_its_rule_and_date_and_labels_in_both_languages():
    p = profile(record("Opinion: Europe's heat pump boom", "Europe installed 2.9 million heat pumps in 2025."))
    assert (p.kind, p.date, p.rule) == ("opinion", "2025", "title says opinion")
    assert p.unverified and p.label() == "opinion or blog, 2025" and p.label("zh") == "观点或博客, 2025"
    assert source_date("Review", "Published 2026-02-14. In 2025 ...") == "2026-02-14"
    assert source_date("Fleet plan 2022–2026 (submitted 2021)", "We expect 40 buses in 2025.") == "2021"
    assert source_date("Fleet plan 2022–2026", "We expect 40 buses in 2025.") == "2022"


def test_a_year_the_document_looks_ahead_to_is_not_its_date():
    news = ("A research firm raised its forecast for 2026 public cloud spending to 680 billion USD. The firm's "
            "previous forecast, issued in 2025, was 640 billion USD. It expects the market to pass 1 trillion USD "
            "by 2029.")
    assert source_date("Cloud spending forecast raised again", news) == "2025"
    assert source_date("Plan", "Leakage of 15 percent by the end of 2029.") is None
    assert source_date("Registry", "In 2024 it counted 910. By 2027 it expects 1,200.") == "2024"
    assert source_date("青川市国土空间总体规划（2020—2035年）公开征求意见稿", "") == "2020"  # a span's end is its horizon
    assert source_date("Transport plan 2021-2030", "") == "2021"
    assert source_date("Statistical yearbook 2025", "") == "2025"


def test_a_title_spanning_the_years_a_document_counts_is_dated_when_it_says_it_was_published():
    counted = "Official statistics of the council. Published on 27 January 2026. Visits rose to 451,300 in 2025."
    assert source_date("Museum attendance statistics 2021–2025", counted) == "2026"
    assert source_date("Fleet plan 2022–2026", "Posted in March 2021. We expect 40 buses.") == "2021"
    assert source_date("Transport plan 2021-2030", "Adopted by the council.") == "2021"  # says nothing: its span's start
    assert source_date("Statistical yearbook 2025", "Published on 3 March 2026.") == "2025"  # one year: the title's


def test_a_chinese_plan_is_dated_when_it_was_issued_not_by_the_year_it_aims_at():
    assert source_date("岚江省可再生能源发展规划（摘要）",
                       "岚江省能源局 2021年9月印发 到2025年，全省风电装机容量达到1500万千瓦。") == "2021"
    assert source_date("行动计划", "计划预测，到2025年底公共充电桩将达到52万台。2024年，全省建成40万台。") == "2024"
    # 截至 (as of) names the year a count was made, not one looked ahead to
    assert source_date("公报", "截至2025年底，全省风电累计并网装机容量达到1268万千瓦。") == "2025"
    assert source_date("岚江省2025年能源发展统计公报", "岚江省能源局 2026年3月5日发布") == "2025"  # the title's year first


def test_every_rule_names_a_weighed_kind_and_authority_follows_the_issue_order():
    assert {kind for _, kind, _, _ in RULES} <= set(AUTHORITY)
    order = ["official", "industry_body", "analyst", "company", "news", "marketing", "opinion"]
    assert [AUTHORITY[k] for k in order] == sorted((AUTHORITY[k] for k in order), reverse=True)
