"""The run's layered state (`schema.AgentState`) and the reducers that merge its updates.

Below the agents and the graph: a role reads and updates this state, the graph runs the
roles over it. Nothing here imports LangGraph; LangGraph reads the reducers from the
state's annotations.
"""
