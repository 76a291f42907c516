"""``python curves.py [flags]`` in a checkout: the command ``abc_tf curves`` (abc_tf/cli/curves.py)."""

import sys

from abc_tf.cli import curves

if __name__ == "__main__":
    sys.exit(curves.command(sys.argv))
