"""`robot-rl doctor`: what this machine has, and the command that installs what it lacks.

Every probe except Python's runs in its own process with a timeout, so a broken GL driver, a
crashing native library or a hanging import is reported as an error instead of taking doctor
down. Only JAX is required; the rest (oneDNN convolutions, MuJoCo, ROS 2, RealSense, torch) is
optional. The ``cameras``, ``teleop`` and ``arms`` lines list the devices this machine shows
(RealSense serials, video devices, SpaceMice, gamepads, SO-101 servo bus adapters), as the
hardware files name them.
"""

from __future__ import annotations

import json as jsonlib
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

SUDO = "" if not hasattr(os, "geteuid") or os.geteuid() == 0 else "sudo "
FIX_JAX = "pip install -e ."
FIX_CUDA = "pip install -e '.[cuda]'"
FIX_MUJOCO = "pip install -e '.[sim]'"
EGL_DEBS = ("libegl1", "libegl-mesa0", "libgl1-mesa-dri")
FIX_RENDERING = f"{SUDO}apt-get install -y {' '.join(EGL_DEBS)}"
FIX_GL_DRIVER = (
    "the EGL libraries are installed: check the GPU driver (nvidia-smi), or try MUJOCO_GL=osmesa "
    f"({SUDO}apt-get install -y libosmesa6)"
)
FIX_ROS = "pip install -e '.[ros]'"  # the extra names the wheels: no copy here to fall behind
FIX_LIBUSB = f"{SUDO}apt-get install -y libusb-1.0-0"
FIX_REALSENSE = f"pip install pyrealsense2 && {FIX_LIBUSB}"
FIX_TORCH = "pip install -e '.[torch]'"
FIX_HARDWARE = "pip install -e '.[hardware,ros]'"
FIX_ONEDNN = f"{SUDO}apt-get install -y g++ && pip install -e '.[cpu-fast]'"
FIX_LAUNCH = (
    "README.md, ROS 2, 'Getting ros2 launch': source a ROS 2 installation, or the launch "
    "wheels in ../shared/wheels/ros2-launch and bash scripts/setup.sh"
)

# A probe prints its result as the last line starting with this, after any library chatter.
MARKER = "ROBOT_RL_DOCTOR_PROBE "
REQUIRED = ("python", "jax")


@dataclass
class DoctorConfig:
    json: bool = False
    """Print one JSON object instead of the table."""
    strict: bool = False
    """Exit with 1 when a required piece (JAX) is missing or broken; otherwise always 0."""
    timeout: float = 120.0
    """Seconds each probe (its own process) may take before it counts as an error."""


@dataclass
class Check:
    name: str
    status: str
    """ok, missing or error."""
    detail: str
    fix: str | None = None
    """A command that installs or repairs this piece; None when nothing needs doing."""
    required: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    """Machine-readable extras (version, devices, backend), flattened into the JSON entry."""


def _missing(what: str, fix: str) -> dict[str, Any]:
    return {"status": "missing", "detail": f"{what} is not installed", "fix": fix}


def _dist_version(*names: str) -> str | None:
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def probe_jax() -> dict[str, Any]:
    try:
        import jax
    except ModuleNotFoundError:
        return _missing("jax", FIX_JAX)
    backend = jax.default_backend()
    devices = [{"platform": d.platform, "id": d.id, "kind": d.device_kind} for d in jax.devices()]
    listed = ", ".join(f"{d['platform']}:{d['id']} ({d['kind']})" for d in devices)
    result: dict[str, Any] = {
        "status": "ok",
        "detail": f"{jax.__version__}, backend {backend}: {listed}",
        "version": jax.__version__,
        "backend": backend,
        "devices": devices,
    }
    nvidia = Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi")
    if backend == "cpu" and nvidia:
        result["detail"] += "; this host has an NVIDIA GPU that JAX does not use"
        result["fix"] = FIX_CUDA
    return result


