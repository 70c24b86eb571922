"""bench.restate_prompts: a variant task in place of the recorded one, rewrites judged by `differs`."""

from __future__ import annotations

import json

from bench.restate_prompts import Quote, judged, recorded_call, variant_messages
from briefroom.prompts import load_template, render

QUOTE = "Installers put 1.84 million heat pumps into service across Europe in 2025."


def _run(tmp_path, labelled: bool = True):
    shown = f"q1 [official statistics or registry: Installer survey]: {QUOTE}" if labelled else f"q1: {QUOTE}"
    block = f'<data-0123456789ab kind="quotes">\n{shown}\n</data-0123456789ab>'
    task = render(load_template("writer_restate.md"), language="English", sentences=block)
    human = f"## Whiteboard\nthe run's context\n\n## Current task\n{task}\n\nIn this reply:\n- sentence_id: one of q1"
    call = {"event": "llm_call", "purpose": "ask Restatements",
            "messages": [{"type": "system", "content": "## Role\nWriter"}, {"type": "human", "content": human}]}
    (tmp_path / "run.jsonl").write_text(json.dumps({"event": "run_start"}) + "\n" + json.dumps(call) + "\n")
    return tmp_path


def test_the_variant_takes_the_recorded_tasks_place_with_the_same_quotes_and_context(tmp_path):
    call = recorded_call(_run(tmp_path))
    messages, quotes = variant_messages(call, "Rephrase, in {{language}}:\n{{sentences}}\n")
    content = messages[-1]["content"]
    assert content.startswith("## Whiteboard\nthe run's context")
    assert "## Current task\nRephrase, in English:\n<data-0123456789ab" in content and "Write each one again" not in content
    assert content.endswith("In this reply:\n- sentence_id: one of q1")
    assert quotes == {"q1": Quote(QUOTE, "official statistics or registry: Installer survey")}
    bare, _ = variant_messages(call, "Rephrase:\n{{sentences}}\n", bare=True)
    assert bare[-1]["content"].startswith("## Current task\nRephrase:")


def test_a_recording_of_quotes_without_labels_is_read_too(tmp_path):
    _, quotes = variant_messages(recorded_call(_run(tmp_path, labelled=False)), load_template("writer_restate.md"))
    assert quotes == {"q1": Quote(QUOTE, "")}


def test_each_rewrite_says_why_it_differs_from_its_quote():
    rows = judged([{"sentence_id": "q1", "text": QUOTE},
                   {"sentence_id": "q1", "text": "In 2025, 1.84 million heat pumps went into service across Europe."},
                   {"sentence_id": "q1", "text": "The newswire says 1.84 million heat pumps went into service across "
                                                 "Europe in 2025."},
                   {"sentence_id": "q9", "text": "Anything."}], {"q1": Quote(QUOTE, "official: Installer survey")})
    assert [r["differs"] for r in rows] == ["no rewrite", None, "a source the quote's is not ('newswire')",
                                            "no such quote"]
