"""The FR3 cell's MuJoCo world: franky-sim's FR3 (robot ``robot0_``, its base at the origin) in
the twin's pick-cube scene: the same table (top at z = 0), the same 5 cm cube and the same
front camera as ``sim/models/arm.xml``, and a wrist camera on the FR3's hand where the twin has
it (both hands are mounted at the flange turned -45 deg about z).

franky-sim builds its scene as an MJCF tree that may be extended before ``start()``; the world
process (``fr3_cell``) extends the tree it will simulate, a camera process (``cell_camera``)
builds the same tree and compiles it itself, so both hold the very same model.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from robot_rl.sim.arm_scenes import CUBE_HALF

PREFIX = "robot0_"
"""franky-sim's name prefix of its first robot."""
HAND_BODY = PREFIX + "hand"
CUBE_BODY = "cube"
TCP_SITE = "tcp"
TCP_OFFSET = 0.1034
"""The Franka Hand's TCP along the flange's z axis (m): franky-sim's ``ee_tcp_xyz``."""
TASKS = ("pick_cube",)
CAMERA_GEOM_GROUPS = (0, 1, 3)
"""What the cell's cameras render: the scene (group 0) and the FR3 by its collision meshes
(group 3, 3.2k triangles) instead of its visual meshes (group 2, 241k triangles). They look
alike at the cameras' sizes, and a 128 px frame takes 3-4 ms instead of 26-29 ms on the CPU
renderer, time the cell's other processes share."""


def _append(parent: ET.Element, *elements: str) -> None:
    """Append MJCF elements, each written as its XML text, to ``parent``."""
    for text in elements:
        parent.append(ET.fromstring(text))


def _find_body(root: ET.Element, name: str) -> ET.Element:
    body = root.find(f".//body[@name='{name}']")
    if body is None:
        raise ValueError(f"franky-sim's scene has no body {name!r}")
    return body


def extend_scene(sim, task: str = "pick_cube") -> None:
    """Add the task's scene to franky-sim's ``MujocoSimulator`` (robot added, not started)."""
    if task not in TASKS:
        raise ValueError(f"the FR3 cell has a scene for {', '.join(TASKS)}, not {task!r}")
    scene, world = sim.scene, sim.worldbody
    # franky-sim's ground is the plane z = 0: here the table top is, the floor goes below it
    for geom in world.iter("geom"):
        if geom.get("name") == "ground":
            geom.set("pos", "0 0 -0.75")
    _append(
        scene.find("asset"),
        '<texture name="cell_table" type="2d" builtin="checker" rgb1="0.35 0.3 0.25" '
        'rgb2="0.45 0.4 0.33" width="256" height="256"/>',
        '<material name="cell_table" texture="cell_table" texrepeat="6 6"/>',
    )
    # small images on a CPU renderer: franky-sim's 4096 px shadow map and 8x multisampling
    # cost ~0.2 s a frame there; without them a 64 px frame takes a few ms
    visual = scene.find("visual")
    _append(visual, '<global offwidth="256" offheight="256"/>')
    quality = visual.find("quality")
    quality.set("shadowsize", "0")
    quality.set("offsamples", "0")
    _append(
        world,
        '<geom name="table" type="box" pos="0.5 0 -0.02" size="0.35 0.4 0.02" '
        'material="cell_table" friction="1.0 0.01 0.001"/>',
        '<geom name="stand" type="cylinder" pos="0 0 -0.375" size="0.08 0.375" '
        'rgba="0.3 0.3 0.3 1" contype="0" conaffinity="0"/>',
        '<camera name="front" pos="1.0 0 0.4" xyaxes="0 1 0 -0.5 0 0.87" fovy="45"/>',
        f'<body name="{CUBE_BODY}" pos="0.5 0 {CUBE_HALF}"><freejoint name="{CUBE_BODY}"/>'
        f'<geom type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}" mass="0.1" '
        'rgba="0.85 0.2 0.15 1" friction="1.0 0.01 0.001" solref="0.004 1"/></body>',
    )
    _append(
        _find_body(world, HAND_BODY),
        f'<site name="{TCP_SITE}" pos="0 0 {TCP_OFFSET}" size="0.005" rgba="1 0 0 0"/>',
        '<camera name="wrist" pos="0.06 0 0.04" xyaxes="0 1 0 0.95 0 0.3" fovy="75"/>',
    )


def build_simulator(task: str = "pick_cube"):
    """franky-sim's simulator with one FR3 and the task's scene, not started."""
    from franky_sim.mujoco_simulator import MujocoSimulator

    sim = MujocoSimulator()
    sim.init()
    sim.add_robot()
    extend_scene(sim, task)
    return sim


def cell_model(task: str = "pick_cube"):
    """The compiled ``mujoco.MjModel`` of the cell's world (what a camera process renders)."""
    import mujoco

    sim = build_simulator(task)
    try:
        return mujoco.MjModel.from_xml_string(ET.tostring(sim.scene, encoding="unicode"))
    finally:
        sim.cleanup()
