"""One structured chat call to a local llama.cpp server, as a run makes it: the schema
constrained and bounded as `llm.ModelHandle` sends it, temperature 0, the run's repeat
penalty and output cap. The prompt benches share it."""

from __future__ import annotations

import json
import time
import urllib.request

from briefroom.llm import GRAMMAR_STRING_CHARS, REPEAT_PENALTY, bounded_strings


def structured_reply(base_url: str, messages: list[dict[str, str]], schema: dict) -> tuple[str, float]:
    """The reply's text and the seconds it took."""
    body = {"messages": messages, "temperature": 0.0, "max_tokens": 1024, "repeat_penalty": REPEAT_PENALTY,
            "response_format": {"type": "json_object", "schema": bounded_strings(schema, GRAMMAR_STRING_CHARS)}}
    request = urllib.request.Request(base_url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=None) as response:
        reply = json.load(response)["choices"][0]["message"]["content"]
    return reply, round(time.monotonic() - started, 1)
