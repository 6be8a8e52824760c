"""The only place outside drivers/ and sim/ nodes that imports rclpy (later issues)."""
