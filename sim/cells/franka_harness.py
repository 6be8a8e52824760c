"""A Franka driver bench on loopback, for the tests and benchmarks: a franky-sim peer process
(``franky_sim_peer``), the Franka node as its own process (``robot-rl-franka``'s module), a
ROS 2 client that watches the arm topics, streams commands and calls the services, and the
simulated FR3 cell's hardware file on an address of the caller's (``cell_hardware``).

Everything stays on loopback: the peer serves on a 127.x address of this process's own. ROS 2
is imported only when a client is made.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from pathlib import Path

import numpy as np

from robot_rl.sim.cells.processes import Proc, node_command, wait_for

__all__ = ["DOWN", "ArmClient", "Driver", "Peer", "cell_hardware", "loopback_host", "wait_for"]

DOWN = np.array([0.0, 1.0, 0.0, 0.0])  # w-x-y-z, the tool pointing down
CELL_ADDRESS = "127.13.0.1"
"""The simulated FR3 cell's address in ``hardware/fr3_sim.yaml``."""


def loopback_host(last: int = 1) -> str:
    """A loopback address of this process's own (127.13.N.last), so parallel runs never share
    franky-sim's fixed ports."""
    return f"127.13.{os.getpid() % 250 + 1}.{last}"


def cell_hardware(host: str, directory: Path) -> Path:
    """``hardware/fr3_sim.yaml`` with the cell on ``host`` instead of its default address,
    written into ``directory``."""
    from robot_rl.hardware import find_hardware

    text = find_hardware("fr3_sim").read_text().replace(CELL_ADDRESS, host)
    path = Path(directory) / "fr3_sim.yaml"
    path.write_text(text)
    return path


class Peer:
    """franky-sim on ``host`` as a child process; ``status()`` and ``reflex()`` ask it."""

    def __init__(self, host: str, log: Path):
        self.host, self.log = host, log
        self.proc: Proc | None = None
        self._lines: queue.Queue[str] = queue.Queue()

    def start(self, timeout: float = 120.0) -> None:
        self._lines = queue.Queue()
        command = [sys.executable, "-m", "robot_rl.sim.cells.franky_sim_peer", "--host", self.host]
        self.proc = Proc(command, self.log, pipes=True)
        threading.Thread(target=self._read, args=(self.proc, self._lines), daemon=True).start()
        line = self._next(timeout, "franky-sim to listen")
        assert line.startswith("ready"), line

    @staticmethod
    def _read(proc: Proc, lines) -> None:
        for line in proc.popen.stdout:
            lines.put(line.strip())

    def _next(self, timeout: float, what: str) -> str:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"franky-sim peer: no answer for {what} in {timeout} s:\n"
                f"{self.log.read_text()[-2000:]}"
            ) from None

    def _ask(self, request: str, timeout: float = 30.0) -> dict:
        self.proc.popen.stdin.write(request + "\n")
        self.proc.popen.stdin.flush()
        return json.loads(self._next(timeout, request))

    def status(self) -> dict:
        return self._ask("status")

    def reflex(self) -> dict:
        return self._ask("reflex")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.finish()
        self.proc = None


class Driver(Proc):
    """An arm's driver node as a process (``python -m MODULE``: the Franka node by default)."""

    def __init__(self, log: Path, namespace: str = "/arm",
                 module: str = "robot_rl.drivers.arms.franka", **params):  # fmt: skip
        values = {
            name: json.dumps(value) if isinstance(value, (list, tuple, bool)) else str(value)
            for name, value in params.items()
        }
        super().__init__(node_command(module, namespace, **values), log)

    def stop(self) -> int:
        return super().stop(grace=15.0)


