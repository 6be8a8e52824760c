"""Arm driver nodes, laid out as ``robot_rl.drivers`` says."""
