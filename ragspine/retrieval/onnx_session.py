"""The onnxruntime session options every packaged model runs with (the MiniLM embedder, the
SPLADE and ColBERT rerankers).

* ``threads``: onnxruntime's intra-op threads (``None``: one per core, onnxruntime's default).
* **No spin-waiting.** By default onnxruntime's worker threads spin between operators. On a
  machine whose cores are shared (other jobs, other processes of a server), the spinning
  threads compete with the work itself: measured on the 2-core development machine while other
  jobs ran, the MiniLM embedder on 480-character chunks did 22 texts/s with spinning, 30 without,
  and 32 on one thread (``scripts/bench.py --embedding``'s thread row compares one thread with
  every core). Turning it off costs at most a few microseconds per operator when the cores are
  idle.
"""

from __future__ import annotations

from typing import Any


def session_options(threads: int | None = None) -> Any:
    """``onnxruntime.SessionOptions`` for a CPU session (see the module docstring); the caller
    has checked that onnxruntime is installed."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options
