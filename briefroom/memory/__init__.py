"""Long-term memory: what the team verified, kept across runs, scoped by namespace.

Three zones behind small protocols (`zones.py`): vector memories ("a similar
question was answered with these sources"), an exact fact table, and a skill
library. Text lives in one SQLite file where deleting is exact; chromadb holds only
ids, vectors and namespace fields, so `forget` leaves no plaintext behind. Nothing
is written without passing the write gates (`gates.py`), and every read is filtered
by namespace in the store's query, never by the prompt.
"""
