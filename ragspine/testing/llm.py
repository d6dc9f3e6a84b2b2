"""``ScriptedLLMProvider``: an :class:`~ragspine.llm.base.LLMProvider` test double.

It answers from a script — a fixed text, a function of the prompt, or an error to raise —
and records every conversation it was sent, so a test can assert what reached the model
(e.g. that no RESTRICTED text ever did)::

    provider = ScriptedLLMProvider('["support"]')
    ...
    assert all("board memo" not in p for p in provider.prompts)
"""

from __future__ import annotations

from typing import Any, Callable


class ScriptedLLMProvider:
    """See the module docstring. ``answer`` is a text or ``prompt -> text``; ``error``, when
    set, is raised by every call (after recording it)."""

    def __init__(self, answer: str | Callable[[str], str] = "", error: BaseException | None = None) -> None:
        self.answer = answer
        self.error = error
        self.messages: list[list[dict[str, str]]] = []

    @property
    def prompts(self) -> list[str]:
        """Every call's messages joined into one text, in call order."""
        return ["\n".join(m.get("content", "") for m in messages) for messages in self.messages]

    @property
    def calls(self) -> int:
        return len(self.messages)

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        self.messages.append([dict(m) for m in messages])
        if self.error is not None:
            raise self.error
        return self.answer(self.prompts[-1]) if callable(self.answer) else self.answer
