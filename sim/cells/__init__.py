"""Simulated cells that pose as hardware: the world is simulated, everything from the device
protocol up is real. ``fr3_cell``: a Franka FR3 served by franky-sim (the libfranka protocol on
a loopback address) in the pick-cube scene, its cameras rendered from that world, and a
simulated operator on the teleop topics (``hardware/fr3_sim.yaml``); ``car_cell`` and
``vesc_peer``: the car twin behind the VESC serial protocol (``hardware/car_sim.yaml``);
``software_realsense``: an ``rs.software_device`` whose frames go through the real librealsense
pipeline, for the RealSense driver's tests and benchmark. ``processes`` and ``franka_harness``
(with ``franky_sim_peer``) are what the tests and benchmarks share to run these as processes."""
