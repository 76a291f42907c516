"""``python grid.py [flags]`` in a checkout: the command ``abc_tf grid`` (abc_tf/cli/grid.py)."""

import sys

from abc_tf.cli import grid

if __name__ == "__main__":
    sys.exit(grid.command(sys.argv))
