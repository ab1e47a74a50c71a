"""hudi-connect's command line with a pause before each reverse-stream checkpoint.

The fault test runs ``python -m integration.paused_cli reverse-stream ...`` and kills it during the pause:
every sink is written, the checkpoint is not. The pause is injected here, in the tests, so that the library
carries no fault-injection switch.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from hudi_connect.cli import main
from hudi_connect.reverse.checkpoint import Checkpoint, CheckpointStore

PAUSE_SECONDS = 120
_advance = CheckpointStore.advance


def _advance_after_a_pause(store: CheckpointStore, previous: Checkpoint, new: Checkpoint,
                           **options: Any) -> Checkpoint:
    print(f"batch {new.sequence}: pausing {PAUSE_SECONDS}s before the checkpoint", flush=True)
    time.sleep(PAUSE_SECONDS)
    return _advance(store, previous, new, **options)


if __name__ == "__main__":
    CheckpointStore.advance = _advance_after_a_pause  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
