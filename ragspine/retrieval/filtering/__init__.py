"""Metadata filtering: the nine-operator grammar and the automatic-extraction seam."""

from ragspine.errors import FilterError
from ragspine.retrieval.filtering.filters import (
    OPERATORS,
    FilterCondition,
    MetadataFilter,
    metadata_of,
    parse_filter,
)

__all__ = [
    "OPERATORS",
    "FilterCondition",
    "FilterError",
    "MetadataFilter",
    "metadata_of",
    "parse_filter",
]
