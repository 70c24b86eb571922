"""ContextProtocol: briefroom's context engineering for any tool-calling agent.

briefroom's four roles are one way to use its protocol layer; this package is the other:
one object that gives a LangGraph graph, a LangChain agent or a plain loop the same
machinery without the Planner, Searcher, Critic or Writer, and without the bus.

Five operations, each a thin layer over what briefroom already uses in its runs:

1. `prepare_prompt`: a task, a goal and prioritised items (messages, passages, facts,
   notes, memories, earlier tool results) -> chat messages inside a token budget, built
   by `protocol/prompt_assembly.ContextBuilder` (P0 never cut, P1 compressed before it
   is dropped, every decision recorded), untrusted text in sealed data blocks, secrets
   redacted, the whole prompt checked for secrets before it is returned.
2. `handle_tool_result` / `call_tool`: raw tool output -> what a model may see:
   redacted (`protocol/redaction.py`), offloaded to a content-addressed artifact when
   large (`protocol/artifacts.py`), trimmed to a token budget and wrapped as data
   (`protocol/envelope.py`), and judged for text that gives orders
   (`protocol/untrusted.py`, `protocol/injection.py`), with a warning when it does.
3. `query_memory` and 4. `persist_memory`: the long-term memory stores
   (`memory/store.py`) behind the write gates (`memory/gates.py`); a refused write comes
   back refused, with the gate's reason, and nothing of it is stored.
5. Task-state envelopes (`protocol/payloads.Instruction`): tasks, sub-tasks (lineage
   extended, version 1), re-issues (version + 1), artifact references and the results
   recorded against each version, kept in this object and in its data directory.

It does not plan, search, check claims against sources or decide when a task is done:
those are the roles' work, and an agent using this package does its own.

One module per part: `prompts.py` (1), `tool_results.py` (2), `memory.py` (3, 4),
`tasks.py` (5), and `facade.py`, the `ContextProtocol` that holds their state.
"""

from briefroom.context_protocol.facade import ContextProtocol
from briefroom.context_protocol.memory import MemoryCandidate, MemoryHit, MemoryWriteResult
from briefroom.context_protocol.prompts import INSTRUCTIONS as INSTRUCTIONS
from briefroom.context_protocol.prompts import SHARES as SHARES
from briefroom.context_protocol.prompts import ContextItem, Goal, PreparedPrompt, PromptDecision
from briefroom.context_protocol.tasks import TaskResult, TaskState, UnknownTask
from briefroom.context_protocol.tool_results import InjectionFlag, ToolResultView

__all__ = ["ContextItem", "ContextProtocol", "Goal", "InjectionFlag", "MemoryCandidate", "MemoryHit",
           "MemoryWriteResult", "PreparedPrompt", "PromptDecision", "TaskResult", "TaskState", "ToolResultView",
           "UnknownTask"]
