"""Old path of the answer's rendering, kept for :mod:`ragspine.demo.answers` until it imports
:mod:`ragspine.agent.render`; ``ragspine ask`` itself is :mod:`ragspine.cli.agent`."""

from ragspine.agent.render import print_answer, source_line

__all__ = ["print_answer", "source_line"]
