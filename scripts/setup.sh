#!/usr/bin/env bash
# Sets up this checkout and its environment; idempotent, and about a second when all is there.
#
#   bash scripts/setup.sh      install what is missing
#   . scripts/setup.sh         the same, then keep the environment (venv on PATH, MUJOCO_GL, ...)
#
# Installs: the Debian run-time libraries (EGL/Mesa for headless MuJoCo, libusb for RealSense)
# when root, a virtualenv (.venv, or $ROBOT_RL_VENV) and
# `pip install -e '.[dev,sim,torch,ros,hardware,cpu-fast,wandb,lerobot]'` (versions: scripts/constraints.txt),
# then the ROS 2 launch tooling (launch, launch_ros, the ros2 CLI) where there are wheels of it
# (../shared/wheels/ros2-launch, or $ROBOT_RL_LAUNCH_WHEELS, plus osrf-pycommon from PyPI; the
# README's ROS 2 section says how to get them, or `ros2 launch` from a ROS 2 installation),
# repeated only when pyproject.toml, scripts/constraints.txt or the install steps
# (_ROBOT_RL_SETUP_REVISION) change, and those wheels when they change: stamps inside the venv.
# Every run also keeps robot_rl in the venv's ament index: the venv is the ROS 2 prefix
# (AMENT_PREFIX_PATH) under which `ros2 launch robot_rl <file>` finds share/robot_rl/launch,
# linked to this checkout so that edits count at once (an editable install has no share/ files).
# Strict mode when run; a shell that sources this file keeps its own options.
[[ "${BASH_SOURCE[0]}" != "$0" ]] || set -euo pipefail

