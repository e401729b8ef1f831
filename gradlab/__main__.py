import sys

from gradlab.frontends.cli import main

try:
    code = main()
except KeyboardInterrupt:         # Ctrl-C as main returns: the same one line and exit status as during the run
    print("gradlab: interrupted", file=sys.stderr)
    code = 130
sys.exit(code)
