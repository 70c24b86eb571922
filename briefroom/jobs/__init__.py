"""Many research jobs at once, on procrastinate (a maintained Postgres task queue).

`briefroom submit` puts a research job in the queue, after the checks `briefroom
research` makes (the question, the corpus, the model); `briefroom worker` runs N worker
processes on any machine that reaches the database and the runs folder; `briefroom jobs
list|show|cancel` reads and steers the queue. A job's run directory is `<runs>/job-<id>`
and the graph's thread id is its name, so the job id names the thread.

One job, one owner. The worker running a job holds its *lease*: a PostgreSQL advisory
lock on a connection of its own, which the server frees the moment that connection goes
(the process was killed, its machine lost, the database restarted) and never while the
process lives, paused or not. A job whose worker stopped sending heartbeats goes back
to the queue only if its lease is free (`job_workers.py`, `_requeue_if_free`), so a worker paused past
the stall timeout keeps its job; and only the lease holder writes the job's final
status (`_FencedJobManager`), so a worker that lost its lease cannot overwrite the
status of the worker that took the job over. The worker that takes a job up resumes
the run from its last checkpoint (`resume_research`).

Every way a job ends is written to run.json before the queue hears of it, and the two
agree (`agrees`): done/succeeded, failed/failed (with the reason, kept for `jobs show`
even when the run never started), cancelled/cancelled, interrupted/todo (re-queued: the
worker was stopped, or the database went away under it). A worker outlives a database
restart: it says so in one line, waits for the database, and starts again.

A job submitted with `--review-plan` or `--clarify` pauses at its question *waiting*
for `briefroom jobs answer` (waiting/paused), then resumes on any worker
(`job_review.py`).
"""

from briefroom.jobs.app import queue
from briefroom.jobs.base import (
    HEARTBEAT_S,
    OUTCOMES_TABLE,
    QUEUE,
    RECONNECT_EVERY_S,
    RUN_LOCK_WAIT_S,
    STALLED_AFTER_S,
    SWEEP_EVERY_S,
    TASK,
    JobInterruptedError,
    run_dir_of,
)
from briefroom.jobs.lease import JobLease, LeaseHeldError
from briefroom.jobs.steering import JobRow, agrees, answer, cancel_job, list_jobs, show_job, wait_until
from briefroom.jobs.submitting import check_job, submit

__all__ = ["HEARTBEAT_S", "OUTCOMES_TABLE", "QUEUE", "RECONNECT_EVERY_S", "RUN_LOCK_WAIT_S", "STALLED_AFTER_S",
           "SWEEP_EVERY_S", "TASK", "JobInterruptedError", "JobLease", "JobRow", "LeaseHeldError", "agrees", "answer",
           "cancel_job", "check_job", "list_jobs", "queue", "run_dir_of", "show_job", "submit", "wait_until"]
