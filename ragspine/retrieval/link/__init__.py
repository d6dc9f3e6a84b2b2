"""The exit to the agent: RESTRICTED-free snippet dicts with full provenance (exit #2)."""
