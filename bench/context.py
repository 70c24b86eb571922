"""Context benchmark: layered vs naive prompts over a long synthetic run.

Four roles, N rounds, realistic message and tool-output sizes, two planted must-keep
facts per round. Every prompt is built by briefroom's real code (`Turn.build_prompt`
under each strategy, the bus's routing, round-end TTL expiry); no model is called, so
the numbers are deterministic and the comparison is exact.

    .venv/bin/briefroom bench context --rounds 30 --json
    .venv/bin/python -m bench.context --rounds 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from types import SimpleNamespace

from briefroom.agents.base import Turn
from briefroom.agents.registry import bus_for, discover
from briefroom.agents.report_message import REPORT, ReportMessage
from briefroom.agents.run_context import RunContext
from briefroom.graph.builder import round_end
from briefroom.llm import ModelHandle, ModelPool
from briefroom.models.deterministic import DeterministicChatModel
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import MsgType, Priority, make_message
from briefroom.protocol.payloads import Critique, PayloadModel
from briefroom.protocol.prompt_assembly import Item, mark_data
from briefroom.records import Charter, Claim, DraftSection, Fact, ReportDraft
from briefroom.runlog import RunLog
from briefroom.state.reducers import append_messages

WINDOW = 128_000  # a typical hosted model; the naive baseline may use all of it
ROLES = ("planner", "searcher", "critic", "writer")
TASKS = {"planner": "Plan the next questions.", "searcher": "Find passages that answer the open question.",
         "critic": "Review the new conclusions.", "writer": "Write the report from the accepted conclusions."}


def planted(round_no: int, k: int) -> str:
    return f"{round_no * 7 + k}.{round_no:02d}{k}"  # unique, easy to search for


def tool_output(round_no: int, k: int) -> str:
    """About 1,500 tokens of search results, like a real local_search page."""
    hits = [{"source_id": f"S{round_no:04d}{k}{h:03d}", "title": f"Market report {round_no}-{k}-{h}",
             "text": (f"Segment {h} of region {k} grew {round_no + h}.{k}% in year {2000 + round_no}. " * 6).strip(),
             "score": round(0.9 - h * 0.05, 2)} for h in range(8)]
    return json.dumps({"hits": hits}, indent=1)


def sample_payload(msg_type: MsgType, content: str) -> PayloadModel | None:
    """A minimal valid payload for a simulated message (what a real role would attach)."""
    if msg_type is MsgType.CRITIQUE:
        return Critique(kind="review")
    if msg_type is REPORT:
        claim = Claim(text="A simulated claim.", source_ids=[])
        draft = ReportDraft(title="Draft report", short_answer=claim,
                            sections=[DraftSection(heading="Findings", claims=[claim])])
        return ReportMessage(draft=draft, markdown=content)
    return None

class Simulation:
    def __init__(self, strategy: str, window: int = WINDOW):
        roles = [r for r in discover() if r.name in ROLES]
        self.roles, self.bus = roles, bus_for(roles)
        handles = {name: ModelHandle(name, "test", "test", DeterministicChatModel(), "json_object_schema", window)
                   for name in [*ROLES, "summarizer"]}
        self.ctx = RunContext(bus=self.bus, models=ModelPool(handles), counter=TokenCounter(), log=RunLog(None),
                              context_strategy=strategy)
        self.state = {"charter": Charter(goal="How did the synthetic markets grow, segment by segment?",
                                         acceptance_criteria=("Every number is cited.",), roles=ROLES, max_rounds=10**6),
                      "round": 1, "whiteboard": [], "archive": [], "facts": [], "seen": {}, "worktables": {},
                      "summaries": [], "sources": {}}
        self.seq = 0
        self.prompts: dict[str, list[str]] = {r: [] for r in ROLES}
        self.systems: dict[str, list[str]] = {r: [] for r in ROLES}
        self.overflowed = False  # did any prompt have to drop history to fit the window?

    def publish(self, sender: str, msg_type: MsgType, content: str, receiver: str = "broadcast",
                refs: tuple[str, ...] = (), priority: Priority = Priority.P2, ttl: int = 2) -> None:
        self.seq += 1
        message = make_message(sender=sender, msg_type=msg_type, content=content, round=self.state["round"],
                               seq=self.seq, receiver=receiver, references=refs, priority=priority, ttl_rounds=ttl,
                               payload=sample_payload(msg_type, content))
        self.state["whiteboard"] = append_messages(self.state["whiteboard"], [message])

    def prompt(self, role_name: str, material: list[Item] | None = None) -> int:
        role = next(r for r in self.roles if r.name == role_name)
        turn = Turn(role=role, state=self.state, ctx=self.ctx)
        facts = [f for f in self.state["facts"] if f.confirmed_by] if role_name == "writer" else None
        built = turn.build_prompt(TASKS[role_name], material=material, facts=facts)
        text = "\n\n".join(str(m.content) for m in built.messages)
        self.prompts[role_name].append(text)
        self.systems[role_name].append(str(built.messages[0].content))
        self.overflowed |= bool(built.dropped) and self.ctx.context_strategy == "naive"
        self.state["seen"] = {**self.state["seen"], role_name: [m.msg_id for m in turn.inbox]}
        return sum(self.ctx.counter.count(str(m.content)) for m in built.messages)

    def play_round(self) -> dict[str, int]:
        r = self.state["round"]
        tokens = {}
        tokens["planner"] = self.prompt("planner")
        for k in range(2):
            self.publish("planner", MsgType.INSTRUCTION, f"Question {r}.{k}: how did region {k} grow in round {r}?",
                         receiver="searcher", priority=Priority.P0, ttl=1)
        outputs = [tool_output(r, k) for k in range(2)]
        for out in outputs:
            self.ctx.add_tool_output(r * 1000 + self.seq + 0.5, out)
        material = [Item(f"p{r}-{k}", mark_data("passage", out[:1600], source=f"S{r:04d}{k}000"), Priority.P1, k)
                    for k, out in enumerate(outputs)]
        tokens["searcher"] = self.prompt("searcher", material)
        for k in range(2):
            fact_text = f"Region {k} revenue reached {planted(r, k)} billion USD in round {r}."
            source = f"S{r:04d}{k}000"
            self.state["facts"] = [*self.state["facts"],
                                   Fact(fact_id=f"F{r}-{k}", text=fact_text, numbers=(planted(r, k),),
                                        source_id=source, found_by="searcher", round=r,
                                        confirmed_by=("searcher", "critic")),
                                   Fact(fact_id=f"F{r}-{k}-x", text=f"Segment {k} grew {r}.{k}% in {2000 + r}.",
                                        numbers=(f"{r}.{k}", str(2000 + r)), source_id=source, found_by="searcher",
                                        round=r)]
            self.publish("searcher", MsgType.CONCLUSION, fact_text + " " + "Analysts attribute it to demand. " * 3,
                         refs=(source,), priority=Priority.P1)
        tokens["critic"] = self.prompt("critic")
        self.publish("critic", MsgType.CRITIQUE, f"Round {r}: 2 conclusions accepted. " + "Check units. " * 10,
                     receiver="writer", priority=Priority.P1)
        tokens["writer"] = self.prompt("writer")
        self.publish("writer", REPORT, "Draft report. " + "A paragraph of prose about growth. " * 40,
                     receiver="critic", priority=Priority.P2)
        update = round_end(self.state, SimpleNamespace(context=self.ctx), self.roles, self.bus)
        self.state["whiteboard"] = update["whiteboard"].value
        self.state["archive"] = [*self.state["archive"], *update["archive"]]
        self.state["summaries"] = [*self.state.get("summaries", []), *update.get("summaries", [])]
        self.state["round"] = r + 1
        return tokens


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_share(prompts: list[str]) -> float:
    """Mean share of each later prompt's bytes that repeat the previous prompt's prefix."""
    shares = [_common_prefix(before, after) / max(len(after), 1) for before, after in zip(prompts, prompts[1:])]
    return round(statistics.mean(shares), 3) if shares else 1.0


def reusable_share(prompts: list[str]) -> float:
    """Upper bound for `prefix_share` under any ordering: the share of each later prompt's
    bytes (system message plus rendered items) that also appeared in the previous prompt.
    What is left is new information the role has to see this time."""
    def units(prompt: str) -> list[str]:
        system, _, user = prompt.partition("\n\n## ")  # the system message is one unit
        return [system, *user.split("\n\n")]

    shares = []
    for before, after in zip(prompts, prompts[1:]):
        known = set(units(before))
        reused = sum(len(u) + 2 for u in units(after) if u in known)
        shares.append(min(reused / max(len(after), 1), 1.0))
    return round(statistics.mean(shares), 3) if shares else 1.0


def build_times(messages: int, repeats: int = 40) -> list[float]:
    """Writer prompt build time with `messages` live whiteboard messages.

    Steady state of a long run: the Writer has read its inbox, and a few messages
    arrive between two of its prompts. Timed: the turn's view of the board (inbox,
    unread) plus the whole prompt build.
    """
    sim = Simulation("layered")

    def publish(i: int) -> None:
        sim.publish("searcher", MsgType.CONCLUSION, f"Conclusion {i}: segment grew {i % 97}.{i % 10}% this year.",
                    refs=(f"S{i:08d}",), priority=Priority.P1, ttl=10**6)

    for i in range(messages):
        publish(i)
    role = next(r for r in sim.roles if r.name == "writer")
    sim.state["seen"] = {"writer": [m.msg_id for m in Turn(role=role, state=sim.state, ctx=sim.ctx).inbox]}
    times = []
    for n in range(repeats + 1):
        for i in range(3):
            publish(messages + 3 * n + i)
        start = time.perf_counter()
        turn = Turn(role=role, state=sim.state, ctx=sim.ctx)
        turn.build_prompt(TASKS["writer"], facts=[])
        elapsed = (time.perf_counter() - start) * 1000
        if n:  # the first build indexes the board once; later ones see only the new tail
            times.append(elapsed)
    return sorted(times)


def run(rounds: int, window: int = WINDOW) -> dict[str, object]:
    results: dict[str, object] = {"rounds": rounds, "window": window}
    per_round: dict[str, list[int]] = {}
    sims = {}
    for strategy in ("naive", "layered"):
        sim = Simulation(strategy, window)
        per_round[strategy] = [sum(sim.play_round().values()) for _ in range(rounds)]
        sims[strategy] = sim
    naive, layered = sum(per_round["naive"]), sum(per_round["layered"])
    tail = per_round["layered"][3:]
    slope = statistics.linear_regression(range(len(tail)), tail).slope if len(tail) >= 2 else 0.0
    role_budgets = sum(min(r.budget_tokens, window) for r in sims["layered"].roles)
    planted_numbers = [planted(r, k) for r in range(1, rounds + 1) for k in range(2)]
    recall = {}
    for strategy, sim in sims.items():
        final = sim.prompts["writer"][-1]
        recall[strategy] = round(sum(n in final for n in planted_numbers) / len(planted_numbers), 3)
    small, large = build_times(1_000), build_times(10_000)
    results.update({
        "naive_prompt_tokens": naive, "layered_prompt_tokens": layered, "ratio": round(layered / naive, 4),
        "naive_last_round_tokens": per_round["naive"][-1], "layered_last_round_tokens": per_round["layered"][-1],
        "per_round_slope": round(slope, 1), "per_round_slope_pct_of_budget": round(100 * slope / role_budgets, 3),
        "fact_recall": recall["layered"], "naive_fact_recall": recall["naive"],
        "naive_window_overflow": sims["naive"].overflowed,
        "build_ms_p50": round(large[len(large) // 2], 2), "build_ms_p95": round(large[int(len(large) * 0.95)], 2),
        "build_ms_p50_1k_messages": round(small[len(small) // 2], 2),
        "build_10x_history_ratio": round(large[len(large) // 2] / small[len(small) // 2], 2),
        "stable_prefix_share": {r: prefix_share(sims["layered"].prompts[r]) for r in ROLES},
        "reusable_share_upper_bound": {r: reusable_share(sims["layered"].prompts[r]) for r in ROLES},
        "system_prefix_identical": all(len(set(sims["layered"].systems[r])) == 1 for r in ROLES),
    })
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, action="append", help="rounds (repeatable; default 10 and 30)")
    parser.add_argument("--window", type=int, default=WINDOW, help="model context window in tokens")
    args = parser.parse_args(argv)
    for rounds in args.rounds or [10, 30]:
        print(json.dumps(run(rounds, args.window)))


if __name__ == "__main__":
    main()
