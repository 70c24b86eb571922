"""`briefroom eval`: a suite of scenarios, run with any model, scored against answer keys."""
