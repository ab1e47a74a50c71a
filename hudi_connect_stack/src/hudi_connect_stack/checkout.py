"""Where the stack finds the repository files it does not ship: the container build files (``testcontainers/``)
and the shared fixture tables beside the checkout.

An editable install (``pip install -e ./hudi_connect_stack``, as ``ci/setup.sh`` does) runs from the checkout;
an installed wheel names one with ``HUDI_CONNECT_CHECKOUT``.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT_ENV = "HUDI_CONNECT_CHECKOUT"
# hudi_connect_stack/src/hudi_connect_stack/checkout.py: three folders below the repository's root
_SOURCE_CHECKOUT = Path(__file__).resolve().parents[3]


def checkout_root() -> Path:
    """The hudi-connect checkout: ``$HUDI_CONNECT_CHECKOUT``, else the one this package was installed from."""
    configured = os.environ.get(CHECKOUT_ENV)
    return Path(configured) if configured else _SOURCE_CHECKOUT


def container_build_files() -> Path:
    """The folder of the services' container build files (``testcontainers/``), or FileNotFoundError naming
    what to set."""
    folder = checkout_root() / "testcontainers"
    if not (folder / "services.toml").is_file():
        raise FileNotFoundError(
            f"the container build files are not at {folder}: the container backend needs a checkout of "
            f"hudi-connect (set {CHECKOUT_ENV} to one)")
    return folder
