"""``python compare.py [flags]`` in a checkout: the command ``abc_tf compare`` (abc_tf/cli/compare.py)."""

import sys

from abc_tf.cli import compare

if __name__ == "__main__":
    sys.exit(compare.command(sys.argv))
