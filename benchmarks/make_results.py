"""Write ``benchmarks/RESULTS.md`` from the result files under ``benchmarks/results/``.

    python benchmarks/make_results.py           # regenerate RESULTS.md
    python benchmarks/make_results.py --check   # exit 1 if RESULTS.md is stale

One section per results folder; in it, one entry per result file (``*.jsonl``: one JSON object
per line; ``*.json``: one JSON object) with its path, the command it records (a ``command`` or
``benchmark`` field) and its figures. Records with the same fields are shown as one table
(fields as its rows when it has more than ``WIDE_TABLE`` columns and no more records), fields
equal in every row of a table are stated once above it, a lone record is a list. Scalar fields
are shown as recorded (never rounded again); nested objects are flattened (``parent.child``);
lists of up to four scalars are shown inline, a ``columns`` list beside lists of rows of its
width as a table; other lists are named, not shown. Files of more than ``LONG_FILE`` records
show their first and last three. Other files in a folder (notes, logs, figures) are linked.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"

# What each folder holds and which script wrote it; the only hand-written text in RESULTS.md.
FOLDERS = {
    "car_cell_workflow": "FastRLAP's workflow in the simulated car cell "
    "(`benchmarks/car_cell_workflow.py`): record a lap, operator demos, `up robot`, `eval`.",
    "car_pixels": "car_lap from the forward camera on the twin (`benchmarks/car_pixels.py`): "
    "lap time and crash rate per seed and step count, the scripted expert, cost per step.",
    "cell_control_loop": "The robot-mode control loop in the simulated FR3 cell "
    "(`benchmarks/cell_control_loop.py`): stale steps, control period, command age.",
    "control_loop": "The actor's control loop in the simulated FR3 cell with the learner beside "
    "it (`benchmarks/control_loop.py`): period, frame-to-command age, inference, per encoder.",
    "distributed_equivalence": "Actor and learner processes against the in-process loop "
    "(`benchmarks/distributed_equivalence.py`), pick_cube, 50-episode evaluations.",
    "fr3_cell": "One `robot-rl up robot --hardware hardware/fr3_sim.yaml` run in the simulated "
    "FR3 cell (no script; the command is recorded in the file): success by episode window.",
    "fr3_cell_workflow": "The HIL-SERL robot workflow in the simulated FR3 cell, or the SO-101 "
    "cell for files named `so101_*` (`benchmarks/fr3_cell_workflow.py [--cell so101]`), stage by "
    "stage; one file per run.",
    "gym_hil": "gym_hil's PandaPickCubeBase-v0 through `robot-rl train --backend gym` "
    "(`benchmarks/gym_hil.py`): state, and images (`--env-kwargs image_obs=True --cameras front "
    "wrist`), with 20 demos from the scripted picker (`--expert`); `*_no_demos_*`: without "
    "demonstrations. One file per run, its summary record with the command and LeRobot's "
    "published figure.",
    "learner": "Learner update throughput and its roofline (`benchmarks/learner.py`); "
    "`xla_flags.jsonl` was written by `benchmarks/learner_flags.py`, since removed.",
    "loop_speed": "`train`'s and the learner's loops against the pure update rate "
    "(`benchmarks/loop_speed.py`).",
    "main_job": "`bash scripts/train.sh` runs and the main job's learner recipes "
    "(`benchmarks/main_job_learner.py`); each record says its command.",
    "pixel_learning": "pick_cube from front and wrist pixels on the twin "
    "(`benchmarks/pixel_learning.py`): (a) ground-truth reward, (b) the reward classifier.",
    "pixels_vs_torch": "The pixel SAC update against a PyTorch one of the same configuration "
    "(`benchmarks/pixels_vs_torch.py`, `benchmarks/torch_sac_baseline.py`).",
    "replay": "Replay insert, sample and memory against SERL's buffer (`benchmarks/replay.py`).",
}

LONG_FILE = 30  # records; a longer file shows its first and last three
INLINE_LIST = 4  # lists of at most this many scalars are shown inline
LONG_STRING = 80  # strings longer than this leave a table and are listed under it
WIDE_TABLE = 10  # a table with more columns than this and no more rows has fields as its rows
COMMAND_KEYS = ("command", "benchmark")
RESULT_SUFFIXES = (".jsonl", ".json")


def is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def show(value) -> str:
    """A value as recorded: JSON's own text for numbers, booleans, null and short lists."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list):
        text = json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    else:
        text = json.dumps(value)
    return text.replace("|", "\\|").replace("\n", " ")


def short_list(value) -> bool:
    return isinstance(value, list) and len(value) <= INLINE_LIST and all(map(is_scalar, value))


def flatten(record: dict, prefix: str = "") -> tuple[dict, list[str]]:
    """Scalar fields, nested objects' fields as ``parent.child`` (at any depth), and the names
    of the fields left out because they are too large to show."""
    fields: dict = {}
    left_out: list[str] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if is_scalar(value) or short_list(value):
            fields[name] = value
        elif isinstance(value, dict):
            inner, inner_left_out = flatten(value, f"{name}.")
            fields.update(inner)
            left_out += inner_left_out
        else:
            left_out.append(name)
    return fields, left_out


def column_tables(record: dict) -> list[tuple[str, list[str], list[list]]]:
    """A record's tables: a ``columns`` list of names beside lists of rows of that width."""
    columns = record.get("columns")
    if not (isinstance(columns, list) and columns and all(isinstance(c, str) for c in columns)):
        return []
    return [
        (key, columns, value)
        for key, value in record.items()
        if key != "columns"
        and isinstance(value, list)
        and value
        and all(isinstance(row, list) and len(row) == len(columns) for row in value)
        and all(is_scalar(cell) for row in value for cell in row)
    ]


