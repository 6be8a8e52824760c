"""Replay and demonstration buffers, batch mixing, durable storage, the frozen-encoder cache."""
