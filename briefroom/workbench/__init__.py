"""The workbench: `briefroom ui`, a local page to start runs, review their plans, follow
them live, read their reports with the passages citations rest on, compare runs, and
browse memory and the job queue. Built on the CLI's own composition (`run.execute_run`).

`guard.py` says what is refused; `api.py` answers requests (apart from any socket);
`live.py` runs runs in a worker thread; `tail.py` follows run logs; `panels.py` reads
runs, memory and jobs; `http.py` serves it all; `static/` is the page.
"""
