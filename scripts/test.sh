#!/usr/bin/env bash
# ruff (lint and format check), then the test suite; sets the checkout up first. Extra arguments go to pytest:
#   bash scripts/test.sh -k replay -x
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/setup.sh
source scripts/setup.sh

ruff_status=0
"$ROBOT_RL_VENV/bin/ruff" check . || ruff_status=$?
"$ROBOT_RL_VENV/bin/ruff" format --check . || ruff_status=$?
# Run the tests even when lint fails, so one run reports both. pytest's 5 (nothing collected)
# is non-zero, so a filter that matches no test fails too.
pytest_status=0
"$ROBOT_RL_VENV/bin/python" -m pytest --durations=15 "$@" || pytest_status=$?

if [ "$ruff_status" -ne 0 ] || [ "$pytest_status" -ne 0 ]; then
    echo "test.sh: FAILED (ruff exit $ruff_status, pytest exit $pytest_status)" >&2
    [ "$pytest_status" -ne 0 ] && exit "$pytest_status"
    exit "$ruff_status"
fi
echo "test.sh: ok (ruff and pytest passed)"
