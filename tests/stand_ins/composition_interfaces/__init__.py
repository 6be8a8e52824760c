"""Stand-in for ROS 2's composition_interfaces (no wheel exists): see tests/stand_ins/README.md."""
