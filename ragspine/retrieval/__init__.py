"""The narrative channel: chunking → chunk store → BM25 (+ dense) → RRF → rerank → postprocess → link."""
