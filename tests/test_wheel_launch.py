"""The package as a user installs it: a wheel built from this checkout, ``pip install --no-deps``
into a clean venv that sees neither this checkout nor its editable install, then
``ros2 launch robot_rl sim.launch.py`` run from that venv outside the checkout.

The new venv gets its third-party packages (JAX, MuJoCo, rclpy, the launch tooling ...) from
this venv's site-packages through a ``.pth`` path line, which stands in for installing them
from the network; a path line does not run that folder's own ``.pth`` files, so this venv's
editable robot_rl (and the ROS wheels' library-path bootstrap, done here by hand) stay out.
``AMENT_PREFIX_PATH`` names the new venv only, so the package, its launch files and its
hardware files come from what the wheel installed under ``share/``.

- the wheel holds every module of the checkout and installs the ament index entry, the launch
  files and the hardware files; robot_rl imports from the new venv, nothing of the checkout is
  on its ``sys.path``; ``--hardware fr3_sim`` resolves by name to the installed copy;
- the launched stack trains (the learner logs updates), and SIGINT stops it: exit 0, every
  process finished cleanly, no ERROR line, the learner's checkpoint written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from process_helpers import BIN, PREFIX, Proc, alive_pids, require_launch

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the copy pip carries
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
"""This venv's third-party packages (and its editable robot_rl's finder, which stays unused)."""
TINY_LEARNER = (
    "--agent.num-critics 2 --agent.hidden-dims 32 32 --batch-size 32 --demos 0 "
    "--start-steps 50 --utd-ratio 1"
)
LEFT_OUT = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "ROBOT_RL_ROOT", "ROBOT_RL_VENV")
"""Variables of this shell (scripts/setup.sh sets some) that could point a child at the
checkout: the installed package's environment has none of them."""
ESCALATION = re.compile(r"escalating to '?SIG(TERM|KILL)")

pytestmark = pytest.mark.timeout(600)


