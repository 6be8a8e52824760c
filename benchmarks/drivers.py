"""The driver nodes, each against its real peer: the Franka node against franky-sim, the
RealSense node on rs.software_device and the OpenCV node on a video file, the SpaceMouse and
gamepad nodes on recorded device bytes, the VESC node on a pty peer, the SO-101's bus side on
its servo bus peer. Runs each part's own benchmark in turn and passes its JSON lines through,
each tagged with ``"part"``.

    python benchmarks/drivers.py [--only franka cameras teleop vesc so101] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
PARTS = {
    "franka": (["drivers_franka.py"], ["--quick"]),
    "cameras": (["drivers_cameras.py"], ["--seconds", "8"]),
    "teleop": (["teleop.py"], ["--seconds", "5"]),
    "vesc": (["drivers_vesc.py"], ["--seconds", "5"]),
    "so101": (["drivers_so101.py"], ["--seconds", "3"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(PARTS), default=list(PARTS))
    parser.add_argument("--quick", action="store_true", help="shorter windows in every part")
    args = parser.parse_args()
    failed = []
    for part in args.only:
        script, quick = PARTS[part]
        command = [sys.executable, str(HERE / script[0]), *(quick if args.quick else [])]
        print(f"drivers: {part} ({' '.join(command[1:])})", file=sys.stderr, flush=True)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            try:
                figure = json.loads(line)
            except json.JSONDecodeError:
                print(line, end="", file=sys.stderr)
                continue
            print(json.dumps({"part": part, **figure}), flush=True)
        if proc.wait() != 0:
            failed.append(f"{part} (exit {proc.returncode})")
    if failed:
        print(f"drivers: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
