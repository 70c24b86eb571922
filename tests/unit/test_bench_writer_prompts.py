"""bench.writer_prompts: a recorded part prompt rebuilt with a template variant, and the
scores of what a model wrote for it."""

import json
from pathlib import Path

from bench.writer_prompts import PartPrompt, part_prompts, score
from briefroom.prompts import load_template

CASSETTE = Path(__file__).parents[2] / "scenarios" / "cloud-market" / "cassette.jsonl"


def recorded_part_prompts() -> list[str]:
    out = []
    for line in CASSETTE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["role"] == "writer" and "Write the section of the report" in record["messages"][-1]["content"]:
            out.append(record["messages"][-1]["content"])
    return out


def test_the_shipped_template_rebuilds_each_parts_first_prompt_as_recorded():
    prompts = part_prompts(CASSETTE, load_template("writer_part.md"))
    assert [p.part for p in prompts] == ["How big is the 2026 public cloud market", "who is growing fastest"]
    recorded = recorded_part_prompts()
    for prompt in prompts:
        assert prompt.messages[-1]["content"] in recorded
    assert "Sf257a3a8" in prompts[0].source_ids and prompts[0].shown["Sf257a3a8"]


def test_a_variant_replaces_only_the_task():
    prompts = part_prompts(CASSETTE, "Answer {{part}} from:\n{{evidence}}")
    content = prompts[0].messages[-1]["content"]
    assert "Answer How big is the 2026 public cloud market from:" in content
    assert "## Facts (verbatim from sources)" in content and "Write the section of the report" not in content


def test_a_copied_sentence_is_not_own_words_and_a_changed_number_does_not_hold():
    shown = {"A": ["Worldwide spending is forecast to reach 723 billion USD in 2026."]}
    prompt = PartPrompt("s", "p", [], ["A"], shown, claims=[
        {"text": "Worldwide spending is forecast to reach 723 billion USD in 2026.", "source_ids": ["A"]},
        {"text": "Analysts put 2026 spending at 723 billion USD.", "source_ids": ["A"]},
        {"text": "Analysts put 2026 spending at 725 billion USD.", "source_ids": ["A"]}])
    assert score([prompt]) == {"prompts": 1, "claims": 3, "own_words": 2, "numbers_hold": 2, "own_and_hold": 1,
                               "own_and_hold_share": 0.33}
