"""A franky-sim robot (MuJoCo behind the real libfranka protocol) as a process the Franka driver
tests and benchmark talk to (``franka_harness.Peer``), with a line protocol on stdin/stdout:

    python -m robot_rl.sim.cells.franky_sim_peer --host 127.0.13.1

Prints ``ready <host>`` once robot (port 1337) and hand (port 1338) listen on ``host`` (loopback
only). Commands, one per line:
- ``status``: one JSON line: ``commands`` received, ``non_finite`` (first in
  ``first_non_finite``), whether a reflex is active, ``sim_time`` (may lag the wall clock);
- ``reflex``: inject a Cartesian reflex as a robot reports one (motion aborted, ``kReflex``
  mode) and refuse motions until ``Robot.recover_from_errors``;
- ``quit``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import queue
import sys
import threading

import franky_sim
from franky_sim.franka_robot_protocol import (
    AutomaticErrorRecoveryCommand,
    AutomaticErrorRecoveryStatus,
    BaseCommand,
    MoveCommand,
    MoveStatus,
    RobotCommand,
    RobotMode,
    UDPCommand,
)
from franky_sim.franka_robot_server import FrankaRobotServer
from franky_sim.mujoco_simulator import MujocoSimulator

CARTESIAN_REFLEX = 7
"""Index of ``cartesian_reflex`` in libfranka's ``Errors`` (41 flags)."""


class _RecoveryClearsReflex(AutomaticErrorRecoveryCommand):
    def handle(self, server: RecordingRobotServer):
        server.reflex = False
        self.reply(AutomaticErrorRecoveryStatus.kSuccess)


class _MoveRefusedInReflex(MoveCommand):
    def handle(self, server: RecordingRobotServer):
        if server.reflex:
            self.reply(MoveStatus.kCommandRejectedDueToActivatedSafetyFunctions)
            return
        super().handle(server)


class RecordingRobotServer(FrankaRobotServer):
    """The franky-sim robot server, recording every real-time command it receives."""

    def __init__(self, robot, hostname_candidates):
        super().__init__(robot, hostname_candidates)
        commands = self._FrankaServer__command_class_map  # the base keeps it private
        commands[RobotCommand.kAutomaticErrorRecovery] = _RecoveryClearsReflex
        commands[RobotCommand.kMove] = _MoveRefusedInReflex
        self.reflex = False
        self.commands = 0
        self.non_finite = 0
        self.first_non_finite: dict | None = None

    def _handle_udp_command(self, command_data: bytes):
        command = UDPCommand.from_bytes(command_data)
        self.commands += 1
        values = (
            command.q_c
            + command.dq_c
            + command.O_T_EE_c
            + command.O_dP_EE_c
            + command.elbow_c
            + command.tau_J_d
        )
        if not all(math.isfinite(v) for v in values):
            self.non_finite += 1
            if self.first_non_finite is None:
                self.first_non_finite = {
                    "message_id": command.message_id,
                    "O_T_EE_c": [repr(v) for v in command.O_T_EE_c],
                }
        if self.reflex:
            return  # a robot in reflex ignores commands
        super()._handle_udp_command(command_data)

    def inject_reflex(self) -> None:
        self.reflex = True
        motion = self.current_motion_id
        self.stop_motion(send_preemption_signal=False)
        if motion:
            BaseCommand.send_response(
                self._tcp_socket, RobotCommand.kMove, motion, MoveStatus.kReflexAborted
            )
            self.reset_current_motion_id()

    @property
    def robot_state(self):
        state = super().robot_state
        if not self.reflex:
            return state
        errors = tuple(i == CARTESIAN_REFLEX for i in range(41))
        return state.replace(
            robot_mode=RobotMode.kReflex,
            errors=errors,
            current_errors=errors,
            last_motion_errors=errors,
        )


class PeerServer(franky_sim.SimulationServer):
    def __init__(self, sim, host: str):
        super().__init__(sim, hostname_candidates=[host])
        self.requests: queue.Queue[str] = queue.Queue()

    def init(self) -> None:  # SimulationServer.init with the recording server
        for robot in self.sim.robots:
            server = RecordingRobotServer(robot, self._remaining_hostname_candidates)
            server.init()
            self.robot_servers.append(server)
        self.sim.start()

    def run_once(self, realtime=True):
        while not self.requests.empty():
            self._serve(self.requests.get())
        super().run_once(realtime)

    def _serve(self, request: str) -> None:
        server = self.robot_servers[0]
        if request == "reflex":
            server.inject_reflex()
            print(json.dumps({"type": "reflex", "injected": True}), flush=True)
        elif request == "status":
            print(
                json.dumps(
                    {
                        "type": "status",
                        "commands": server.commands,
                        "non_finite": server.non_finite,
                        "first_non_finite": server.first_non_finite,
                        "reflex": server.reflex,
                        "sim_time": float(self.sim.data.time),
                    }
                ),
                flush=True,
            )
        elif request == "quit":
            self.running = False


def _read_stdin(server: PeerServer) -> None:
    for line in sys.stdin:
        server.requests.put(line.strip())
    server.requests.put("quit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.13.1", help="loopback address to serve on")
    args = parser.parse_args()
    if not ipaddress.ip_address(args.host).is_loopback:
        sys.exit(f"error: {args.host} is not a loopback address")
    with MujocoSimulator() as sim:
        sim.add_robot()
        with PeerServer(sim, args.host) as server:
            threading.Thread(target=_read_stdin, args=(server,), daemon=True).start()
            print(f"ready {args.host}", flush=True)
            server.run_forever()


if __name__ == "__main__":
    main()
