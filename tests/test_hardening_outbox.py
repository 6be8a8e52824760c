"""Issue 27, point 4: an outbox whose acknowledgement record is impossible (beyond what the log
holds, or unreadable) refuses to start with one line naming the file and a non-zero exit;
``robot-rl actor --repair-outbox`` keeps the intact records of a damaged segment, says how many
were dropped, and the learner then gets every kept transition once (a real server and client)."""

from __future__ import annotations

import json

import pytest
from process_helpers import run_cli
from transport_fixtures import drain, free_endpoint, make_client, make_server, transition, wait_for

from robot_rl.data.durable_log import SYNC
from robot_rl.transport.outbox import ACKED_FILE, Outbox, OutboxDamaged, repair


def _outbox(directory, count: int, segment_size: int = 100) -> None:
    box = Outbox(directory, segment_size=segment_size)
    for i in range(count):
        box.append(transition(i))
    box.close()


def _damage_record(path, index: int) -> None:
    """Flip bytes inside the payload of the ``index``-th record (0: the first after the
    header) of a durable log: its CRC fails, the records around it stay intact."""
    data = bytearray(path.read_bytes())
    starts = []
    at = data.find(SYNC)
    while at != -1:
        starts.append(at)
        at = data.find(SYNC, at + 1)
    start = starts[1 + index]  # starts[0] is the header
    for k in range(start + 40, start + 48):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))


def _actor(tmp_path, outbox, *args) -> tuple[int, str]:
    result = run_cli(
        "actor", "--task", "pick_cube", "--learner", free_endpoint(), "--actor-id", "a",
        "--outbox-dir", str(outbox), "--total-steps", "1", "--flush-timeout", "1", *args,
        cwd=tmp_path,
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def _in_process_actor(outbox, capsys, **options) -> tuple[int, str]:
    """``robot-rl actor``'s main in this process (what the CLI runs, without its start-up)."""
    from robot_rl.runtime.actor import ActorConfig
    from robot_rl.runtime.actor_main import actor_main

    config = ActorConfig(
        task="pick_cube", learner=free_endpoint(), actor_id="a", outbox_dir=str(outbox),
        total_steps=1, flush_timeout=1.0, **options,
    )  # fmt: skip
    code = actor_main(config)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_an_impossible_acknowledgement_record_refuses_to_start_in_one_line(tmp_path):
    outbox = tmp_path / "outbox"
    _outbox(outbox, 300)
    (outbox / ACKED_FILE).write_text(json.dumps({"acked": 99999999999}))
    code, out = _actor(tmp_path, outbox)
    assert code == 1, out
    lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(outbox / ACKED_FILE) in lines[0], out
    assert "impossible" in lines[0] and "--repair-outbox" in lines[0]
    assert "Traceback" not in out and "unacknowledged" not in out
    # the outbox is untouched: all 300 still wait
    with pytest.raises(OutboxDamaged):
        Outbox(outbox)


@pytest.mark.parametrize("text", ["{not json", '{"acked": -3}', '{"acked": "12"}', "[]", ""])
def test_an_unreadable_acknowledgement_record_refuses_to_open(tmp_path, text):
    outbox = tmp_path / "outbox"
    _outbox(outbox, 5)
    (outbox / ACKED_FILE).write_text(text)
    with pytest.raises(OutboxDamaged, match=rf"{ACKED_FILE} is unreadable .*--repair-outbox"):
        Outbox(outbox)


def test_repair_keeps_intact_records_says_what_it_dropped_and_the_learner_gets_them(
    tmp_path, capsys
):
    outbox = tmp_path / "outbox"
    _outbox(outbox, 300)
    _damage_record(outbox / "seg-000000000100.log", 10)  # sequence 110, a closed segment
    _damage_record(outbox / "seg-000000000200.log", 50)  # sequence 250, the active one
    with pytest.raises(OutboxDamaged, match=r"seg-000000000100.log.*middle.*--repair-outbox"):
        Outbox(outbox)  # the first damaged segment is named, though it is a closed one
    code, out = _in_process_actor(outbox, capsys, repair_outbox=True)
    assert code == 0, out
    assert "kept 298 intact transitions, dropped 2 from 2 damaged segment(s)" in out, out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["dropped_ranges"] == [[110, 111], [250, 251]]
    # repaired: it opens, numbers on after the last kept, and a learner gets each kept one once
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a", outbox, resend_after=0.5)
    try:
        assert client.outbox.next_seq == 300 and client.outbox.backlog == 300
        wait_for(lambda: client.outbox.backlog == 0, timeout=60, what="all kept ones acknowledged")
        got = [seq for _, seq, _ in drain(server)]
        assert got == [s for s in range(300) if s not in (110, 250)]
        assert client.outbox.append(transition(300)) == 300
        wait_for(lambda: client.outbox.backlog == 0, what="the next one after the repair")
    finally:
        client.stop()
        server.stop()


def test_repair_resets_an_impossible_record_and_nothing_is_lost(tmp_path):
    outbox = tmp_path / "outbox"
    _outbox(outbox, 300)
    (outbox / ACKED_FILE).write_text(json.dumps({"acked": 99999999999}))
    report = repair(outbox)
    assert report["ack_reset"] and report["acked"] == 0 and report["dropped"] == 0
    assert report["kept"] == 300
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest")
    client = make_client(endpoint, "a", outbox)
    try:
        wait_for(lambda: client.outbox.backlog == 0, timeout=60, what="all 300 acknowledged")
        assert [seq for _, seq, _ in drain(server)] == list(range(300))
    finally:
        client.stop()
        server.stop()


def test_repair_of_a_sound_outbox_changes_nothing(tmp_path):
    outbox = tmp_path / "outbox"
    _outbox(outbox, 150)
    before = {p.name: p.read_bytes() for p in outbox.glob("seg-*.log")}
    report = repair(outbox)
    assert (report["kept"], report["dropped"], report["damaged_segments"]) == (150, 0, 0)
    assert {p.name: p.read_bytes() for p in outbox.glob("seg-*.log")} == before
    assert not report["ack_reset"]


def test_the_learner_s_ingest_log_is_repaired_like_an_outbox(tmp_path, capsys):
    from robot_rl.data.durable_log import DurableLogError
    from robot_rl.transport.ingest_log import IngestLog

    ingest = tmp_path / "run" / "ingest"
    log = IngestLog(ingest, fsync="never")
    for batch in range(6):
        log.append("a", 10 * batch, [transition(10 * batch + k) for k in range(10)])
    log.close()
    (segment,) = ingest.glob("ingest-*.log")
    _damage_record(segment, 2)  # the batch of sequence numbers 20-29
    with pytest.raises(DurableLogError, match="--repair-ingest-log"):
        list(IngestLog(ingest, fsync="never").batches())
    from robot_rl.commands import learner
    from robot_rl.runtime.learner import LearnerConfig

    config = LearnerConfig(run_dir=str(tmp_path / "run"), repair_ingest_log=True)
    assert learner.run(config) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "kept 5 intact batches, dropped 1 from 1 damaged segment(s)" in out
    assert "actor a lost sequence numbers 20-29" in out
    firsts = [first for _, first, _ in IngestLog(ingest, fsync="never").batches()]
    assert firsts == [0, 10, 30, 40, 50]
