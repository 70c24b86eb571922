"""The report: the Writer's structured draft, its Markdown form, and the Critic's checks."""
