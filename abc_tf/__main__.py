"""``python -m abc_tf <command> [flags]``: the installed ``abc_tf`` command (abc_tf.cli)."""

import sys

from abc_tf.cli import main

if __name__ == "__main__":
    sys.exit(main())
