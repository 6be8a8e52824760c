"""Simulated cells that pose as hardware: the world is simulated, everything from the device
protocol up is real. ``fr3_cell``: a Franka FR3 served by franky-sim (the libfranka protocol on
a loopback address) in the pick-cube scene, its cameras rendered from that world, and a
simulated operator on the teleop topics (``hardware/fr3_sim.yaml``)."""
