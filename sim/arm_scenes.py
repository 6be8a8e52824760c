"""The arm twin's scenes: ``models/arm.xml`` plus each task's objects, assembled as MJCF text.

The arm file carries two marker comments; a scene fills them: TOOL inside the hand body (a peg
rigidly held between the fingers) and SCENE in the world body (a free cube, a hole board).
Object names here are the ``object/<name>_pos`` readings of the twin. A task names its scene
(``Task.scene``); ``SCENES`` resolves the name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MODELS = Path(__file__).parent / "models"

CUBE_HALF = 0.025
"""Half the cube side (a 5 cm cube)."""
PEG_HALF = 0.015
"""Half the square peg's side (3 cm)."""
HOLE_CLEARANCE = 0.001
"""Gap on each side between peg and hole: the hole is 2 * (PEG_HALF + HOLE_CLEARANCE) wide."""
BOARD_HEIGHT = 0.04
"""Board thickness: the hole is this deep (it goes down to the table)."""
PEG_TIP_BELOW_TCP = 0.045
"""The peg's lower end sits this far below the TCP along the tool axis."""

_CUBE = f"""
    <body name="cube" pos="0.5 0 {CUBE_HALF}">
      <freejoint name="cube"/>
      <geom class="collide" type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}" mass="0.1"
            rgba="0.85 0.2 0.15 1"/>
    </body>
"""


def _board() -> str:
    """Four boxes around a square hole, on a mocap body so reset can move it."""
    inner = PEG_HALF + HOLE_CLEARANCE
    outer = 0.075
    mid, side = (inner + outer) / 2, (outer - inner) / 2
    z = BOARD_HEIGHT / 2
    walls = [
        (mid, 0, side, outer),
        (-mid, 0, side, outer),
        (0, mid, inner, side),
        (0, -mid, inner, side),
    ]
    geoms = "".join(
        f'<geom class="collide" type="box" pos="{x} {y} {z}" size="{sx} {sy} {z}" '
        f'rgba="0.25 0.45 0.75 1"/>\n'
        for x, y, sx, sy in walls
    )
    # the site marks the hole's centre at the board's top surface
    return f"""
    <body name="board" mocap="true" pos="0.5 0 0">
      {geoms}
      <site name="hole" pos="0 0 {BOARD_HEIGHT}" size="0.004" rgba="1 1 0 0"/>
    </body>
"""


_PEG = f"""
      <geom name="peg" class="collide" type="box" pos="0 0 {0.1034 + PEG_TIP_BELOW_TCP - 0.04}"
            size="{PEG_HALF} {PEG_HALF} 0.04" mass="0.05" rgba="0.9 0.65 0.1 1"/>
      <site name="peg_tip" pos="0 0 {0.1034 + PEG_TIP_BELOW_TCP}" size="0.004" rgba="1 0 0 0"/>
"""


@dataclass(frozen=True)
class ArmScene:
    """Which objects a scene has and how the twin reads and places them."""

    xml: str
    free_objects: tuple[str, ...] = ()
    """Bodies with a free joint (placed through qpos)."""
    mocap_objects: tuple[str, ...] = ()
    """Bodies moved kinematically (placed through mocap_pos/quat)."""
    object_sites: dict[str, str] = field(default_factory=dict)
    """Reading name -> site, for objects whose pose is read at a site (peg tip, hole)."""


def _compose(tool: str = "", scene: str = "") -> str:
    text = (MODELS / "arm.xml").read_text()
    return text.replace("<!-- TOOL -->", tool).replace("<!-- SCENE -->", scene)


def _cube() -> ArmScene:
    return ArmScene(_compose(scene=_CUBE), free_objects=("cube",))


def _peg_and_board() -> ArmScene:
    return ArmScene(
        _compose(tool=_PEG, scene=_board()),
        mocap_objects=("board",),
        object_sites={"peg": "peg_tip", "hole": "hole"},
    )


def _empty() -> ArmScene:
    return ArmScene(_compose())


SCENES = {"cube": _cube, "peg_and_board": _peg_and_board, "empty": _empty}
"""Scene name (a task's ``scene``) -> its builder."""


def build_scene(name: str) -> ArmScene:
    if name not in SCENES:
        raise ValueError(f"no arm scene {name!r}; have {', '.join(SCENES)}")
    return SCENES[name]()


def scene_of(task) -> ArmScene:
    """The scene an arm task names (``Task.scene``)."""
    if task.scene is None:
        raise ValueError(f"task {task.name!r} names no arm scene (its class sets no `scene`)")
    return build_scene(task.scene)
