"""Run directories: training, checkpoints, exports, and loading a finished run (docs/ARCHITECTURE.md)."""
