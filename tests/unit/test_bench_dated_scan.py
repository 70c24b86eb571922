"""bench.dated_scan: the year check over the sentences a recording's roles wrote."""

from __future__ import annotations

import json

import bench.dated_scan as ds


def test_a_recorded_sentence_giving_a_figure_to_another_year_is_a_hit(tmp_path):
    scenario = tmp_path / "port"
    (scenario / "corpus").mkdir(parents=True)
    (scenario / "corpus" / "annual.md").write_text("# Port statistics\n\nThe port handled 2.96 million TEU in 2025, "
                                                   "up from 2.71 million TEU in 2024.\n")
    reply = {"verdicts": [], "sections": [{"claims": [
        {"text": "The port handled 2.96 million TEU in 2024.", "source_ids": ["S1"]},
        {"text": "The port handled 2.96 million TEU in 2025.", "source_ids": ["S1"]}]}]}
    entries = [{"role": "writer", "seq": 0, "response": {"content": json.dumps(reply)}},
               {"role": "planner", "seq": 0, "response": {"content": json.dumps(reply)}}]  # planners state nothing
    cassette = scenario / "recordings" / "m" / "cassette.jsonl"
    cassette.parent.mkdir(parents=True)
    cassette.write_text("".join(json.dumps(e) + "\n" for e in entries))
    hits = ds.scan(cassette)
    assert [(h["recording"], h["role"], h["sentence"]) for h in hits] == [
        ("m", "writer", "The port handled 2.96 million TEU in 2024.")]
    assert "2025" in str(hits[0]["why"])
