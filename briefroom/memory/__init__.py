"""Long-term memory (vectors, facts, skills behind write gates).

Not built yet: the walking skeleton has no cross-run memory. The data directory
(`--data-dir`) that will hold these stores already holds the corpus indexes.
"""