def probe_torch() -> dict[str, Any]:
    """torch's version and build, read from its files: importing torch takes seconds and
    doctor should not (the build says CUDA or CPU; a CUDA build without a GPU is still fine)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return _missing("torch (optional: loading PyTorch encoders)", FIX_TORCH)
    version = _dist_version("torch") or "?"
    try:
        text = (Path(spec.submodule_search_locations[0]) / "version.py").read_text()
        match = re.search(r"^cuda[^=]*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    except OSError:
        match = None
    build = f"CUDA {match.group(1)} build" if match else "CPU build"
    return {"status": "ok", "detail": f"{version}, {build}", "version": version}


def _cpu_bf16_units() -> str:
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    units = [
        name
        for flag, name in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX512-BF16"))
        if flag in flags
    ]
    return " and ".join(units) or "none (bf16 convolutions would be emulated)"


def probe_onednn() -> dict[str, Any]:
    from robot_rl.agents.encoders import onednn_conv

    reason = onednn_conv.unavailable_reason()
    if reason:
        return {
            "status": "missing",
            "detail": f"oneDNN convolutions (optional: the CPU learner's conv trunks): {reason}",
            "fix": FIX_ONEDNN,
        }
    units = _cpu_bf16_units()
    return {
        "status": "ok",
        "detail": f"the conv trunks' CPU convolutions; bf16 units: {units}",
        "bf16_units": units,
    }


def probe_mujoco() -> dict[str, Any]:
    try:
        import mujoco
    except ModuleNotFoundError:
        return _missing("mujoco (optional: the twin)", FIX_MUJOCO)
    return {"status": "ok", "detail": mujoco.__version__, "version": mujoco.__version__}


_TINY_MJCF = """
<mujoco>
  <worldbody>
    <light pos="0 0 2"/>
    <geom type="sphere" size="0.2" rgba="1 0.5 0.2 1"/>
  </worldbody>
