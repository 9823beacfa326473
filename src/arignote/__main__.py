import sys

from arignote.cli import main

sys.exit(main())
