"""The `ede` console script: the viewer or a subcommand, run by the extension in this process."""

import signal
import sys

from ede import _ede


def main() -> int:
    # Python's Ctrl-C handler only sets a flag that Rust never reads: let SIGINT end the
    # process as it ends the native binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return _ede.main(sys.argv)
