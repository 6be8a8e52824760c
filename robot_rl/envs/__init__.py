"""Gymnasium environments over a robot backend, and their wrappers."""
