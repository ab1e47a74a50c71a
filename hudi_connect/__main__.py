import sys

from hudi_connect.cli import main

sys.exit(main())
