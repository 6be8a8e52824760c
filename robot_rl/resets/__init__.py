"""Reset procedures: scripted, forward-backward, autonomous recovery."""