def _under(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def build_wheel(out: Path) -> Path:
    """The wheel of a copy of what pyproject.toml builds from (packages, package data, data
    files), so that no ``build/`` folder in the checkout (stale files included) takes part."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setup = pyproject["tool"]["setuptools"]
    sources = {"pyproject.toml", pyproject["project"]["readme"], *setup["package-dir"].values()}
    sources |= {Path(s).parts[0] for files in setup["data-files"].values() for s in files}
    tree = out / "source"
    for name in sorted(sources):
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / name, tree / name, ignore=ignore)
        else:
            tree.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    wheels = out / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--progress-bar", "off", "-w", str(wheels), str(tree)],
        capture_output=True, text=True, timeout=600, cwd=out, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = wheels.glob("robot_rl-*.whl")
    return wheel


def installed_env(prefix: Path, log_dir: Path) -> dict[str, str]:
    """The environment of a shell whose venv is ``prefix``: its ``bin`` first on PATH, the ROS 2
    prefix it is (and any of a ROS 2 installation, never this venv), the ROS libraries on the
    library path (what the ROS wheels' bootstrap does in a venv that has them), discovery on
    this host in this run's domain."""
    env = {k: v for k, v in os.environ.items() if k not in LEFT_OUT}
    inherited = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN]
    ament = [
        p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p and not _under(p, PREFIX)
    ]
    libraries = [str(PREFIX / "lib"), *map(str, sorted(SITE_PACKAGES.glob("ros_*.libs")))]
    libraries += [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    env.update(
        PATH=os.pathsep.join([str(prefix / "bin"), *inherited]),
        VIRTUAL_ENV=str(prefix),
        AMENT_PREFIX_PATH=os.pathsep.join([str(prefix), *ament]),
        LD_LIBRARY_PATH=os.pathsep.join(libraries),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        ROS_DOMAIN_ID=os.environ["ROS_DOMAIN_ID"],
        ROS_LOG_DIR=str(log_dir),
        PYTHONUNBUFFERED="1",
        COLUMNS="250",
    )
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, installed with ``--no-deps`` into a new venv (third-party packages: this
    venv's, by a path line), a ``ros2`` script of its own, and a folder outside the checkout."""
    require_launch()
    pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    tmp = tmp_path_factory.mktemp("wheel")
    assert not _under(tmp, ROOT)
    wheel = build_wheel(tmp / "build")
    prefix = tmp / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
    python = prefix / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--no-compile", "--progress-bar", "off", str(wheel)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "robot_rl_test_dependencies.pth").write_text(f"{SITE_PACKAGES}\n")
    # what pip writes for ros2cli's console script, were its wheel installed in this venv
    ros2 = prefix / "bin" / "ros2"
    ros2.write_text(f"#!{python}\nimport sys\nfrom ros2cli.cli import main\nsys.exit(main())\n")
    ros2.chmod(0o755)
    work = tmp / "work"
    work.mkdir()
    return SimpleNamespace(
        wheel=wheel,
        prefix=prefix,
        python=python,
        ros2=ros2,
        work=work,
        env=installed_env(prefix, work / "ros_log"),
    )


def test_the_wheel_installs_the_package_its_launch_and_hardware_files(installed):
    """Every module of the checkout is in the wheel; installed, robot_rl and its share/ files
    come from the new venv, none of the checkout is on sys.path, and ``--hardware fr3_sim``
    resolves by name to the installed copy (the CLI loads it and names it)."""
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    missing = [
        f"{package.replace('.', '/')}/{module.relative_to(ROOT / folder).as_posix()}"
        for package, folder in setup["package-dir"].items()
        for module in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in module.parts
    ]
    missing = [name for name in missing if name not in names]
    assert not missing, f"modules left out of the wheel (pyproject.toml's packages): {missing}"

    probe = (
        "import json, sys, robot_rl\n"
        "from ament_index_python.packages import get_package_share_directory\n"
        "from robot_rl.hardware import find_hardware, hardware_folders\n"
        "print(json.dumps({'robot_rl': robot_rl.__file__, 'path': sys.path,\n"
        "    'share': get_package_share_directory('robot_rl'),\n"
        "    'fr3_sim': str(find_hardware('fr3_sim').resolve()),\n"
        "    'folders': [str(f.resolve()) for f in hardware_folders()]}))\n"
    )
    found = subprocess.run(
        [installed.python, "-c", probe], capture_output=True, text=True, timeout=300,
        env=installed.env, cwd=installed.work, check=False,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr[-3000:]
    found = json.loads(found.stdout)
    share = installed.prefix / "share" / "robot_rl"
    assert _under(found["robot_rl"], installed.prefix)
    # this venv's site-packages, through the path line, is the only part of the checkout
    assert {p for p in found["path"] if p and _under(p, ROOT)} <= {str(SITE_PACKAGES)}
    assert Path(found["share"]) == share
    assert found["folders"] == [str((share / "hardware").resolve())]
    assert Path(found["fr3_sim"]) == (share / "hardware" / "fr3_sim.yaml").resolve()
    for name in ("sim.launch.py", "robot.launch.py", "learner.launch.py"):
        assert (share / "launch" / name).read_text() == (ROOT / "launch" / name).read_text()

    # the command line: fr3_sim (an arm) found by name, read, and refused for a car task
    up = subprocess.run(
        [installed.prefix / "bin" / "robot-rl", "up", "robot", "--hardware", "fr3_sim",
         "--task", "car_lap"],
        capture_output=True, text=True, timeout=300, env=installed.env, cwd=installed.work,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert up.returncode == 2, up.stdout + up.stderr
    (line,) = up.stderr.strip().splitlines()
    assert line.startswith(f"error: {share / 'hardware' / 'fr3_sim.yaml'}: "), line
    assert "'car_lap' needs a car" in line, line


def test_sim_launch_from_the_wheel_trains_and_stops_cleanly_on_sigint(installed, monkeypatch):
    """``ros2 launch robot_rl sim.launch.py task:=pick_cube`` (state only) from the new venv,
    outside the checkout: every process runs the new venv's Python there with no PYTHONPATH,
    the learner trains, and SIGINT to the launch process stops every process by itself."""
    for name in LEFT_OUT:  # Proc starts from this process's environment
        monkeypatch.delenv(name, raising=False)
    run_dir = installed.work / "run"
    command = [installed.ros2, "launch", "robot_rl", "sim.launch.py", "task:=pick_cube",
               f"run_dir:={run_dir}", f"learner_args:={TINY_LEARNER}"]  # fmt: skip
    sim = Proc(command, installed.work / "sim.launch.log", env=installed.env, cwd=installed.work)
    try:
        sim.wait_for(
            lambda: re.search(r"\[learner-\d+\] transitions \d+ .*updates [1-9]", sim.output()),
            300,
            "learner updates",
            interval=0.5,
        )
        started = dict(re.findall(r"\[INFO\] \[(\w+)-\d+\]: process started with pid \[(\d+)\]",
                                  sim.output()))  # fmt: skip
        assert set(started) == {"arm_twin", "actor", "learner"}, sim.tail()
        for label, pid in started.items():
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert argv[0].decode() == str(installed.python), (label, argv)
            assert not [v for v in environ if v.startswith(b"PYTHONPATH=")], label
            assert Path(f"/proc/{pid}/cwd").resolve() == installed.work.resolve(), label
        code = sim.interrupt(group=False)
    finally:
        sim.stop(grace=0)
    out = sim.output()
    assert code == 0, out[-4000:]
    assert not ESCALATION.search(out), out[-4000:]
    assert not alive_pids(int(pid) for pid in started.values())
    # launch's own lines: no ERROR (a process that died, a failed action)
    assert not [line for line in out.splitlines() if line.startswith("[ERROR]")], out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    for label in started:
        assert re.search(rf"\[INFO\] \[{label}-\d+\]: process has finished cleanly", out), (
            label,
            out[-4000:],
        )
    assert "checkpoint written" in out
    assert sorted((run_dir / "learner" / "checkpoints").glob("step_*")), out[-4000:]
