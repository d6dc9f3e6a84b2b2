"""The dense side: the ``EmbeddingBackend``, ``VectorStore`` and ``EmbeddingCache`` roles."""
