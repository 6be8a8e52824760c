"""A full disk (issue 14, point 5), on a real small filesystem: a tmpfs mounted for the test
(skipped, with the reason, where mounting is not allowed). The actor holds the robot and
recovers when acknowledgements or the operator free space, or exits non-zero with its outbox
intact; the learner's ingest log and checkpoints say so in one line and go on."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest
from process_helpers import SMALL_AGENT, Processes
from test_hardening_files import cli_in_process
from transport_fixtures import drain, free_endpoint, make_client, make_server, transition, wait_for

from robot_rl.data.durable_log import DurableLog
from robot_rl.transport.ingest_log import IngestLog
from robot_rl.transport.outbox import Outbox


@pytest.fixture
def small_disk(tmp_path):
    """A mount factory: ``small_disk(kib)`` is a fresh tmpfs of that size."""
    mounted = []

    def mount(kib: int) -> Path:
        path = tmp_path / f"disk-{len(mounted)}"
        path.mkdir()
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {result.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Take the free space of ``disk`` but ``leave`` bytes; returns the filler to delete."""
    path = disk / f"filler-{uuid.uuid4().hex[:6]}"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(path, "wb", buffering=0) as file:
        remaining = max(free - leave, 0)
        try:
            while remaining > 0:
                remaining -= file.write(b"\0" * min(remaining, 1 << 20))
        except OSError as err:
            assert err.errno == errno.ENOSPC
    return path


def test_a_durable_append_on_a_full_disk_fails_whole_and_can_be_retried(small_disk):
    disk = small_disk(256)
    log = DurableLog(disk / "x.log", {"k": 1}, fsync="never")
    rng = np.random.default_rng(0)
    records = []
    filler = fill(disk, leave=40_000)
    with pytest.raises(OSError) as failure:
        while True:
            record = {"a": rng.integers(0, 255, 6000, dtype=np.uint8)}  # partial writes happen
            log.append(record)
            records.append(record)
    assert failure.value.errno == errno.ENOSPC
    size = (disk / "x.log").stat().st_size
    filler.unlink()
    log.append({"a": np.arange(3, dtype=np.uint8)})  # the same log goes on
    log.close()
    assert (disk / "x.log").stat().st_size > size
    back = list(DurableLog(disk / "x.log", {"k": 1}))
    assert len(back) == len(records) + 1
    for got, want in zip(back, records, strict=False):
        np.testing.assert_array_equal(got["a"], want["a"])


def test_an_outbox_on_a_full_disk_frees_acknowledged_segments_and_numbers_on(small_disk):
    disk = small_disk(256)
    box = Outbox(disk / "outbox", segment_size=1000, ack_persist_interval=0.0)
    filler = fill(disk, leave=30_000)
    appended = 0
    with pytest.raises(OSError):
        while True:
            box.append(transition(appended) + os.urandom(500))
            appended += 1
    assert box.next_seq == appended > 0
    box.ack(appended)  # the learner confirms everything: the (active) segment goes
    last = transition(appended) + os.urandom(500)
    box.append(last)  # and there is room again
    assert box.next_seq == appended + 1 and box.backlog == 1
    box.close()
    filler.unlink()
    again = Outbox(disk / "outbox")
    assert again.next_seq == appended + 1 and again.acked == appended
    assert again.read(0, 10) == [last]
    again.close()


def test_the_learner_does_not_acknowledge_what_its_full_ingest_log_cannot_hold(
    small_disk, tmp_path, caplog
):
    disk = small_disk(512)
    endpoint = free_endpoint()
    server = make_server(endpoint, disk / "ingest")
    client = make_client(endpoint, "a0", tmp_path / "outbox", resend_after=0.5)
    try:
        for i in range(10):
            client.outbox.append(transition(i))
        wait_for(lambda: client.outbox.backlog == 0, what="acknowledged while there is space")
        filler = fill(disk)
        for i in range(10, 40):
            client.outbox.append(transition(i))
        wait_for(lambda: server.refused["ingest log write failed"] >= 2, timeout=30,
                 what="the failed writes counted")  # fmt: skip
        # what still fit (the ingest file's last allocated page may take a record or two) is
        # acknowledged; what did not is not, and the actor keeps it without being refused
        held = client.outbox.acked
        assert 10 <= held < 40 and client.data_refused is None
        assert any("the disk is full" in r.getMessage() for r in caplog.records)
        filler.unlink()  # the operator frees space
        wait_for(lambda: client.outbox.backlog == 0, timeout=60, what="acknowledged again")
        assert [s for _, s, _ in drain(server)] == list(range(40))
    finally:
        client.stop()
        server.stop()
    logged = [
        s + k for _, s, items in IngestLog(disk / "ingest").batches() for k in range(len(items))
    ]
    assert logged == list(range(40))  # whole records only, each once


