import sys

from gradlab.frontends.cli import main, stopped

try:
    code = main()
except KeyboardInterrupt as e:    # Ctrl-C as main returns: the same one line and exit status as during the run
    code = stopped(e)
sys.exit(code)
