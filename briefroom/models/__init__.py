"""Chat-model providers behind the one seam in `briefroom.llm`."""
