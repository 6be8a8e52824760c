"""Learning agents: SAC with the RLPD recipe, DrQ augmentation, image encoders, gripper critic."""

import os
from importlib.metadata import PackageNotFoundError, version

# XLA's CPU backend hands convolutions to YNNPACK by default; on the learner's CPU that ran
# LeRobot's conv trunk forward 4x slower than XLA's own convolution and made the pixel update
# 3.6x slower (benchmarks/pixels_vs_torch.py). The flag is read when the first XLA backend
# starts, so it is set on import unless the caller chose YNNPACK fusions in XLA_FLAGS. XLA aborts
# on a flag it does not know, so only with the jaxlib releases it was measured on (0.10);
# pyproject.toml caps jaxlib below the next one, and tests/test_xla_flags.py fails when that cap
# outgrows MEASURED_JAXLIB or when an installed jaxlib knows the flag and it is not applied.
CPU_XLA_FLAGS = "--xla_cpu_experimental_ynn_fusion_type=-individual_convolution"
MEASURED_JAXLIB = ((0, 10),)
"""The jaxlib releases (major, minor) the flag was measured on and is set with."""


def _jaxlib_minor() -> tuple[int, int]:
    try:
        return tuple(int(part) for part in version("jaxlib").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return (0, 0)


if "ynn_fusion_type" not in os.environ.get("XLA_FLAGS", "") and _jaxlib_minor() in MEASURED_JAXLIB:
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {CPU_XLA_FLAGS}".strip()
