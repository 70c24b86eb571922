"""Documents on disk -> chunks -> embeddings -> a chromadb index the Searcher queries."""
