"""Learning agents: SAC with the RLPD recipe, DrQ augmentation, image encoders, gripper critic."""

import os

# XLA's CPU backend hands convolutions to YNNPACK by default; on the learner's CPU that ran
# LeRobot's conv trunk forward 4x slower than XLA's own convolution and made the pixel update
# 3.6x slower (benchmarks/pixels_vs_torch.py). The flag is read when the first XLA backend
# starts, so it is set on import unless the caller chose YNNPACK fusions in XLA_FLAGS.
CPU_XLA_FLAGS = "--xla_cpu_experimental_ynn_fusion_type=-individual_convolution"
if "ynn_fusion_type" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {CPU_XLA_FLAGS}".strip()
