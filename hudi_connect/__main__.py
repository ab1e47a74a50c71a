"""``python -m hudi_connect``: the ``hudi-connect`` command line (:func:`hudi_connect.cli.main`)."""

import sys

from hudi_connect.cli import main

sys.exit(main())
