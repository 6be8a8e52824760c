"""Two stacks on one machine (issue 28 point 3): each learner binds a port of its own, chosen
free or, when given and taken, refused in one line naming the port and the option; and an actor
never joins another stack's learner, because its hello names its stack and the learner checks."""

from __future__ import annotations

import socket

import pytest
from transport_fixtures import free_endpoint, hello, make_client, make_server, wait_for

from robot_rl.launch_support import describe, learner_endpoint
from robot_rl.stack import StackConfig, stack_processes


def test_a_taken_port_is_refused_in_one_line_naming_it_and_the_option():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError) as err:
            learner_endpoint(f"tcp://127.0.0.1:{port}", "--port")
    message = str(err.value)
    assert "\n" not in message
    assert f"port {port}" in message and "--port" in message and "in use" in message


def test_no_port_or_port_zero_is_a_free_one_and_a_free_given_port_is_kept():
    chosen = {learner_endpoint(None, "learner:=") for _ in range(3)}
    assert all(e.startswith("tcp://127.0.0.1:") and not e.endswith(":0") for e in chosen)
    assert not learner_endpoint("tcp://127.0.0.1:0", "learner:=").endswith(":0")
    free = free_endpoint()
    assert learner_endpoint(free, "learner:=") == free


def test_launch_files_take_a_free_port_and_a_run_folder_of_their_own(tmp_path):
    """Two sim launches with default arguments: different learner ports and run folders."""
    first, second = (
        {p.role: p for p in describe("sim", ("actor", "learner"), {})} for _ in range(2)
    )
    assert first["learner"].config.bind != second["learner"].config.bind
    assert first["actor"].config.learner == first["learner"].config.bind
    assert first["learner"].config.run_dir != second["learner"].config.run_dir
    # a file that starts only one side names the other's default address
    robot = describe("robot", ("nodes", "actor"), {"hardware": "hardware/fr3_sim.yaml"})
    (actor,) = [p for p in robot if p.role == "actor"]
    assert actor.config.learner == "tcp://127.0.0.1:5555" and actor.config.stack is None


def test_actor_and_learner_of_one_stack_share_its_id_and_other_stacks_differ(tmp_path):
    def roles(run_dir: str, endpoint: str):
        cfg = StackConfig(run_dir=str(tmp_path / run_dir), learner_endpoint=endpoint)
        return {p.role: p.config for p in stack_processes(cfg, ("actor", "learner"))}

    one = roles("a", "tcp://127.0.0.1:6001")
    assert one["actor"].stack == one["learner"].stack is not None
    assert roles("b", "tcp://127.0.0.1:6001")["actor"].stack != one["learner"].stack
    assert roles("a", "tcp://127.0.0.1:6002")["actor"].stack != one["learner"].stack


def test_a_learner_refuses_an_actor_of_another_stack(tmp_path):
    """The case of the issue: the same actor id ('sim-pick_cube') on the same task, another
    stack's learner at the address; refused with a reason, never welcomed."""
    endpoint = free_endpoint()
    server = make_server(endpoint, tmp_path / "ingest", stack="sim-toy-aaaa")
    stranger = make_client(
        endpoint, "sim-toy", tmp_path / "o1", hello={**hello(), "stack": "sim-toy-bbbb"}
    )
    unnamed = make_client(endpoint, "sim-toy-2", tmp_path / "o2")
    own = make_client(
        endpoint, "sim-toy-3", tmp_path / "o3", hello={**hello(), "stack": "sim-toy-aaaa"}
    )
    try:
        wait_for(lambda: stranger.refused_reason is not None, what="a refusal")
        wait_for(lambda: unnamed.refused_reason is not None, what="a refusal")
        wait_for(lambda: own.connected, what="the stack's own actor welcomed")
        assert "another stack's learner" in stranger.refused_reason
        assert not stranger.connected and not unnamed.connected
        assert server.connected_actors == ["sim-toy-3"]
    finally:
        for client in (stranger, unnamed, own):
            client.stop()
        server.stop()
