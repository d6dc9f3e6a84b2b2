"""Assembly: how :class:`~ragspine.stack.Stack` puts the retrieval stack together from
:class:`~ragspine.config.Settings` and a library's :class:`~ragspine.profile.Profile`.

* ``resources.py`` — :class:`Resources`: what is opened once and shared (the chunk database, the
  LLM provider, embedding backends, the embedding cache, vector stores, model rerankers, the
  security gate), each on first use, closed once; what a part takes from here is what its
  registry line declares (``needs=``);
* ``pipelines.py`` — pure wiring of one library's pipeline: chunker, ranking stages, lexical
  index, vectors;
* ``exits.py`` — the link exits over pipelines: one library's or the routed multi-library one,
  wrapped in query-time reasoning;
* ``describe.py`` — ``ragspine config``'s description of a configuration, without connecting.
"""
