#!/usr/bin/env bash
# The main job: trains an agent end to end; sets the checkout up first.
# Arguments go to `robot-rl train` (see `bash scripts/train.sh --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/setup.sh
source scripts/setup.sh
exec robot-rl train "$@"
