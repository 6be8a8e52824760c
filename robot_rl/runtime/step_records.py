"""Reading a run's JSON-lines records (``metrics.jsonl``, ``eval.jsonl``): one reader for the
curves and the report, tolerant of the torn last line a killed run leaves."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: Path, warnings: list[str]) -> list[dict]:
    """The JSON objects of a JSON-lines file that have a "step"; others are skipped, warned."""
    if not path.is_file():
        return []
    lines = path.read_text(errors="replace").splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            torn = (
                " (a torn last line: the run was stopped mid-write)" if number == len(lines) else ""
            )
            warnings.append(f"{path}: line {number}: malformed JSON skipped ({err.msg}){torn}")
            continue
        if not isinstance(record, dict) or not isinstance(record.get("step"), (int, float)):
            warnings.append(f"{path}: line {number}: no numeric 'step', skipped")
            continue
        records.append(record)
    return records
