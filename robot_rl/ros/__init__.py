"""The only place outside drivers/ and sim/ nodes that imports rclpy; ``arm_contract`` and
``teleop_contract`` are pure, so the core may use them."""
