"""Chunking and the versioned chunk store: the ``Chunker`` and ``ChunkStore`` roles."""
