"""Launcher mechanics on real (tiny) processes: readiness, timeouts, log tails, tear-down."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from hudi_connect_stack.process import free_port, launch, log_tail, pid_alive, port_open, stop, wait_until_ready

from hudi_connect.core.errors import ServiceStartError


def test_free_port_can_be_bound_on_loopback() -> None:
    port = free_port()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert port_open(port)
    assert not port_open(port)


def test_readiness_timeout_names_the_service_and_shows_its_log(tmp_path: Path) -> None:
    process, popen = launch("slowpoke", ["sh", "-c", "echo booting; echo still booting; sleep 60"],
                            log=tmp_path / "slow.log")
    started = time.monotonic()
    with pytest.raises(ServiceStartError) as raised:
        wait_until_ready(process, lambda: False, timeout=1.0, popen=popen)
    assert time.monotonic() - started < 10
    message = str(raised.value)
    assert "slowpoke did not start: not ready after 1s" in message
    assert "still booting" in message
    popen.wait(timeout=20)
    assert not pid_alive(process.pid)


def test_early_exit_reports_the_exit_code_and_log(tmp_path: Path) -> None:
    process, popen = launch("crasher", ["sh", "-c", "echo 'bind: address already in use' >&2; exit 3"],
                            log=tmp_path / "crash.log")
    with pytest.raises(ServiceStartError, match=r"crasher did not start: the process exited with code 3"
                       r"(.|\n)*address already in use"):
        wait_until_ready(process, lambda: False, timeout=30, popen=popen)


def test_ready_process_is_returned_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    process, popen = launch("quick", ["sh", "-c", f"touch {marker}; sleep 60"], log=tmp_path / "q.log")
    try:
        wait_until_ready(process, marker.exists, timeout=30, popen=popen)
        assert pid_alive(process.pid)
    finally:
        stop(process)
        popen.wait(timeout=20)


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    process, popen = launch(
        "parent", ["sh", "-c", f"sleep 60 & echo $! > {child_pid_file}; wait"], log=tmp_path / "p.log"
    )
    deadline = time.monotonic() + 10
    while not child_pid_file.exists() or not child_pid_file.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int(child_pid_file.read_text())
    stop(process)
    popen.wait(timeout=20)
    deadline = time.monotonic() + 10
    while pid_alive(child):  # the grandchild is reparented to init and reaped there
        assert time.monotonic() < deadline, "the forked child survived stop()"
        time.sleep(0.05)


def test_log_tail_returns_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(log, 3) == "line 97\nline 98\nline 99"
    assert log_tail(tmp_path / "missing.log") == ""


def test_log_tail_keeps_the_first_errors_that_scrolled_out(tmp_path: Path) -> None:
    log = tmp_path / "jvm.log"
    lines = ["INFO starting", "ERROR Socket server failed to bind: Address already in use"]
    lines += [f"INFO shutting down step {i}" for i in range(200)]
    log.write_text("\n".join(lines) + "\n")
    excerpt = log_tail(log, 5).splitlines()
    assert excerpt[0] == "ERROR Socket server failed to bind: Address already in use"
    assert excerpt[1] == "[...]"
    assert excerpt[2:] == [f"INFO shutting down step {i}" for i in range(195, 200)]


def test_a_zombie_that_is_not_our_child_counts_as_gone() -> None:
    """A killed server's process can linger as a zombie of a parent that never reaps it (a container's bare
    PID 1): waiting for it to vanish would never end."""
    import subprocess

    parent = subprocess.Popen(["bash", "-c", "sleep 0.1 & echo $!; exec sleep 30"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        orphan = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{orphan}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not pid_alive(orphan)  # a zombie, and its parent (not us) will not reap it
        assert pid_alive(parent.pid)
    finally:
        parent.kill()
        parent.wait()
