"""Reward functions and the learned reward classifier."""
