import sys

from ci_tools.cli import main

sys.exit(main())
