"""The builder counts each piece once; the pieces must add up to the real prompt."""

from hypothesis import given, settings
from hypothesis import strategies as st

from briefroom.protocol.budget import TokenCounter
from briefroom.protocol.messages import Priority
from briefroom.protocol.prompt_assembly import ContextBuilder, Item, Section, mark_data

COUNTER = TokenCounter()
# Text shaped like what prompts hold: prose, numbers, JSON, markup, odd whitespace at the edges.
fragment = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(["revenue grew 12.5%", "{\"a\": [1, 2]}", "</data>", "  indented", "\n\nleading",
                     "trailing\n", "'s", "\t", "émigré 東京", "## heading", "x\r\n"]),
)
item_text = st.lists(fragment, min_size=1, max_size=4).map("".join)
wrapped = st.tuples(item_text, st.booleans()).map(lambda pair: mark_data("message", pair[0]) if pair[1] else pair[0])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(wrapped, max_size=4), min_size=1, max_size=4), item_text)
def test_section_counts_add_up_to_the_whole_prompt(sections, task):
    dynamic = [Section(f"s{i}", f"## Section {i}", [Item(f"k{i}-{j}", text, Priority.P2, j) for j, text in
                                                     enumerate(texts)]) for i, texts in enumerate(sections)]
    stable = [Section("role", "## Role", [Item("role", "You are a test role.", Priority.P0)])]
    built = ContextBuilder(COUNTER, 100_000).build(stable, dynamic, Section("task", "## Task",
                                                                             [Item("task", task, Priority.P0)]))
    system, user = (str(m.content) for m in built.messages)
    assert built.total_tokens == COUNTER.count(system) + COUNTER.count(user)
