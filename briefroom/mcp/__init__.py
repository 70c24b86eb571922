"""MCP tools: servers named in a config file (`--mcp-config`), their tools offered to
the roles the file names (the Searcher by default), each call run by `run_tool` and
its result passed through the envelope like a built-in tool's (see `mcp/tools.py`)."""
