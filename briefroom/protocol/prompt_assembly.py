"""ContextBuilder: compiles a role's prompt from the layered state, inside a budget.

Order is fixed. The stable prefix (role instructions, charter, tool definitions,
output format) is the system message and is byte-identical across a role's calls, so
provider prompt caches hit. Dynamic layers follow in the order the caller gives (the
layered strategy puts the most stable first, so consecutive prompts share a long
prefix); sections render items oldest first, or best-ranked last when `by_rank`; the
current task is last, where models attend most.

Budgeting by priority:
- P0 (charter, task, instructions, unresolved critiques) is never cut; if P0 alone
  does not fit, that is a FatalBreaker with the numbers, never silent truncation.
- The rest is split across dynamic sections by configurable shares (with floors);
  within a section items are ranked by priority, relevance to the task and recency.
- A P1 item that does not fit is compressed (its structured/short form) before it is
  dropped; P2/P3 items are dropped. Every decision is recorded in BuildStats, so
  included + compressed + dropped = candidates for every call.

Dependency closure: an item may name the items it rests on (`Item.needs`: their keys,
or a name several items answer to through `Item.provides`, met by any one of them).
An item is never shown without what it needs: keeping it keeps its needs (they are
chosen together and paid for together), and when they do not fit, or were dropped,
or are not in the prompt at all, it is dropped too, with "needs X" as the reason. A
conclusion keeps the instruction it answers and a passage it rests on; a tool result
its call. The needs of a P0 item are kept like P0.

Untrusted text enters as data blocks (`protocol/data_blocks.py`; re-exported here, since
whoever builds a prompt needs them beside the builder).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from briefroom.errors import MustKeepOverBudget
from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.data_blocks import DATA_BLOCK as DATA_BLOCK
from briefroom.protocol.data_blocks import DATA_NOTICE as DATA_NOTICE
from briefroom.protocol.data_blocks import mark_data as mark_data
from briefroom.protocol.data_blocks import neutralize as neutralize
from briefroom.protocol.messages import Priority

# Share of the optional budget each dynamic section may fill first; leftovers are
# shared out afterwards, so an empty section costs nothing.
DEFAULT_SHARES = {"worktable": 0.05, "memory": 0.10, "summaries": 0.10, "sources": 0.30, "whiteboard": 0.30,
                  "facts": 0.15}
DEFAULT_FLOORS = {"whiteboard": 150, "facts": 150}
SEPARATOR = "\n\n"  # between items and between sections


@dataclass
class Item:
    """One unit a section may keep, compress or drop (a message, a fact, a passage)."""

    key: str
    text: str
    priority: Priority = Priority.P2
    order: int = 0  # recency: higher = newer
    relevance: float = 0.0  # 0..1, overlap with the current task
    compressed: str | None = None  # shorter form tried before a P1 item is dropped
    # Names of the items this one rests on: an item key, or a name from other items'
    # `provides` (then any one of those items will do). See the module docstring.
    needs: tuple[str, ...] = ()
    # Further names a need may use for this item, e.g. "source:S1234abcd" for a passage.
    provides: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A leading newline would merge with the separator before it into other tokens;
        # without it, per-piece token counts add up exactly to the prompt's count.
        self.text = self.text.lstrip()
        if self.compressed is not None:
            self.compressed = self.compressed.lstrip()


@dataclass
class Section:
    name: str
    title: str
    items: list[Item]
    by_rank: bool = False  # render best-ranked last (nearest the task) instead of oldest first


@dataclass
class Decision:
    section: str
    key: str
    action: str  # included | compressed | dropped
    reason: str
    tokens: int = 0
    items: int = 1  # a bulk decision (e.g. "9,800 older messages") covers several items


@dataclass
class BuildStats:
    """Every candidate item's fate, with its reason."""

    decisions: list[Decision] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(d.items for d in self.decisions if d.action == action)

    @property
    def candidates(self) -> int:
        return sum(d.items for d in self.decisions)

    def summary(self) -> dict[str, object]:
        return {"candidates": self.candidates, "included": self.count("included"),
                "compressed": self.count("compressed"), "dropped": self.count("dropped"),
                "changes": [d.__dict__ for d in self.decisions if d.action != "included"]}


