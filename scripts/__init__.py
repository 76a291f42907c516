"""Studies and demos, each run from the repository root as ``python -m scripts.NAME`` (RESULTS.md)."""
