"""benchmarks/RESULTS.md is what ``benchmarks/make_results.py`` writes from benchmarks/results/:
a result file added or changed without regenerating it fails here."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_results_md_is_current():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "make_results.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.strip() or proc.stdout.strip()
