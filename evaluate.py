"""``python evaluate.py [flags]`` in a checkout: the command ``abc_tf evaluate`` (abc_tf/cli/evaluate.py)."""

import sys

from abc_tf.cli import evaluate

if __name__ == "__main__":
    sys.exit(evaluate.command(sys.argv))
