"""robot_rl: real-world robot reinforcement learning.

The core library (``robot_rl.agents``, ``robot_rl.data``) needs neither ROS 2, MuJoCo nor torch.
"""

__version__ = "0.1.0"
