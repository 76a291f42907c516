"""What ``--trainer.mixed_precision`` computes in on this host.

- A GPU: ``mixed_float16``, since GPUs run float16 fast. Keras's ``compile`` wraps the optimizer in a
  ``LossScaleOptimizer``, and every method's ``train_step`` scales its loss with it. Otherwise
  float16's small range would flush small gradients to zero.
- A TPU, or a CPU with native bfloat16: ``mixed_bfloat16``. Linux lists ``avx512_bf16`` or
  ``amx_bf16`` among the CPU flags in /proc/cpuinfo. Its speed is in BENCHMARKS.md.
- Any other CPU: ``float32``, with one warning line. There bfloat16 is emulated and slower, and asking
  for the faster precision must not slow a run. It is no error, since presets such as
  ``shapes3d_pmp_quick`` turn it on and should run anywhere. Systems without /proc/cpuinfo count as
  CPUs without native bfloat16.

Embeddings and losses stay float32 under either mixed policy; each method casts them.
:func:`choose` takes the host as an argument, so tests and benchmarks can ask about another host.
"""

from __future__ import annotations

import dataclasses
import sys

import tensorflow as tf

NATIVE_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
CPUINFO = "/proc/cpuinfo"


@dataclasses.dataclass(frozen=True)
class Host:
    """What the choice depends on: accelerators present, and the CPU's feature flags."""

    gpu: bool = False
    tpu: bool = False
    cpu_flags: frozenset[str] = frozenset()

    @property
    def native_bfloat16(self) -> tuple[str, ...]:
        """The flags among :data:`NATIVE_BFLOAT16_FLAGS` that the CPU has."""
        return tuple(flag for flag in NATIVE_BFLOAT16_FLAGS if flag in self.cpu_flags)


@dataclasses.dataclass(frozen=True)
class Precision:
    """The chosen precision.

    policy: the Keras global policy name. reason: why, in words.
    warning: one line when ``--trainer.mixed_precision`` falls back to float32, else "".
    """

    policy: str
    reason: str
    warning: str = ""


def cpuinfo_values(field: str, path: str = CPUINFO) -> list[str]:
    """The values of every ``field`` line of /proc/cpuinfo (one per core), stripped.

    Empty on other systems or when the file cannot be read.
    """
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    values = []
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == field:
            values.append(value.strip())
    return values


def cpu_flags(path: str = CPUINFO) -> frozenset[str]:
    """The CPU's feature flags from the ``flags`` lines of /proc/cpuinfo (empty where it has none)."""
    return frozenset(flag for value in cpuinfo_values("flags", path) for flag in value.split())


def this_host() -> Host:
    """The host this process runs on, from physical devices only.

    TensorFlow stays uninitialised, so logical devices can still be configured afterwards.
    """
    return Host(
        gpu=bool(tf.config.list_physical_devices("GPU")),
        tpu=bool(tf.config.list_physical_devices("TPU")),
        cpu_flags=cpu_flags(),
    )


def choose(mixed_precision: bool, host: Host | None = None) -> Precision:
    """The precision a run with ``--trainer.mixed_precision=mixed_precision`` gets on ``host``.

    ``host`` defaults to this one.
    """
    if not mixed_precision:
        return Precision("float32", "--trainer.mixed_precision is off")
    host = this_host() if host is None else host
    if host.gpu:
        return Precision("mixed_float16", "a GPU: float16 with loss scaling")
    if host.tpu:
        return Precision("mixed_bfloat16", "a TPU computes bfloat16 natively")
    if host.native_bfloat16:
        return Precision(
            "mixed_bfloat16", f"the CPU computes bfloat16 natively: {', '.join(host.native_bfloat16)}"
        )
    reason = f"the CPU has no native bfloat16 (neither {' nor '.join(NATIVE_BFLOAT16_FLAGS)} among its flags)"
    warning = (
        f"warning: --trainer.mixed_precision: {reason}, where bfloat16 is emulated and slower than float32; "
        "this run computes in float32."
    )
    return Precision("float32", reason, warning)
