"""Kept import path: the per-library pipeline is :mod:`ragspine.retrieval.pipeline`
(``NarrativeIndex`` is the seed's name of :class:`LibraryPipeline`)."""

from ragspine.retrieval.pipeline import DEFAULT_INGEST_BATCH, IngestReport, LibraryPipeline
from ragspine.retrieval.postprocess.base import Postprocessor

NarrativeIndex = LibraryPipeline

__all__ = ["DEFAULT_INGEST_BATCH", "IngestReport", "LibraryPipeline", "NarrativeIndex", "Postprocessor"]
