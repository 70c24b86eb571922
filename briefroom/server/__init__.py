"""Serving briefroom: the research graph for the LangGraph API server (`langgraph_app.py`)."""