def render_table(key: str, columns: list[str], rows: list[list]) -> list[str]:
    out = [f"`{key}`:", ""]
    out.append("| " + " | ".join(f"`{c}`" for c in columns) + " |")
    out.append("|---" * len(columns) + "|")
    out += ["| " + " | ".join(show(cell) for cell in row) + " |" for row in rows]
    return [*out, ""]


def read_records(path: Path) -> tuple[list[dict], list[str]]:
    """The JSON objects of a result file, and a note per line that is not one."""
    text = path.read_text(encoding="utf-8")
    problems: list[str] = []
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            return [], [f"not JSON: {e}"]
        return ([data] if isinstance(data, dict) else [{"value": data}]), problems
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"line {number} is not JSON: {e}")
            continue
        records.append(data if isinstance(data, dict) else {"value": data})
    return records, problems


def commands(records: list[dict]) -> list[str]:
    seen: list[str] = []
    for record in records:
        for key in COMMAND_KEYS:
            value = record.get(key)
            if isinstance(value, str) and " " in value and value not in seen:
                seen.append(value)
    return seen


def without_commands(fields: dict) -> dict:
    return {
        k: v
        for k, v in fields.items()
        if not (k in COMMAND_KEYS and isinstance(v, str) and " " in v)
    }


def render_group(rows: list[dict]) -> list[str]:
    """Records with the same fields: a list for one, a table for several."""
    if len(rows) == 1:
        return ["- " + " · ".join(f"`{k}`: {show(v)}" for k, v in rows[0].items()), ""]
    keys = list(rows[0])
    same = [k for k in keys if all(row[k] == rows[0][k] for row in rows)]
    varying = [k for k in keys if k not in same]
    long = [
        k for k in varying if any(isinstance(r[k], str) and len(r[k]) > LONG_STRING for r in rows)
    ]
    columns = [k for k in varying if k not in long]
    out = []
    if same:
        out += ["Same in every row: " + " · ".join(f"`{k}`: {show(rows[0][k])}" for k in same), ""]
    if columns and len(columns) > WIDE_TABLE and len(rows) <= len(columns):
        out.append("| field | " + " | ".join(f"row {n}" for n in range(1, len(rows) + 1)) + " |")
        out.append("|---" * (len(rows) + 1) + "|")
        for k in columns:
            out.append(f"| `{k}` | " + " | ".join(show(row[k]) for row in rows) + " |")
        out.append("")
    elif columns:
        out.append("| row | " + " | ".join(f"`{k}`" for k in columns) + " |")
        out.append("|---" * (len(columns) + 1) + "|")
        for number, row in enumerate(rows, 1):
            out.append(f"| {number} | " + " | ".join(show(row[k]) for k in columns) + " |")
        out.append("")
    for number, row in enumerate(rows, 1):
        for k in long:
            out.append(f"- row {number}, `{k}`: {show(row[k])}")
    if long:
        out.append("")
    return out


def render_file(path: Path) -> list[str]:
    rel = path.relative_to(RESULTS_DIR).as_posix()
    out = [f"### [`{rel}`](results/{rel})", ""]
    records, problems = read_records(path)
    out += [f"- {p}" for p in problems]
    count = len(records)
    out.append(f"{count} record{'s' if count != 1 else ''}.")
    if count > LONG_FILE:
        records = records[:3] + records[-3:]
        out[-1] += " The first three and the last three are shown."
    out.append("")
    for command in commands(records):
        out += ["```", command, "```", ""]
    tables = [table for record in records for table in column_tables(record)]
    shown = {"columns"} | {key for key, _, _ in tables} if tables else set()
    flat = [flatten({k: v for k, v in r.items() if k not in shown}) for r in records]
    left_out = sorted({name for _, names in flat for name in names})
    groups: dict[tuple, list[dict]] = {}
    for fields, _ in flat:
        fields = without_commands(fields)
        if fields:
            groups.setdefault(tuple(fields), []).append(fields)
    for rows in groups.values():
        out += render_group(rows)
    for key, columns, rows in tables:
        out += render_table(key, columns, rows)
    if left_out:
        out += ["Not shown (long lists): " + ", ".join(f"`{n}`" for n in left_out), ""]
    return out


def render_folder(folder: Path) -> list[str]:
    name = folder.name
    out = [f"## {name}", ""]
    if name in FOLDERS:
        out += [FOLDERS[name], ""]
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    others = [p for p in files if p.suffix not in RESULT_SUFFIXES]
    if others:
        links = ", ".join(
            f"[`{p.relative_to(RESULTS_DIR).as_posix()}`]"
            f"(results/{p.relative_to(RESULTS_DIR).as_posix()})"
            for p in others
        )
        out += [f"Other files: {links}.", ""]
    for path in files:
        if path.suffix in RESULT_SUFFIXES:
            out += render_file(path)
    return out


def generate() -> str:
    lines = [
        "# Benchmark results",
        "",
        "Generated by `python benchmarks/make_results.py` from the files under "
        "`benchmarks/results/`; do not edit by hand (`--check` tells whether it is current). "
        "What the figures mean, and how they were measured, is in [FINDINGS.md](FINDINGS.md).",
        "",
    ]
    folders = sorted(p for p in RESULTS_DIR.iterdir() if p.is_dir())
    lines += [f"- [{p.name}](#{p.name})" for p in folders]
    lines.append("")
    for folder in folders:
        lines += render_folder(folder)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if RESULTS.md is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else None
        if current != text:
            print(
                "benchmarks/RESULTS.md is stale: run python benchmarks/make_results.py",
                file=sys.stderr,
            )
            return 1
        return 0
    RESULTS_MD.write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS_MD.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
