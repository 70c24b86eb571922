"""briefroom: a team of LLM agents that writes cited research reports.

The interesting part is context engineering: every agent's prompt is compiled from a
typed, layered state (charter, worktables, whiteboard, facts) inside a token budget.
"""

__version__ = "0.1.0"
