"""One research run, start to finish, and its resumption: the library entry points.

`execute_run` (execute.py) is the one composition root: the CLI, the job worker,
replays and the served graph all build and finish their runs through it, in named steps
(team -> checkpointed thread -> log and charter -> corpus index -> memory -> models ->
run context -> graph -> finish).
Whatever happens, the run directory keeps what was done: `run.json` says how the run
stands, the run log is flushed per line, and the LangGraph checkpoint (durability
"sync") holds the state after every node, with the ledger of what the run did outside
it (log lines, tokens, model replies). `resume_research` continues from there; work
after the graph (report files, memory gates) is idempotent, so it may run twice.

The modules, in the order a run meets them:

- request.py: what a caller gives a run and gets back (`ResearchRequest`, `RunResult`,
  `Progress`, `RunHooks`) and the question's checks (`clean_question`);
- launch.py: the run directory and run.json before anything is built (`new_run`,
  `resumed_run`, `RunLaunch`);
- locks.py: one process per run directory and per data directory (`data_dir_in_use`);
- thread.py: the team, the graph on its checkpointed thread, the log and the charter;
- opening.py: the log's first lines, what memory gives the run, the graph's input;
- model_pool.py: a model handle per role and the token counter;
- compose.py: the stores, models, tools and run context, composed (`RunParts`);
- drive.py: streaming the graph, pausing for a round or a question;
- finish.py: the report files, memory gates and a recording's scenario;
- execute.py: the composition root (`execute_run`) and how a run's ending is recorded.

Callers import from here; the modules are the run's own seams.
"""

from briefroom.run.compose import TRANSCRIPT_FILE, RunParts
from briefroom.run.execute import execute_run, resume_research, run_research
from briefroom.run.launch import RunLaunch, new_run, resumed_run
from briefroom.run.locks import DATA_DIR_LOCK, data_dir_in_use
from briefroom.run.opening import MEMORY_ITEMS_FILE, initial_state
from briefroom.run.request import (
    MAX_QUESTION_CHARS,
    Progress,
    ProgressFn,
    ResearchRequest,
    RunHooks,
    RunResult,
    UpdateFn,
    clean_question,
    default_run_dir,
    slugify,
)
from briefroom.run.thread import make_charter

__all__ = [
    "DATA_DIR_LOCK",
    "MAX_QUESTION_CHARS",
    "MEMORY_ITEMS_FILE",
    "TRANSCRIPT_FILE",
    "Progress",
    "ProgressFn",
    "ResearchRequest",
    "RunHooks",
    "RunLaunch",
    "RunParts",
    "RunResult",
    "UpdateFn",
    "clean_question",
    "data_dir_in_use",
    "default_run_dir",
    "execute_run",
    "initial_state",
    "make_charter",
    "new_run",
    "resume_research",
    "resumed_run",
    "run_research",
    "slugify",
]
