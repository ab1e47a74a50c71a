"""The resident memory of a local server, read from ``/proc``: the stack starts each server in a session of its
own, so a server's processes are its session's (its JVM, and the Python workers the JVM forks)."""

from __future__ import annotations

import os

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def session_processes(session: int) -> dict[int, tuple[str, int, int]]:
    """pid: (command name, parent pid, resident KB) of each process in ``session``."""
    processes = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # exited meanwhile
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if int(rest[3]) == session:  # the fields after the name: state ppid pgrp session ... rss (the 22nd)
            processes[int(entry.name)] = (name, int(rest[1]), int(rest[21]) * PAGE_KB)
    return processes


def _under_jvm(pid: int, processes: dict[int, tuple[str, int, int]]) -> bool:
    while pid in processes:
        name, parent, _ = processes[pid]
        if name == "java":
            return True
        pid = parent
    return False


def resident_mb(session: int) -> tuple[float, float]:
    """The resident memory (MB) of a local server's JVM and of its Python workers now."""
    jvm = python = 0  # the Python workers are the JVM's descendants (its daemon and the daemon's forks)
    processes = session_processes(session)
    for name, parent, kb in processes.values():
        if name == "java":
            jvm += kb
        elif name.startswith("python") and _under_jvm(parent, processes):
            python += kb
    return jvm / 1024, python / 1024


def own_resident_mb() -> float:
    """This process's resident memory (MB)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_KB / 1024