@dataclass
class BuiltPrompt:
    messages: list[BaseMessage]
    section_tokens: dict[str, int]
    total_tokens: int
    budget: int
    prefix_hash: str
    stats: BuildStats
    framing_tokens: int = 0  # the chat template's and the tool definitions' tokens, counted apart

    @property
    def dropped(self) -> list[Decision]:
        return [d for d in self.stats.decisions if d.action == "dropped"]

    @property
    def use_pct(self) -> float:
        return round(100.0 * self.total_tokens / self.budget, 1) if self.budget else 0.0


def _rank_key(item: Item, recency: float) -> tuple[str, float]:
    return (item.priority.value, -(2.0 * item.relevance + recency))


class ContextBuilder:
    def __init__(self, counter: TokenCounter, budget: int, shares: dict[str, float] | None = None,
                 floors: dict[str, int] | None = None):
        self.counter = counter
        self.budget = budget
        self.shares = shares or DEFAULT_SHARES
        self.floors = floors or DEFAULT_FLOORS

    def build(self, stable: list[Section], dynamic: list[Section], task: Section,
              prefiltered: list[Decision] | None = None) -> BuiltPrompt:
        """`prefiltered`: bulk decisions the caller already made (recorded, not re-ranked).

        The steps: drop empty and unmet items, rank each section, pin what must be kept,
        fill each section's share, give the spare budget to the leftovers, render."""
        stats = BuildStats(list(prefiltered or []))
        stable, dynamic, tasks = (self._drop_empty(group, stats) for group in (stable, dynamic, [task]))
        graph = _Needs([*stable, *dynamic, *tasks], stats)  # drops (and records) items whose needs are absent
        stable, dynamic, tasks = (graph.present(group) for group in (stable, dynamic, tasks))
        sections = [*stable, *dynamic, *tasks]
        ranked = _ranked(sections)
        graph.rank(ranked)
        plan = _Selection(self.counter, graph, stats)
        fixed = plan.pin_must_keep(sections)
        fixed += sum(self.counter.count(s.title + "\n") for s in sections if s.items)
        if fixed > self.budget:
            raise MustKeepOverBudget(f"must-keep context (charter, task, instructions, open critiques) needs {fixed} "
                               f"tokens but the role's input budget is {self.budget}; raise the budget or shorten them")
        pending, left = self._fill_shares(plan, sections, ranked, self.budget - fixed)
        plan.fill_spare(pending, max(left, 0))
        return self._render(stable, [*dynamic, *tasks], plan.chosen, stats, ranked, graph, plan.pinned)

    def _fill_shares(self, plan: _Selection, sections: list[Section], ranked: dict[str, list[Item]],
                     remaining: int) -> tuple[list[tuple[str, Item]], int]:
        """Pass 1: each section fills its own share (at least its floor) in rank order.
        Returns what did not fit, in the order met, and the budget left."""
        active = [s for s in sections if ranked[s.name]]
        share_total = sum(self.shares.get(s.name, 0.05) for s in active) or 1.0
        pending: list[tuple[str, Item]] = []
        left = remaining
        for section in active:
            allowance = min(max(int(remaining * self.shares.get(section.name, 0.05) / share_total),
                                self.floors.get(section.name, 0)), left)
            for it in ranked[section.name]:
                if id(it) in plan.chosen:
                    continue  # already kept as what another item needs
                deps = plan.graph.needed(it, plan.chosen)
                cost = plan.count(it.text) + sum(plan.count(d.text) for d in deps)
                if cost <= allowance:
                    plan.chosen[id(it)] = it.text
                    allowance -= cost
                    left -= cost
                    plan.stats.decisions.append(Decision(section.name, it.key, "included", it.priority.value,
                                                         plan.count(it.text)))
                    plan.keep_needs(it, deps)
                else:
                    pending.append((section.name, it))
        return pending, left

    @staticmethod
    def _drop_empty(sections: list[Section], stats: BuildStats) -> list[Section]:
        """Items with no text say nothing and would only add separators."""
        kept = []
        for section in sections:
            for it in section.items:
                if not it.text:
                    stats.decisions.append(Decision(section.name, it.key, "dropped", "empty", 0))
            kept.append(Section(section.name, section.title, [it for it in section.items if it.text],
                                section.by_rank))
        return kept

    def _render(self, stable: list[Section], rest: list[Section], chosen: dict[int, str], stats: BuildStats,
                ranked: dict[str, list[Item]], graph: "_Needs", pinned: set[int]) -> BuiltPrompt:
        def render(sections: list[Section], tokens: dict[str, int]) -> str:
            # The text is cut into pieces that each end in a newline (title line, item plus
            # separator). Token merges never cross a newline followed by non-space text, so
            # the pieces' counts add up to the whole text's count exactly (tested), and each
            # piece is encoded once in its life: a build encodes only what is new.
            pieces: list[tuple[str, str]] = []
            for section in sections:
                items = [it for it in section.items if id(it) in chosen]
                if section.by_rank:  # worst first, best last: nearest the task
                    order = {id(it): i for i, it in enumerate(ranked[section.name])}
                    items.sort(key=lambda it: (it.priority != Priority.P0, -order.get(id(it), -1)))
                tokens.setdefault(section.name, 0)  # every section is reported, empty ones as 0
                if not items:
                    continue
                if pieces:
                    pieces[-1] = (pieces[-1][0], pieces[-1][1] + SEPARATOR)
                pieces.append((section.name, section.title + "\n"))
                for i, it in enumerate(items):
                    if i:
                        pieces[-1] = (pieces[-1][0], pieces[-1][1] + SEPARATOR)
                    pieces.append((section.name, chosen[id(it)]))
            for name, text in pieces:
                tokens[name] += self.counter.count(text)
            return "".join(text for _, text in pieces)

        # The plan counted every piece with its separator, so the rendered prompt almost
        # never costs more; where the last piece of a message, without its separator,
        # tokenizes worse (a BPE merge that needed the newlines), shed the weakest items.
        # What is shed takes what needs it along (never shown without what it rests on).
        sheddable = [(name, it) for name in reversed(list(ranked)) for it in reversed(ranked[name])
                     if id(it) in chosen and id(it) not in pinned]
        sheddable.sort(key=lambda pair: pair[1].priority.value, reverse=True)

        def shed(name: str, item: Item, reason: str) -> None:
            if id(item) not in chosen:
                return
            del chosen[id(item)]
            for d in stats.decisions:
                if d.section == name and d.key == item.key:
                    d.action, d.reason, d.tokens = "dropped", reason, 0
            for dependent in graph.dependents(item, chosen):
                shed(graph.section_of(dependent), dependent, f"needs {item.key}, which was dropped")

        while True:
            section_tokens: dict[str, int] = {}
            system_text = render(stable, section_tokens)
            user_text = render(rest, section_tokens)
            total = sum(section_tokens.values())
            sheddable = [(name, it) for name, it in sheddable if id(it) in chosen]
            if total <= self.budget or not sheddable:
                break
            name, item = sheddable.pop(0)
            shed(name, item, "over budget after assembly")
        if total > self.budget:
            raise MustKeepOverBudget(f"must-keep context needs {total} tokens but the role's input budget is {self.budget}")
        return BuiltPrompt(messages=[SystemMessage(content=system_text), HumanMessage(content=user_text)],
                           section_tokens=section_tokens, total_tokens=total, budget=self.budget,
                           prefix_hash=hashlib.sha256(system_text.encode()).hexdigest()[:16], stats=stats)