# ----------------------------------------------------------------- real actor processes


def _pick_cube_server(endpoint: str, ingest_dir: Path):
    from robot_rl.agents.checkpoint import config_to_json
    from robot_rl.agents.config import AgentConfig
    from robot_rl.envs.task import make_task
    from robot_rl.runtime.actor import ActorConfig
    from robot_rl.transport.server import TransportServer

    cfg = ActorConfig(task="pick_cube")
    task = make_task(cfg.task, **cfg.task_options(cfg.task))
    agent = AgentConfig(num_critics=2, hidden_dims=(32, 32))
    return TransportServer(
        endpoint,
        task="pick_cube",
        observation_space=task.observation_space(),
        action_space=task.action_space(),
        welcome_info={"agent_config": config_to_json(agent), "seed": 0, "frozen_trunk": None},
        ingest_log=IngestLog(ingest_dir, fsync="never"),
    ).start()


def _actor(endpoint, outbox, steps, *extra):
    """``robot-rl actor`` in this process: its exit code and output are the process's."""
    result = cli_in_process(
        "actor", "--task", "pick_cube", "--learner", endpoint, "--actor-id", "robot",
        "--outbox-dir", str(outbox), "--total-steps", str(steps), "--speedup", "0",
        "--log-every", "0.5", "--flush-timeout", "120", *extra,
    )  # fmt: skip
    return result.returncode, result.stdout, result.stdout + result.stderr


def test_an_actor_on_a_full_disk_holds_then_exits_intact_then_recovers(small_disk, tmp_path):
    disk = small_disk(1024)
    outbox = disk / "outbox"
    filler = fill(disk, leave=120_000)
    endpoint = free_endpoint()
    server = None
    try:
        # No learner, the disk fills: the actor holds, then gives up non-zero, data intact.
        code, _, out = _actor(endpoint, outbox, 100_000, "--disk-full-timeout", "1.5")
        assert code == 1, out
        assert "holding the robot" in out and "stopping with the outbox intact" in out
        assert "Traceback" not in out
        stored = Outbox(outbox)
        held = stored.next_seq
        assert held > 0 and stored.backlog == held
        stored.close()
        # Restarted on the still full disk, it appends first, holds, and the learner's
        # acknowledgements make room: it goes on and delivers everything.
        server = _pick_cube_server(endpoint, tmp_path / "ingest")
        code, stdout, out = _actor(endpoint, outbox, held + 150)
        assert code == 0, out
        assert "Traceback" not in out
        assert json.loads(stdout.strip().splitlines()[-1])["unacknowledged"] == 0
        assert [s for _, s, _ in drain(server)] == list(range(held + 150))
    finally:
        if server is not None:
            server.stop()
        filler.unlink(missing_ok=True)


def test_the_learner_s_checkpoints_on_a_full_disk_cost_one_line(small_disk, tmp_path):
    disk = small_disk(64 * 1024)
    run_dir = disk / "learner"
    endpoint = free_endpoint()
    procs = Processes(tmp_path)
    learner = procs.start(
        "learner", "learner", "--task", "pick_cube", "--bind", endpoint, "--run-dir",
        str(run_dir), "--demos", "0", "--total-steps", "0", "--start-steps", "100000",
        "--checkpoint-interval", "0.3", "--log-every", "0.5", *SMALL_AGENT,
    )  # fmt: skip
    fillers = []
    try:
        learner.wait_for(lambda: "learner pick_cube on" in learner.output(), 240, "start")
        learner.wait_for(lambda: (run_dir / "checkpoints").is_dir(), 60, "a checkpoint")
        fillers.append(fill(disk))
        learner.wait_for(lambda: "checkpoint failed" in learner.output(), 60, "the failure")
        fillers.pop().unlink()
        learner.wait_for(lambda: "checkpoint written again" in learner.output(), 60, "recovery")
        fillers.append(fill(disk))
        learner.wait_for(
            lambda: learner.output().count("checkpoint failed") >= 2, 60, "the second failure"
        )
        learner.kill(signal.SIGTERM)  # the final checkpoint cannot be written either
        code = learner.popen.returncode
        out = learner.output()
        assert code == 1, out
        assert out.count("checkpoint failed") == 2  # one line per failing stretch
        assert "final checkpoint could not be written" in out and "--resume" in out
        assert "Traceback" not in out
        assert not list((run_dir / "checkpoints").glob(".tmp_step_*"))  # space given back
    finally:
        procs.close()
        for filler in fillers:
            filler.unlink(missing_ok=True)
