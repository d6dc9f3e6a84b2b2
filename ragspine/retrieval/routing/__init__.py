"""Multi-library retrieval: routers and the fusing retriever."""

from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import (
    KeywordLibraryRouter,
    LibraryRouter,
    LLMLibraryRouter,
    make_library_router,
)

__all__ = [
    "KeywordLibraryRouter",
    "LLMLibraryRouter",
    "LibraryRouter",
    "MultiIndexRetriever",
    "make_library_router",
]
