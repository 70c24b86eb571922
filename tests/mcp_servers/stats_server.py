"""A small MCP server the tests start: `lookup_statistic` over a fictional dataset.

    python tests/mcp_servers/stats_server.py                  # stdio
    python tests/mcp_servers/stats_server.py --http PORT      # streamable HTTP on 127.0.0.1

Norland and its figures are made up, so a report that states them can only have read
them from this server (no corpus document and no model knows them).
"""

from __future__ import annotations

import re
import sys

from mcp.server.mcpserver import MCPServer

DATASET = [
    ("Norland cloudberry exports", "Norland exported 4,812 tonnes of cloudberries in 2023, up from 3,950 tonnes "
                                   "in 2022 (Norland Bureau of Statistics, table CB-7)."),
    ("Norland cloudberry farms", "Norland counted 1,204 registered cloudberry farms in 2023."),
    ("Vesterholm ferry passengers", "The Vesterholm ferry carried 218,400 passengers in 2023."),
]

server = MCPServer("stats", log_level="WARNING")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower())}


@server.tool()
def lookup_statistic(query: str) -> str:
    """Look up official statistics of Norland and Vesterholm by topic, e.g. 'cloudberry exports'."""
    asked = _words(query)
    ranked = sorted(DATASET, key=lambda row: -len(asked & _words(row[0] + " " + row[1])))
    found = [f"{topic}: {text}" for topic, text in ranked if asked & _words(topic + " " + text)][:2]
    return "\n".join(found) or f"No statistic matches {query!r}."


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
