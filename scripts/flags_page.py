"""Writes docs/FLAGS.md from the configs themselves: every preset with what it trains, and every
field of every part (trainer, batch, encoder, each data family's, each method's) with its default
and its help text, so the page cannot drift from the code. ``tests/test_flags_page.py`` fails
when the committed page differs from what this writes. The Markdown is ``abc_tf flags``'s
(abc_tf.cli.flags), which also writes one method's or data family's section for a plug-in.

  python -m scripts.flags_page            # rewrite docs/FLAGS.md
  python -m scripts.flags_page --check    # exit 1 when docs/FLAGS.md is out of date
"""

from __future__ import annotations

import argparse
import os
import sys

from abc_tf.cli.flags import page

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "FLAGS.md")
__all__ = ["PAGE", "main", "page"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/FLAGS.md is out of date")
    arguments = parser.parse_args()
    text = page()
    if arguments.check:
        with open(PAGE, encoding="utf-8") as handle:
            current = handle.read()
        if current != text:
            print("docs/FLAGS.md is out of date: run python -m scripts.flags_page", file=sys.stderr)
            sys.exit(1)
        return
    with open(PAGE, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"Wrote {PAGE}")


if __name__ == "__main__":
    main()
