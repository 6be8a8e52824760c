"""Learning agents: SAC with the RLPD recipe, DrQ augmentation, image encoders, gripper critic."""
