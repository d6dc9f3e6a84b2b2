"""Post-retrieval: the ``Postprocessor`` role and :func:`make_postprocessor` (the seed's path)."""

from ragspine.retrieval.postprocess.base import Postprocessor, PostprocessorChain, make_postprocessor

__all__ = ["Postprocessor", "PostprocessorChain", "make_postprocessor"]
