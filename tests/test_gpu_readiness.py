"""benchmarks/gpu_readiness.py: every method has a preset to be measured on, and the section
reports each check as measured (the checks themselves, on tiny runs: tests/test_methods.py)."""

from __future__ import annotations

from abc_tf import methods
from abc_tf.runs import experiments
from abc_tf.runs import precision
from benchmarks import gpu_readiness


def test_every_method_is_measured_on_the_quick_preset_its_package_names():
    quick = experiments.quick_presets()
    assert set(quick) == set(methods.METHODS)
    for method, preset in quick.items():
        assert preset.method.name == method


def test_the_table_reports_each_check_and_the_precision_of_each_host(monkeypatch):
    monkeypatch.setattr(precision, "this_host", lambda: precision.Host(cpu_flags=frozenset({"avx512_bf16"})))
    good = {"trains": True, "finite": True, "loss_scaled": False, "steps_per_s": 4.0, "last_loss": 1.0}
    results = {
        method: {"xla_float32": good, "xla_mixed_float16": {**good, "loss_scaled": True, "steps_per_s": 0.5}}
        for method in experiments.quick_presets()
    }
    results["pmp"]["xla_float32"] = {
        "trains": False,
        "error": "No registered 'Foo' OpKernel for XLA_CPU_JIT",
        "loss_scaled": False,
    }
    results["vae"]["xla_mixed_float16"] = {**good, "finite": False, "loss_scaled": True}
    text = gpu_readiness.table(results, steps=5, load_start=0.0)
    assert "| `shapes3d_pmp_quick` | mixed_bfloat16 | mixed_float16 | float32 |" in text
    assert "warning: --trainer.mixed_precision: the CPU has no native bfloat16" in text
    assert "| abc | `shapes3d_demo` | yes | 4.00 | yes | yes | 0.50 |" in text
    assert (
        "| pmp | `shapes3d_pmp_quick` | no: No registered 'Foo' OpKernel for XLA_CPU_JIT "
        "| - | yes | yes | 0.50 |" in text
    )
    assert "| vae | `mnist_vae_quick` | yes | 4.00 | trains, loss not finite | yes | 4.00 |" in text
