"""The no-server unit tests run beside the stack's provisioning in CI (``ci/test.sh``): none may read or write its
cache, where a half-resolved jar set would race the provisioning's own."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_shared_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache of the test's own: what a test provisions by mistake lands there, not in the run's."""
    cache = tmp_path_factory.mktemp("hudi-connect-cache")
    monkeypatch.setenv("HUDI_CONNECT_CACHE", str(cache))
    return cache
