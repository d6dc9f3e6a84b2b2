"""The visual seam (ColPali-style page-as-image retrieval): opt-in, hints only (see :mod:`.base`)."""

from ragspine.retrieval.visual.base import VisualEmbedder, VisualHint, make_visual_embedder

__all__ = ["VisualEmbedder", "VisualHint", "make_visual_embedder"]
