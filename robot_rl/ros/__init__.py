"""The only place outside drivers/ and sim/ nodes that imports rclpy; ``arm_contract`` is
pure, so the core may use it."""
