"""Lost in the middle, on the embedded model: a key fact at 10/30/50/70/90% of a long
prompt among distractors, answer accuracy by position, with and without briefroom's
placement (its `focus_items`: the facts most relevant to the task recited right
before it, as every layered prompt does).

    .venv/bin/python -m bench.lost_in_middle [--model FILE.gguf] [--distractors 60]

Prints JSON. The distractors are sentences of the same shape about other lines,
cities and years, so only reading the right sentence answers the question.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
import urllib.request
from pathlib import Path

from briefroom.agents.prompting import focus_items
from briefroom.models.embedded import EmbeddedServer
from briefroom.records import Fact

POSITIONS = (0.1, 0.3, 0.5, 0.7, 0.9)
# (key sentence, question, accepted answers): invented figures, not from any scenario
CASES = [
    ("The Amber Line of the Caldermoor metro carried 61,400 riders per day in 2025.",
     "How many riders per day did the Amber Line of the Caldermoor metro carry in 2025?", ["61,400", "61400"]),
    ("The Dunmore desalination plant produced 184,000 cubic metres of water per day in 2024.",
     "How many cubic metres of water per day did the Dunmore desalination plant produce in 2024?",
     ["184,000", "184000"]),
    ("Harlow Bay offshore wind farm reached a capacity of 912 MW in 2023.",
     "What capacity did the Harlow Bay offshore wind farm reach in 2023?", ["912"]),
    ("Vesta Grid installed 7,350 public chargers in Ostrava county in 2025.",
     "How many public chargers did Vesta Grid install in Ostrava county in 2025?", ["7,350", "7350"]),
    ("The Pellham heat network delivered 2,140 GWh of heat to homes in 2022.",
     "How much heat did the Pellham heat network deliver to homes in 2022?", ["2,140", "2140"]),
]
SUBJECTS = ["Cobalt Line", "Ruby Line", "Teal Line", "Granite Line", "Sable Line", "the Ferrow bus network",
            "the Ostby tram", "the Marl ferry", "Kessel plant", "Brook Bay wind farm", "Nordby heat network",
            "Volt County chargers", "the Linden reservoir", "Ashgrove library", "the Holm bridge"]
VERBS = ["carried", "produced", "delivered", "recorded", "handled", "reported", "served"]
UNITS = ["riders per day", "cubic metres per day", "GWh", "MW", "visitors", "vehicles per day", "tonnes"]


def distractors(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.randint(1, 99)},{rng.randint(100, 999)} "
            f"{rng.choice(UNITS)} in {rng.randint(2015, 2026)}." for _ in range(n)]


def prompt(key: str, question: str, position: float, n: int, seed: int, placed: bool) -> list[dict]:
    lines = distractors(n, seed)
    lines.insert(round(position * n), key)
    context = "\n".join(f"- {line}" for line in lines)
    task = f"{question} Answer with the number and its unit only."
    user = f"## Facts\n{context}\n\n"
    if placed:  # briefroom's recitation, built by the same function the layered builder uses
        facts = [Fact(fact_id=f"F{i}", text=line, source_id=f"S{i}", found_by="bench", round=1)
                 for i, line in enumerate(lines)]
        user += "\n".join(item.text for item in focus_items(facts, task)) + "\n\n"
    user += f"## Current task\n{task}"
    return [{"role": "system", "content": "You answer questions from the facts you are given."},
            {"role": "user", "content": user}]


def ask(base_url: str, messages: list[dict]) -> str:
    body = json.dumps({"messages": messages, "max_tokens": 24, "temperature": 0}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


def correct(answer: str, accepted: list[str]) -> bool:
    flat = re.sub(r"\s+", "", answer)
    return any(a.replace(" ", "") in flat for a in accepted)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--distractors", type=int, default=60)
    args = parser.parse_args()
    results: dict[str, dict[str, list[bool]]] = {"raw": {}, "placed": {}}
    started = time.perf_counter()
    with EmbeddedServer(model_path=args.model, log_path=Path("/tmp/briefroom-lost-in-middle.log")) as server:
        for mode in results:
            for position in POSITIONS:
                hits = []
                for n, (key, question, accepted) in enumerate(CASES):
                    answer = ask(server.base_url, prompt(key, question, position, args.distractors, n,
                                                         mode == "placed"))
                    hits.append(correct(answer, accepted))
                results[mode][f"{int(position * 100)}%"] = hits
    print(json.dumps({
        "model": (args.model.name if args.model else "bundled smollm2-135m-instruct"),
        "distractors": args.distractors, "cases": len(CASES),
        "accuracy": {mode: {pos: round(sum(h) / len(h), 2) for pos, h in by.items()} for mode, by in results.items()},
        "overall": {mode: round(sum(sum(h) for h in by.values()) / sum(len(h) for h in by.values()), 2)
                    for mode, by in results.items()},
        "seconds": round(time.perf_counter() - started, 1)}, indent=2))


if __name__ == "__main__":
    main()
