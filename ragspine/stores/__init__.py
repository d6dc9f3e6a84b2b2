"""Production adapters of the store roles (PostgreSQL, pgvector, Qdrant, Redis).

Each adapter imports its driver only when constructed; ``import ragspine.stores`` is light.
"""
