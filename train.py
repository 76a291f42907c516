"""``python train.py [flags]`` in a checkout: the command ``abc_tf train`` (abc_tf/cli/train.py)."""

import sys

from abc_tf.cli import train

if __name__ == "__main__":
    sys.exit(train.command(sys.argv))
