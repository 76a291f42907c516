"""abc_tf.runs.precision: what --trainer.mixed_precision computes in on each kind of host (simulated
hosts: a GPU, a TPU, CPUs with and without native bfloat16), the CPU flags read from
/proc/cpuinfo, and every preset that turns mixed precision on getting float32, never emulated
bfloat16, on a CPU without it. The trainer's warning line: tests/test_training.py."""

from __future__ import annotations

import sys

import pytest

from abc_tf.runs import experiments
from abc_tf.runs import precision, training

GPU = precision.Host(gpu=True)
TPU = precision.Host(tpu=True)
AVX512_BF16 = precision.Host(cpu_flags=frozenset({"avx2", "avx512f", "avx512_bf16"}))
AMX = precision.Host(cpu_flags=frozenset({"avx2", "amx_tile", "amx_bf16"}))
AVX2_ONLY = precision.Host(cpu_flags=frozenset({"sse4_2", "avx2", "fma"}))


@pytest.mark.parametrize(
    "host, policy",
    [
        (GPU, "mixed_float16"),
        (TPU, "mixed_bfloat16"),
        (AVX512_BF16, "mixed_bfloat16"),
        (AMX, "mixed_bfloat16"),
        (AVX2_ONLY, "float32"),
        (precision.Host(), "float32"),
    ],
)
def test_each_host_gets_the_precision_it_computes_fast(host, policy):
    chosen = precision.choose(True, host)
    assert chosen.policy == policy
    assert bool(chosen.warning) == (policy == "float32")
    assert precision.choose(False, host) == precision.Precision("float32", "--trainer.mixed_precision is off")


def test_the_fallback_warns_in_one_line_naming_the_missing_flags_and_float32():
    chosen = precision.choose(True, AVX2_ONLY)
    assert "\n" not in chosen.warning and chosen.warning.startswith("warning: --trainer.mixed_precision: ")
    assert "avx512_bf16" in chosen.warning and "amx_bf16" in chosen.warning
    assert chosen.warning.endswith("this run computes in float32.")
    assert precision.choose(True, AMX).reason == "the CPU computes bfloat16 natively: amx_bf16"


def test_cpu_flags_are_read_from_every_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\nmodel name\t: X\n\n"
        "processor\t: 1\nflags\t\t: fpu avx2 amx_bf16\n"
    )
    flags = precision.cpu_flags(str(cpuinfo))
    if sys.platform.startswith("linux"):
        assert flags == {"fpu", "avx2", "avx512_bf16", "amx_bf16"}
    else:  # no /proc/cpuinfo elsewhere: assumed without native bfloat16
        assert flags == frozenset()
    assert precision.cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_this_host_is_what_the_trainer_uses(monkeypatch):
    monkeypatch.setattr(precision, "this_host", lambda: AVX2_ONLY)
    assert training.precision_policy(experiments.config_for(mixed_precision=True)) == "float32"
    monkeypatch.setattr(precision, "this_host", lambda: AVX512_BF16)
    assert training.precision_policy(experiments.config_for(mixed_precision=True)) == "mixed_bfloat16"


@pytest.mark.parametrize(
    "name", sorted(name for name, preset in experiments.presets().items() if preset.trainer.mixed_precision)
)
def test_presets_with_mixed_precision_never_get_emulated_bfloat16(name):
    assert (
        precision.choose(experiments.presets()[name].trainer.mixed_precision, AVX2_ONLY).policy == "float32"
    )
    assert (
        precision.choose(experiments.presets()[name].trainer.mixed_precision, AVX512_BF16).policy
        == "mixed_bfloat16"
    )