def _short(item: Item) -> str:
    """The cheapest form an item may be shown in when it is kept for another's sake."""
    return item.compressed if item.priority == Priority.P1 and item.compressed else item.text


def _ranked(sections: list[Section]) -> dict[str, list[Item]]:
    """Each section's optional items, best first: priority, then relevance and recency."""
    ranked: dict[str, list[Item]] = {}
    for section in sections:
        optional = [it for it in section.items if it.priority != Priority.P0]
        by_age = sorted(optional, key=lambda it: it.order)
        recency = {id(it): (i / max(len(by_age) - 1, 1)) for i, it in enumerate(by_age)}
        ranked[section.name] = sorted(optional, key=lambda it: _rank_key(it, recency[id(it)]))
    return ranked


class _Selection:
    """One build's choices: the text each kept item is shown in, what is pinned, every decision."""

    def __init__(self, counter: TokenCounter, graph: _Needs, stats: BuildStats) -> None:
        self.counter = counter
        self.graph = graph
        self.stats = stats
        self.chosen: dict[int, str] = {}  # id(item) -> text to render
        self.pinned: set[int] = set()  # P0 items and what they need: never cut

    def count(self, text: str) -> int:
        # An item costs what its piece of the rendered prompt costs (text + separator):
        # the same string `_render` counts, so each item is encoded once, not twice.
        return self.counter.count(text + SEPARATOR)

    def pin_must_keep(self, sections: list[Section]) -> int:
        """Keep every P0 item, then what each needs; return what the pinned items cost."""
        p0 = [(section, it) for section in sections for it in section.items if it.priority == Priority.P0]
        for section, it in p0:
            self.chosen[id(it)] = it.text
            self.pinned.add(id(it))
            self.stats.decisions.append(Decision(section.name, it.key, "included", "P0: never cut",
                                                 self.count(it.text)))
        for _, it in p0:
            for dep in self.graph.needed(it, self.chosen):
                self.chosen[id(dep)] = dep.text
                self.pinned.add(id(dep))
                self.stats.decisions.append(Decision(self.graph.section_of(dep), dep.key, "included",
                                                     f"{dep.priority.value}: needed by P0 {it.key}",
                                                     self.count(dep.text)))
        return sum(self.count(self.chosen[id(it)]) for s in sections for it in s.items if id(it) in self.pinned)

    def keep_needs(self, it: Item, deps: list[Item], short: bool = False) -> None:
        """Record the items kept because `it` needs them (paid for with it)."""
        for dep in deps:
            text = _short(dep) if short else dep.text
            self.chosen[id(dep)] = text
            action = "included" if text == dep.text else "compressed"
            self.stats.decisions.append(Decision(self.graph.section_of(dep), dep.key, action,
                                                 f"{dep.priority.value}, needed by {it.key}", self.count(text)))

    def fill_spare(self, pending: list[tuple[str, Item]], spare: int) -> None:
        """Pass 2: the leftovers, most important first, in what budget pass 1 left."""
        pending.sort(key=lambda pair: pair[1].priority.value)
        dropped: set[int] = set()
        for name, it in pending:
            if id(it) in self.chosen:
                continue  # kept meanwhile as what another item needs
            spare = self._place(name, it, spare, dropped)

    def _place(self, name: str, it: Item, spare: int, dropped: set[int]) -> int:
        """Keep `it` whole, with its needs shortened, or (P1) compressed, whichever fits
        first; else drop it, saying why. Returns the spare budget left."""
        deps = self.graph.closure(it, self.chosen, dropped)
        if deps is None:  # a need only dropped items could meet
            dropped.add(id(it))
            self.stats.decisions.append(Decision(name, it.key, "dropped",
                                                 f"needs {self.graph.unmet(it, self.chosen, dropped)}, "
                                                 "which was dropped", 0))
            return spare
        cost = self.count(it.text)
        short = self.count(it.compressed) if it.priority == Priority.P1 and it.compressed else None
        deps_short = sum(self.count(_short(d)) for d in deps)
        fit = next((o for o in self._options(it, deps, cost, short, deps_short) if o[1] + o[2] <= spare), None)
        if fit is not None:
            text, own, needed, short_needs = fit
            self.chosen[id(it)] = text
            self.stats.decisions.append(
                Decision(name, it.key, "included", f"{it.priority.value}, from spare budget", own)
                if text == it.text else
                Decision(name, it.key, "compressed", f"P1 over budget: {cost} tokens in full", own))
            self.keep_needs(it, deps, short=short_needs)
            return spare - (own + needed)
        dropped.add(id(it))
        alone = cost if short is None else min(cost, short)
        reason = (f"needs {', '.join(d.key for d in deps)} ({alone + deps_short} tokens with them, {spare} left)"
                  if deps and alone <= spare else f"{it.priority.value} over budget ({cost} tokens)")
        self.stats.decisions.append(Decision(name, it.key, "dropped", reason, 0))
        return spare

    def _options(self, it: Item, deps: list[Item], cost: int, short: int | None,
                 deps_short: int) -> list[tuple[str, int, int, bool]]:
        """(text, its tokens, its needs' tokens, needs shortened), cheapest last: the item
        and its needs in full, its needs shortened, then (P1) the item shortened too.
        Without needs this is the plain P1 rule."""
        if deps:
            deps_full = sum(self.count(d.text) for d in deps)
            options = [(it.text, cost, deps_full, False), (it.text, cost, deps_short, True)]
        else:
            options = [(it.text, cost, 0, False)]
        if short is not None and it.compressed is not None:
            options.append((it.compressed, short, deps_short, True))
        return options


