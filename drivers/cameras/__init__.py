"""Camera driver nodes: one node per file, each a config dataclass plus a node, registered by
name."""