ROBOT_RL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROBOT_RL_VENV="${ROBOT_RL_VENV:-$ROBOT_RL_ROOT/.venv}"
case "$ROBOT_RL_VENV" in /*) ;; *) ROBOT_RL_VENV="$PWD/$ROBOT_RL_VENV" ;; esac
ROBOT_RL_LAUNCH_WHEELS="${ROBOT_RL_LAUNCH_WHEELS:-$ROBOT_RL_ROOT/../shared/wheels/ros2-launch}"
export ROBOT_RL_ROOT ROBOT_RL_VENV ROBOT_RL_LAUNCH_WHEELS
# Bump when the install steps below change what they install (it is part of the stamp, so every
# venv set up by this file reinstalls once); comments and messages need no bump.
_ROBOT_RL_SETUP_REVISION=2
_ROBOT_RL_EXTRAS="dev,sim,torch,ros,hardware,cpu-fast,wandb,lerobot"

# The install steps run in a subshell so that a caller who sources this file keeps its own shell
# options; a failure is still returned as this file's status.
_robot_rl_install() (
    set -euo pipefail
    # g++ compiles the learner's oneDNN convolution extension (robot_rl/agents/encoders)
    debs=(libegl1 libegl-mesa0 libgl1-mesa-dri libusb-1.0-0 g++)
    # ensurepip comes from a separate Debian package; without it `python3 -m venv` fails.
    if [ ! -x "$ROBOT_RL_VENV/bin/python" ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        debs+=(python3-venv)
    fi

    missing=()
    if command -v dpkg-query >/dev/null; then
        for pkg in "${debs[@]}"; do
            status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
            [ "$status" = "install ok installed" ] || missing+=("$pkg")
        done
    else
        echo "setup: no dpkg here; make sure EGL/Mesa, libusb-1.0 and g++ are installed" >&2
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            echo "setup: installing Debian packages: ${missing[*]}"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        else
            echo "setup: missing Debian packages (rendering/RealSense tests will skip); install with:" >&2
            echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        fi
    fi

    py="$ROBOT_RL_VENV/bin/python"
    if [ ! -x "$py" ]; then
        echo "setup: creating virtualenv $ROBOT_RL_VENV"
        python3 -m venv "$ROBOT_RL_VENV"
    fi
    stamp_file="$ROBOT_RL_VENV/.robot-rl-setup-stamp"
    launch_wheels=()
    if [ -d "$ROBOT_RL_LAUNCH_WHEELS" ]; then
        launch_wheels=("$ROBOT_RL_LAUNCH_WHEELS"/*.whl)
        [ -e "${launch_wheels[0]}" ] || launch_wheels=()
    fi
    # The launch wheels have a stamp of their own: a checkout without them (a clone with nothing
    # beside it) that shares a venv set up with them reinstalls nothing.
    stamp="$( (cat "$ROBOT_RL_ROOT/pyproject.toml" "$ROBOT_RL_ROOT/scripts/constraints.txt"
               echo "$_ROBOT_RL_SETUP_REVISION $_ROBOT_RL_EXTRAS") |
             sha256sum | cut -d' ' -f1)"
    log="$ROBOT_RL_VENV/.robot-rl-setup.log"
    installed=0
    if [ "$(cat "$stamp_file" 2>/dev/null || true)" != "$stamp" ]; then
        if [ ! -e "$ROBOT_RL_VENV/.robot-rl-pip-upgraded" ]; then
            echo "setup: upgrading pip"
            "$py" -m pip install -q --progress-bar off --upgrade pip >/dev/null 2>&1 ||
                echo "setup: could not upgrade pip; going on with the venv's own" >&2
            touch "$ROBOT_RL_VENV/.robot-rl-pip-upgraded"
        fi
        if [ -e "$stamp_file" ]; then
            echo "setup: dependencies changed, reinstalling Python packages"
        else
            echo "setup: installing Python packages (first run, a few minutes)"
        fi
        if ! (cd "$ROBOT_RL_ROOT" && "$py" -m pip install --progress-bar off \
            -c scripts/constraints.txt -e ".[$_ROBOT_RL_EXTRAS]") \
            >"$log" 2>&1; then
            tail -n 40 "$log" >&2
            echo "setup: pip install failed; full log: $log" >&2
            exit 1
        fi
        # The oneDNN convolution extension, compiled now rather than in the first training run.
        "$py" -c 'import sys; from robot_rl.agents.encoders.onednn_conv import main; sys.exit(main())' ||
            echo "setup: the CPU learner's conv trunks will use XLA's convolutions" >&2
        echo "$stamp" >"$stamp_file"
        installed=1
    fi
    # launch, launch_ros and ros2cli are not on PyPI: wheels built unchanged from their sources
    # (see the README beside them); their other dependencies come with the ros extra
    launch_stamp_file="$ROBOT_RL_VENV/.robot-rl-launch-stamp"
    if [ "${#launch_wheels[@]}" -gt 0 ]; then
        launch_stamp="$(basename -a "${launch_wheels[@]}" | sha256sum | cut -d' ' -f1)"
        if [ "$(cat "$launch_stamp_file" 2>/dev/null || true)" != "$launch_stamp" ]; then
            echo "setup: installing the ROS 2 launch wheels from $ROBOT_RL_LAUNCH_WHEELS"
            if ! "$py" -m pip install --progress-bar off --no-deps "${launch_wheels[@]}" \
                osrf-pycommon==2.0.2 >>"$log" 2>&1; then
                tail -n 40 "$log" >&2
                echo "setup: installing the ROS 2 launch wheels failed; full log: $log" >&2
                exit 1
            fi
            echo "$launch_stamp" >"$launch_stamp_file"
            installed=1
        fi
    elif [ "$installed" = 1 ] && ! "$py" -c 'import launch_ros, ros2launch' 2>/dev/null; then
        echo "setup: no ROS 2 launch wheels in $ROBOT_RL_LAUNCH_WHEELS: \`ros2 launch\` and" \
            "its tests are unavailable (they skip); to get it, source a ROS 2 installation" \
            "or build the wheels: README.md, ROS 2, 'Getting ros2 launch'" >&2
    fi
    [ "$installed" = 0 ] || echo "setup: done"

    # The ament index entry and share/robot_rl files that a wheel install puts under the prefix
    # (pyproject.toml's data-files); an editable install puts none, so link each file to this
    # checkout. Files, not folders: ros2 launch looks for launch files with os.walk, which does
    # not enter a linked folder. Links to files that are gone are removed.
    share="$ROBOT_RL_VENV/share"
    index="$share/ament_index/resource_index/packages"
    indexed=1
    [ -e "$index/robot_rl" ] || indexed=0
    mkdir -p "$index" "$share/robot_rl"
    cp "$ROBOT_RL_ROOT/resource/robot_rl" "$index/robot_rl"
    _link() { [ "$(readlink "$2" 2>/dev/null || true)" = "$1" ] || ln -sfn "$1" "$2"; }
    _link "$ROBOT_RL_ROOT/package.xml" "$share/robot_rl/package.xml"
    for pattern in "launch/*.py" "hardware/*.yaml"; do
        folder="$share/robot_rl/${pattern%%/*}"
        [ ! -L "$folder" ] || rm "$folder"
        mkdir -p "$folder"
        for link in "$folder"/*; do
            [ ! -L "$link" ] || [ -e "$link" ] || rm "$link"
        done
        for file in "$ROBOT_RL_ROOT"/$pattern; do
            [ ! -e "$file" ] || _link "$file" "$folder/$(basename "$file")"
        done
    done
    if [ "$indexed" = 0 ]; then
        echo "setup: ROS 2 prefix: $ROBOT_RL_VENV (AMENT_PREFIX_PATH; sourcing this file sets" \
            "it), so \`ros2 launch robot_rl <file>\` finds this checkout's launch files"
    fi
)

if ! _robot_rl_install; then
    echo "setup: failed (see the messages above)" >&2
    unset -f _robot_rl_install
    unset _ROBOT_RL_SETUP_REVISION _ROBOT_RL_EXTRAS
    return 1 2>/dev/null || exit 1
fi
unset -f _robot_rl_install
unset _ROBOT_RL_SETUP_REVISION _ROBOT_RL_EXTRAS

export MUJOCO_GL="${MUJOCO_GL:-egl}"
# MuJoCo refuses a PyOpenGL platform that differs from its own GL backend.
case "$MUJOCO_GL" in
    egl | osmesa) export PYOPENGL_PLATFORM="$MUJOCO_GL" ;;
esac
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(($$ % 101 + 1))}"
export PYTHONUNBUFFERED=1
# the venv is the ROS 2 prefix that holds robot_rl's ament index entry and share/ files
case ":${AMENT_PREFIX_PATH:-}:" in
    *":$ROBOT_RL_VENV:"*) ;;
    *) export AMENT_PREFIX_PATH="$ROBOT_RL_VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;;
esac
case ":$PATH:" in
    *":$ROBOT_RL_VENV/bin:"*) ;;
    *) export PATH="$ROBOT_RL_VENV/bin:$PATH" ;;
esac
export VIRTUAL_ENV="$ROBOT_RL_VENV"
