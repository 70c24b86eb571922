"""A scripted chat model per role, for graph tests (never for users).

Each step is an AIMessage, a dict/pydantic model (returned as JSON content), or a
callable (messages, kwargs) -> AIMessage. Supports `bind_tools` and `response_format`
through `bind`, records every call, and `assert_done()` fails if steps are left over.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, PrivateAttr


class ScriptedChatModel(BaseChatModel):
    name: str = "scripted"
    _steps: list[Any] = PrivateAttr(default_factory=list)
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def __init__(self, steps: list[Any], **kwargs: Any):
        super().__init__(**kwargs)
        self._steps = list(steps)
        self._calls = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self._calls

    def bind_tools(self, tools: list[Any], **kwargs: Any):  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def with_structured_output(self, schema: Any, **kwargs: Any):  # type: ignore[override]
        """JSON-mode structured output: the scripted reply is parsed into `schema`."""
        from langchain_core.runnables import RunnableLambda

        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        json_schema = schema.model_json_schema() if is_model else schema

        def parse(message: AIMessage) -> Any:
            data = json.loads(message.content)
            return schema.model_validate(data) if is_model else data

        return self.bind(response_format={"type": "json_object", "schema": json_schema}) | RunnableLambda(parse)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if stop is not None:  # langchain hands `stop` apart from the other request fields
            kwargs = {**kwargs, "stop": stop}
        self._calls.append({"messages": messages, "kwargs": kwargs})
        if not self._steps:
            raise AssertionError(f"{self.name}: called more times than scripted ({len(self._calls)} calls)")
        step = self._steps.pop(0)
        if callable(step) and not isinstance(step, (AIMessage, BaseModel)):
            step = step(messages, kwargs)
        if isinstance(step, BaseModel) and not isinstance(step, AIMessage):
            step = AIMessage(content=step.model_dump_json())
        elif isinstance(step, dict):
            step = AIMessage(content=json.dumps(step))
        elif isinstance(step, str):
            step = AIMessage(content=step)
        return ChatResult(generations=[ChatGeneration(message=step)])

    def assert_done(self) -> None:
        if self._steps:
            raise AssertionError(f"{self.name}: {len(self._steps)} scripted step(s) left over")


class HashEmbedder:
    """Unit tests only: bag-of-words vectors (64 dims), so texts sharing words are near
    each other; `name` lets two tests keep their stores apart."""

    def __init__(self, name: str = "hash-test"):
        self.name = name

    def embed(self, texts):
        out = []
        for text in texts:
            vec = [0.0] * 64
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out
