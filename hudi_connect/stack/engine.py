"""The container engine (Docker, or podman's Docker API) as the stack's tear-down needs it.

Kept apart from :mod:`hudi_connect.stack.containers` so that stopping any service,
local or containerised, needs no import of the Docker backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence


def remove_containers(ids: Sequence[str]) -> None:
    """Force-remove containers and their anonymous volumes; ones already gone are skipped."""
    if not ids:
        return
    import docker
    from docker.errors import NotFound

    client = docker.from_env()
    try:
        for container_id in ids:
            with contextlib.suppress(NotFound):
                client.api.remove_container(container_id, force=True, v=True)
    finally:
        client.close()