class _Needs:
    """Who needs whom among one build's candidates (see `Item.needs`)."""

    def __init__(self, sections: list[Section], stats: BuildStats):
        self._names: dict[str, list[Item]] = {}
        self._section: dict[int, str] = {}
        self._rank: dict[int, tuple[str, int]] = {}
        self._dependents: dict[int, list[Item]] = {}
        self._absent: set[int] = set()
        items = [it for section in sections for it in section.items]
        for section in sections:
            for it in section.items:
                self._section[id(it)] = section.name
                for name in dict.fromkeys((it.key, *it.provides)):
                    self._names.setdefault(name, []).append(it)
        for it in items:
            for provider in {id(p): p for name in it.needs for p in self._names.get(name, [])}.values():
                self._dependents.setdefault(id(provider), []).append(it)
        changed = True
        while changed:  # an item dropped here may be all that another one needed
            changed = False
            for it in items:
                if id(it) in self._absent:
                    continue
                missing = next((n for n in it.needs if not self._providers(n, self._absent)), None)
                if missing is None:
                    continue
                if it.priority == Priority.P0:
                    raise ValueError(f"must-keep item {it.key!r} needs {missing!r}, which is not in the prompt; "
                                     "a P0 item is never shown without what it rests on")
                self._absent.add(id(it))
                stats.decisions.append(Decision(self.section_of(it), it.key, "dropped",
                                                f"needs {missing}, which is not in this prompt", 0))
                changed = True

    def section_of(self, item: Item) -> str:
        return self._section[id(item)]

    def present(self, sections: list[Section]) -> list[Section]:
        """The sections without the items dropped for needs absent from the prompt."""
        return [Section(s.name, s.title, [it for it in s.items if id(it) not in self._absent], s.by_rank)
                for s in sections]

    def _providers(self, name: str, dropped: set[int]) -> list[Item]:
        return [p for p in self._names.get(name, []) if id(p) not in self._absent and id(p) not in dropped]

    def rank(self, ranked: dict[str, list[Item]]) -> None:
        """Best first within each section; a need several items meet takes the best."""
        for items in ranked.values():
            for i, it in enumerate(items):
                self._rank[id(it)] = (it.priority.value, i)

    def needed(self, item: Item, chosen: dict[int, str]) -> list[Item]:
        """What keeping `item` adds while nothing has been dropped (every need is met)."""
        found = self.closure(item, chosen, set())
        assert found is not None, "items with unmet needs are removed before any is chosen"
        return found

    def closure(self, item: Item, chosen: dict[int, str], dropped: set[int]) -> list[Item] | None:
        """What keeping `item` would add: its needs, theirs, and so on, minus what is
        already kept; None when a need is met only by dropped items."""
        return self._walk(item, chosen, dropped, [])

    def unmet(self, item: Item, chosen: dict[int, str], dropped: set[int]) -> str:
        """The first need of `item` (or of what it needs) that nothing left can meet."""
        missing: list[str] = []
        self._walk(item, chosen, dropped, missing)
        return missing[0] if missing else "?"

    def _walk(self, item: Item, chosen: dict[int, str], dropped: set[int], missing: list[str]) -> list[Item] | None:
        added: list[Item] = []
        seen = {id(item)}
        stack = [item]
        while stack:
            current = stack.pop()
            for name in current.needs:
                providers = self._providers(name, dropped)
                if not providers:
                    missing.append(name)
                    return None
                if any(id(p) in chosen or id(p) in seen for p in providers):
                    continue
                best = min(providers, key=lambda p: self._rank.get(id(p), ("P0", -1)))
                seen.add(id(best))
                added.append(best)
                stack.append(best)
        return added

    def dependents(self, item: Item, chosen: dict[int, str]) -> list[Item]:
        """Kept items that need `item` and have no other kept item meeting that need."""
        out = []
        for dependent in self._dependents.get(id(item), []):
            if id(dependent) not in chosen:
                continue
            for name in dependent.needs:
                providers = self._names.get(name, [])
                if any(p is item for p in providers) and \
                        not any(id(p) in chosen and p is not item for p in providers):
                    out.append(dependent)
                    break
        return out