</mujoco>
"""


def _missing_debs(packages: tuple[str, ...]) -> list[str] | None:
    """Which of these Debian packages are not installed (None: no dpkg to ask)."""
    if shutil.which("dpkg-query") is None:
        return None
    missing = []
    for package in packages:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        ).stdout  # fmt: skip
        if status.strip() != "install ok installed":
            missing.append(package)
    return missing


def probe_rendering() -> dict[str, Any]:
    given = os.environ.get("MUJOCO_GL")
    # the backend robot_rl's twin would use here: it picks EGL itself on a headless machine
    # (robot_rl.sim), so a fresh shell without MUJOCO_GL is no alarm
    import robot_rl.sim  # noqa: F401

    gl = os.environ.get("MUJOCO_GL")
    if given:
        setting = f"MUJOCO_GL={gl}"
    elif gl:
        setting = f"MUJOCO_GL unset: robot_rl uses {gl} (no display)"
    else:
        setting = "MUJOCO_GL unset: glfw on this display"
    facts = {"backend": gl or "glfw"}

    def failed(detail: str) -> dict[str, Any]:
        fix = FIX_RENDERING
        if (gl or "glfw") == "egl":
            missing = _missing_debs(EGL_DEBS)
            if missing == []:
                fix = FIX_GL_DRIVER
            elif missing:
                fix = f"{SUDO}apt-get install -y {' '.join(missing)}"
        return {"status": "error", "detail": detail, "fix": fix, **facts}

    try:
        # mujoco loads its GL backend at import, so a broken MUJOCO_GL can fail right here.
        import mujoco

        model = mujoco.MjModel.from_xml_string(_TINY_MJCF)
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        with mujoco.Renderer(model, height=32, width=32) as renderer:
            renderer.update_scene(data)
            image = renderer.render()
            gl_renderer = _gl_renderer_name()
    except ModuleNotFoundError as err:
        if err.name == "mujoco":
            return _missing("mujoco (optional: the twin)", FIX_MUJOCO)
        return failed(f"offscreen render failed ({setting}): {err}")
    except Exception as err:  # any GL failure is the answer, not a crash
        return failed(f"offscreen render failed ({setting}): {type(err).__name__}: {err}")
    if image.shape != (32, 32, 3) or not image.any():
        return failed(f"rendered a blank or malformed image {image.shape} ({setting})")
    where = f", {gl_renderer}" if gl_renderer else ""
    return {"status": "ok", "detail": f"32x32 offscreen render ok ({setting}{where})", **facts}


def _gl_renderer_name() -> str | None:
    try:
        from OpenGL import GL

        name = GL.glGetString(GL.GL_RENDERER)
    except Exception:  # PyOpenGL absent or no current context: the name is only a nicety
        return None
    return name.decode(errors="replace") if isinstance(name, bytes) else None


def probe_rclpy() -> dict[str, Any]:
    try:
        import rclpy
        import rclpy.utilities
    except ImportError as err:
        if isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] == "rclpy":
            return _missing("rclpy (optional: ROS 2 nodes)", FIX_ROS)
        return {"status": "error", "detail": f"import rclpy failed: {err}", "fix": FIX_ROS}
    rclpy.init(args=[])
    try:
        rmw = rclpy.utilities.get_rmw_implementation_identifier()
    finally:
        rclpy.shutdown()
    version, distro = _dist_version("ros-rclpy", "rclpy"), os.environ.get("ROS_DISTRO")
    parts = [version, f"RMW {rmw}", distro and f"ROS_DISTRO={distro}"]
    detail = ", ".join(part for part in parts if part)
    return {"status": "ok", "detail": detail, "rmw": rmw, "version": version}


def probe_launch() -> dict[str, Any]:
    """``ros2 launch robot_rl ...``: the ros2 CLI beside this Python, launch_ros importable
    (with robot_rl's composition_interfaces stand-in where no ROS 2 installation has it) and
    robot_rl in the ament index (``AMENT_PREFIX_PATH``). Nothing is launched."""
    ros2 = shutil.which("ros2", path=str(Path(sys.executable).parent)) or shutil.which("ros2")
    try:
        from robot_rl.launch_support import provide_composition_interfaces

        stand_in = provide_composition_interfaces()
        import launch_ros.actions  # noqa: F401
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError as err:
        return _missing(f"the ROS 2 launch tooling (optional: ros2 launch; {err})", FIX_LAUNCH)
    if ros2 is None:
        return _missing("the ros2 CLI (optional: ros2 launch)", FIX_LAUNCH)
    try:
        prefix = get_package_prefix("robot_rl")
    except (PackageNotFoundError, LookupError, ValueError, OSError):
        here = Path(sys.prefix)
        if (here / "share/ament_index/resource_index/packages/robot_rl").exists():
            detail = f"robot_rl is indexed under {here}, which AMENT_PREFIX_PATH does not name"
            fix = f"export AMENT_PREFIX_PATH={here}${{AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}}"
        else:
            detail = "robot_rl is in no ament index (an editable install has no share/ files)"
            fix = "pip install . (a wheel carries them), or source scripts/setup.sh (links them)"
        return {"status": "missing", "detail": f"ros2 launch is there, but {detail}", "fix": fix}
    where = " (composition_interfaces: robot_rl's stand-in)" if stand_in else ""
    detail = f"{ros2}, robot_rl under {prefix}{where}"
    return {"status": "ok", "detail": detail, "ros2": ros2, "prefix": prefix}


def probe_pyrealsense2() -> dict[str, Any]:
    try:
        import pyrealsense2 as rs
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "pyrealsense2":
            return _missing("pyrealsense2 (optional: RealSense cameras)", FIX_REALSENSE)
        return {"status": "error", "detail": f"import failed: {err}", "fix": FIX_REALSENSE}
    except ImportError as err:  # usually libusb-1.0 missing
        return {"status": "error", "detail": f"import failed: {err}", "fix": FIX_LIBUSB}
    version = getattr(rs, "__version__", None) or _dist_version("pyrealsense2")
    try:
        cameras = f"{len(rs.context().query_devices())} camera(s) connected"
    except Exception as err:  # no USB access in a container is common and not fatal
        cameras = f"cannot list cameras: {err}"
    return {"status": "ok", "detail": f"{version}, {cameras}", "version": version}


def _discover(device_types: tuple[str, ...]) -> dict[str, Any]:
    """The devices of these registry types that this machine shows (each driver's
    ``discover()``); nothing is opened."""
    from robot_rl.drivers.registry import device_type

    found, problems = [], []
    for name in device_types:
        try:
            found += device_type(name).load().discover()
        except ImportError as err:
            problems.append(f"{name}: {err}")
    described = [_describe_device(d) for d in found]
    if problems and not found:
        return {"status": "missing", "detail": "; ".join(problems), "fix": FIX_HARDWARE}
    detail = ", ".join(described) if described else "none found"
    if problems:
        detail += " (" + "; ".join(problems) + ")"
    return {"status": "ok", "detail": detail, "devices": found}


def _describe_device(device: dict[str, Any]) -> str:
    where = device.get("serial") or device.get("path") or device.get("device") or ""
    text = f"{device.get('kind')} {where} ({device.get('name') or device.get('model') or '?'})"
    return text + (f" [{device['error']}]" if device.get("error") else "")


# name -> (probe, what to suggest when the probe dies or hangs before it can say anything)
PROBES: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "jax": (probe_jax, FIX_JAX),
    "torch": (probe_torch, FIX_TORCH),
    "onednn": (probe_onednn, FIX_ONEDNN),
    "mujoco": (probe_mujoco, FIX_MUJOCO),
    "rendering": (probe_rendering, FIX_RENDERING),
    "rclpy": (probe_rclpy, FIX_ROS),
    "ros2 launch": (probe_launch, FIX_LAUNCH),
    "pyrealsense2": (probe_pyrealsense2, FIX_REALSENSE),
    "cameras": (partial(_discover, ("realsense", "opencv_camera")), FIX_HARDWARE),
    "teleop": (partial(_discover, ("spacemouse", "gamepad")), FIX_HARDWARE),
    "arms": (partial(_discover, ("so101",)), FIX_HARDWARE),
}


def probe_main(name: str) -> None:
    """Entry point of a probe's child process."""
    try:
        result = PROBES[name][0]()
    except Exception as err:
        result = {"status": "error", "detail": f"{type(err).__name__}: {err}"}
    sys.stdout.flush()
    print(MARKER + jsonlib.dumps(result, default=str), flush=True)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Keep any ROS 2 traffic on this host, in a domain of its own.
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 101 + 1))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def run_probe(name: str, timeout: float) -> Check:
    package_root = str(Path(__file__).resolve().parents[2])
    code = (
        f"import sys; sys.path.append({package_root!r}); "
        f"from robot_rl.commands.doctor import probe_main; probe_main({name!r})"
    )
    fallback_fix = PROBES[name][1]
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_child_env(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        detail = f"no answer within {timeout:g} s (hung import or driver)"
        return Check(name, "error", detail, fallback_fix)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result = jsonlib.loads(line[len(MARKER) :])
            status, detail = result.pop("status"), result.pop("detail")
            fix = result.pop("fix", None)
            if status != "ok" and not fix:
                fix = fallback_fix
            return Check(name, status, detail, fix, facts=result)
    stderr = [line for line in proc.stderr.splitlines() if line.strip()]
    last = f": {stderr[-1].strip()}" if stderr else ""
    detail = f"probe process died ({_describe_exit(proc.returncode)}){last}"
    return Check(name, "error", detail, fallback_fix)


def check_python() -> Check:
    version = platform.python_version()
    facts = {"version": version, "executable": sys.executable}
    return Check("python", "ok", f"{version} ({sys.executable})", facts=facts)


def collect(timeout: float) -> list[Check]:
    with ThreadPoolExecutor(max_workers=len(PROBES)) as pool:
        futures = [pool.submit(run_probe, name, timeout) for name in PROBES]
        checks = [check_python(), *(future.result() for future in futures)]
    for check in checks:
        check.required = check.name in REQUIRED
    return checks


def required_ok(checks: list[Check]) -> bool:
    return all(check.status == "ok" for check in checks if check.required)


def exit_code(checks: list[Check], strict: bool) -> int:
    return 1 if strict and not required_ok(checks) else 0


def as_json(checks: list[Check]) -> dict[str, Any]:
    entries = {}
    for check in checks:
        entry = asdict(check)
        entry.pop("name")
        entry.update(entry.pop("facts"))
        entries[check.name] = entry
    return {"ok": required_ok(checks), "checks": entries}


def print_report(checks: list[Check]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(soft_wrap=True)
    colour = {"ok": "green", "missing": "yellow", "error": "red"}
    if console.is_terminal:
        table = Table(title="robot-rl doctor")
        for column in ("item", "status", "detail"):
            table.add_column(column)
        for check in checks:
            status = f"[{colour[check.status]}]{check.status}[/]"
            name = check.name + (" (required)" if check.required else "")
            table.add_row(name, status, Text(check.detail))  # details are not markup
        console.print(table)
    else:
        for check in checks:
            print(f"{check.name:<13} {check.status:<8} {check.detail}")
    fixes = [check for check in checks if check.fix]
    if fixes:
        print("\nto fix:")
        for check in fixes:
            print(f"  {check.name}: {check.fix}")
    if required_ok(checks):
        print("\nrequired pieces ok: the learner core runs here.")
    else:
        print("\nrequired pieces missing or broken: robot-rl cannot train here.")


def run(config: DoctorConfig) -> int:
    checks = collect(config.timeout)
    if config.json:
        print(jsonlib.dumps(as_json(checks), indent=2))
    else:
        print_report(checks)
    return exit_code(checks, config.strict)
