"""`robot-rl report RUN_DIR`: learning curves and tables of a run as PNG/HTML."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tyro
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from robot_rl.errors import UserError


@dataclass
class ReportConfig:
    run_dir: tyro.conf.Positional[str]
    """A run directory: the --run-dir of robot-rl train, learner or up."""
    out: str | None = None
    """Where to write report.html and curves.png; default: the run directory."""
    open_html: bool = False
    """Open report.html in the default web browser once it is written."""


def run(config: ReportConfig) -> int:
    from robot_rl.runtime.run_report import (
        EVAL_HEADERS,
        eval_rows,
        load_run,
        missing,
        write_report,
    )

    console = Console(soft_wrap=True)
    try:
        result = load_run(config.run_dir)
    except OSError as err:
        raise UserError(str(err)) from None
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    console.print(f"[bold]report[/] {escape(result.title)}: {result.kind}")
    if result.evals:
        table = Table(*EVAL_HEADERS, title="evaluations")
        for row in eval_rows(result.evals):
            table.add_row(*row)
        console.print(table)
    for note in missing(result):
        console.print(f"missing: {escape(note)}")
    out_dir = Path(config.out) if config.out else result.root
    try:
        written = write_report(result, out_dir)
    except OSError as err:
        raise UserError(f"cannot write the report to {out_dir}: {err}") from None
    console.print(f"written: {written['report']}")
    if written["curves"]:
        console.print(f"written: {written['curves']}")
    if config.open_html:
        import webbrowser

        webbrowser.open(written["report"].absolute().as_uri())
    return 0
