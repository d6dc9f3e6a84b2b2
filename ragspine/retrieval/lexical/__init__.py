"""Lexical retrieval: the tokenizer, BM25, the ``LexicalIndex`` role and the hybrid legs."""
