import sys

from gradlab.frontends.cli import main

sys.exit(main())
