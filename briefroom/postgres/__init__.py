"""The PostgreSQL (pgvector) backends: checkpoints, long-term memory and the corpus index,
each implementing its layer's port, and a throwaway server for tests and benchmarks.
The run reaches them only through `stores.py`, which picks a backend from the settings.
"""
