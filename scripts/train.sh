#!/usr/bin/env bash
# The main job: the whole stack (twin nodes, actor, learner) trains a task; sets the checkout up first.
# Arguments go to `robot-rl up sim` (see `bash scripts/train.sh --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/setup.sh
source scripts/setup.sh
exec robot-rl up sim "$@"
