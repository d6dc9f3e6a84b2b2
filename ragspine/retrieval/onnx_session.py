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

**One session per model file in a process** (:func:`shared_session`). The ColBERT reranker's
default encoder is the packaged MiniLM, the ``model.onnx`` the dense embedder runs: in the default
(hybrid) mode a query reranked with colbert would otherwise build a second session of the same
file (~0.19 s on the development machine, and the weights' memory again). Callers that ask for
the same file (its resolved path, size, modification time and inode) with the same ``threads``
get the same ``InferenceSession``, built once with :func:`session_options` — the options a
session of its own would have, so every vector and score is bit-identical. onnxruntime allows
``run`` from several threads on one session. The registry holds its sessions weakly: a session
lives as long as some caller holds it, as before.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

_SessionKey = tuple[str, int, int, int, "int | None"]
_sessions: weakref.WeakValueDictionary[_SessionKey, Any] = weakref.WeakValueDictionary()
_building: dict[_SessionKey, threading.Lock] = {}  # one lock per file: two models load in parallel
_registry_lock = threading.Lock()


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


def _key(model_path: Path, threads: int | None) -> _SessionKey:
    path = model_path.resolve()
    st = path.stat()
    return (str(path), st.st_size, st.st_mtime_ns, st.st_ino, threads or None)


def shared_session(model_path: str | os.PathLike[str], threads: int | None = None) -> Any:
    """The process's CPU ``InferenceSession`` of ``model_path`` with :func:`session_options`
    (``threads``), built on the first call; later calls (any thread, any caller) get the same
    object while one is held (see the module docstring). Raises what onnxruntime or the file
    system raise (a missing file: ``FileNotFoundError``); the caller wraps it in its own error."""
    key = _key(Path(model_path), threads)
    with _registry_lock:
        session = _sessions.get(key)
        if session is not None:
            return session
        lock = _building.setdefault(key, threading.Lock())
    try:
        with lock:  # a second caller of the same file waits here, then finds the first one's session
            session = _sessions.get(key)
            if session is None:
                import onnxruntime as ort

                session = ort.InferenceSession(str(model_path), sess_options=session_options(threads),
                                               providers=["CPUExecutionProvider"])
                _sessions[key] = session
            return session
    finally:
        with _registry_lock:
            if _building.get(key) is lock:
                del _building[key]
