"""Twin ROS 2 nodes: publish exactly the driver topics from the MuJoCo twin."""
