"""The LangGraph side: typed state, reducers, routing and graph assembly."""