class ArmClient:
    """A test's ROS 2 view of the arm: newest readings, a pose history, command streaming and
    the driver's services."""

    def __init__(self, namespace: str = "/arm"):
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        from robot_rl.ros.background_node import BackgroundNode
        from robot_rl.ros.qos import command_qos, sensor_qos

        self.ns = namespace
        self.latest: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.poses: list[tuple[float, np.ndarray]] = []  # (receive time, position)
        self.diagnostics: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        topics = {
            "joint_states": JointState,
            "ee_pose": PoseStamped,
            "ee_twist": TwistStamped,
            "ee_wrench": WrenchStamped,
            "gripper/joint_states": JointState,
        }
        subscriptions = [
            (msg_type, f"{namespace}/{name}", self._keeper(name), sensor_qos())
            for name, msg_type in topics.items()
        ]
        subscriptions.append((DiagnosticArray, "/diagnostics", self._on_diagnostics, 10))
        self._background = BackgroundNode("franka_test_client", subscriptions, args=[])
        node = self.node = self._background.node
        self.pose_pub = node.create_publisher(
            PoseStamped, f"{namespace}/cmd/ee_pose", command_qos()
        )
        self.gripper_pub = node.create_publisher(Float64, f"{namespace}/cmd/gripper", command_qos())
        self._Float64 = Float64
        self._clients: dict[str, object] = {}
        self._stream: tuple[np.ndarray, np.ndarray] | None = None
        self._stream_hz = 20.0
        self._streaming = threading.Event()
        self._closing = False
        self._streamer = threading.Thread(target=self._stream_loop, daemon=True)
        self._streamer.start()

    # -- readings ------------------------------------------------------------------------------
    def _keeper(self, name: str):
        def keep(msg) -> None:
            with self._lock:
                self.latest[name] = msg
                self.counts[name] = self.counts.get(name, 0) + 1
                if name == "ee_pose":
                    p = msg.pose.position
                    self.poses.append((time.monotonic(), np.array([p.x, p.y, p.z])))
                    del self.poses[:-20000]

        return keep

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            values["level"] = str(
                int.from_bytes(status.level, "little")
                if isinstance(status.level, bytes)
                else int(status.level)
            )
            values["message"] = status.message
            with self._lock:
                self.diagnostics[status.name] = values

    def driver_status(self, name: str | None = None) -> dict[str, str]:
        name = name or f"{self.ns}/franka"
        with self._lock:
            return dict(self.diagnostics.get(name, {}))

    def pose(self) -> tuple[np.ndarray, np.ndarray] | None:
        from robot_rl.ros.convert import msg_to_pose

        with self._lock:
            msg = self.latest.get("ee_pose")
        return None if msg is None else msg_to_pose(msg)

    def position(self) -> np.ndarray:
        return wait_for(self.pose, 60.0, "ee_pose")[0]

    def gripper(self) -> float | None:
        with self._lock:
            msg = self.latest.get("gripper/joint_states")
        return None if msg is None else float(msg.position[0])

    def positions_since(self, since: float) -> np.ndarray:
        with self._lock:
            return np.array([p for t, p in self.poses if t >= since]).reshape(-1, 3)

    def wait_still(
        self, window: float = 0.5, tolerance: float = 0.0005, timeout: float = 60.0
    ) -> float:
        """Wait until the TCP moved less than ``tolerance`` over ``window`` seconds; return
        the monotonic time at which that still window began."""

        def still():
            start = time.monotonic() - window
            recent = self.positions_since(start)
            if len(recent) < 5:
                return None
            spread = np.ptp(recent, axis=0).max()
            return start if spread < tolerance else None

        return wait_for(still, timeout, "the arm to stand still", interval=0.05)

    # -- commands --------------------------------------------------------------------------------
    def send_pose(self, pos, quat=DOWN, stamp: float | None = None, frame: str = "base") -> None:
        from geometry_msgs.msg import PoseStamped

        from robot_rl.ros.convert import to_stamp

        msg = PoseStamped()
        msg.header.stamp = to_stamp(time.time() if stamp is None else stamp)
        msg.header.frame_id = frame
        p, q = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in pos)  # no finiteness check: tests send bad values
        q.w, q.x, q.y, q.z = (float(v) for v in quat)
        self.pose_pub.publish(msg)

    def send_gripper(self, value: float) -> None:
        self.gripper_pub.publish(self._Float64(data=float(value)))

    def stream(self, pos, quat=DOWN, hz: float = 20.0) -> None:
        """Publish this target (freshly stamped) at ``hz`` until ``stop_stream``."""
        self._stream = (np.asarray(pos, np.float64), np.asarray(quat, np.float64))
        self._stream_hz = hz
        self._streaming.set()

    def stop_stream(self) -> float:
        """Stop streaming; return the monotonic time of the last command sent."""
        self._streaming.clear()
        time.sleep(2.0 / self._stream_hz)  # let a publish in flight finish
        return self.last_streamed

    last_streamed = 0.0

    def _stream_loop(self) -> None:
        while not self._closing:
            if not self._streaming.wait(0.1):
                continue
            pos, quat = self._stream
            self.send_pose(pos, quat)
            self.last_streamed = time.monotonic()
            time.sleep(1.0 / self._stream_hz)

    def track(self, pos, tolerance: float = 0.005, timeout: float = 90.0, quat=DOWN) -> np.ndarray:
        """Stream ``pos`` until the TCP is within ``tolerance``; return where it ended."""
        target = np.asarray(pos, np.float64)
        self.stream(target, quat)
        try:
            wait_for(
                lambda: np.linalg.norm(self.position() - target) < tolerance,
                timeout,
                f"the TCP to reach {target.round(3).tolist()}",
            )
        finally:
            self.stop_stream()
        return self.position()

    # -- services --------------------------------------------------------------------------------
    def call(self, srv_type, name: str, request, timeout: float = 60.0):
        client = self._clients.get(name)
        if client is None:
            client = self._clients[name] = self.node.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        assert done.wait(timeout), f"service {name} did not answer in {timeout} s"
        return future.result()

    def estop(self, engaged: bool):
        from std_srvs.srv import SetBool

        return self.call(SetBool, f"{self.ns}/estop", SetBool.Request(data=engaged))

    def trigger(self, name: str):
        from std_srvs.srv import Trigger

        return self.call(Trigger, f"{self.ns}/{name}", Trigger.Request())

    def lifecycle(self, transition: str, node: str = "franka"):
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        ids = {
            "activate": Transition.TRANSITION_ACTIVATE,
            "deactivate": Transition.TRANSITION_DEACTIVATE,
        }
        request = ChangeState.Request(transition=Transition(id=ids[transition]))
        return self.call(ChangeState, f"{self.ns}/{node}/change_state", request).success

    def close(self) -> None:
        if self._closing:  # closed already
            return
        self._closing = True
        self._streaming.clear()
        self._streamer.join(timeout=2)
        self._background.close()
