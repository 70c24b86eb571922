"""Messages, routing, tokens and prompt assembly: the protocol every role speaks."""
