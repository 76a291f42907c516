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


def test_the_precision_facts_are_taken_when_measuring(monkeypatch):
    monkeypatch.setattr(precision, "this_host", lambda: precision.Host(cpu_flags=frozenset({"avx512_bf16"})))
    facts = gpu_readiness.precision_facts()
    assert "mixed_bfloat16" in facts["precision"]
    assert facts["warning"].startswith("warning: --trainer.mixed_precision: the CPU has no native bfloat16")
    assert {
        "preset": "shapes3d_pmp_quick",
        "here": "mixed_bfloat16",
        "gpu": "mixed_float16",
        "cpu_without_bfloat16": "float32",
    } in facts["presets"]


def test_the_section_reports_each_check_and_the_precision_of_each_host_from_the_results_alone():
    good = {"trains": True, "finite": True, "loss_scaled": False, "steps_per_s": 4.0, "last_loss": 1.0}
    methods = [
        {
            "method": method,
            "preset": preset.name,
            "xla_float32": good,
            "xla_mixed_float16": {**good, "loss_scaled": True, "steps_per_s": 0.5},
        }
        for method, preset in experiments.quick_presets().items()
    ]
    by_method = {row["method"]: row for row in methods}
    by_method["pmp"]["xla_float32"] = {
        "trains": False,
        "error": "No registered 'Foo' OpKernel for XLA_CPU_JIT",
        "loss_scaled": False,
    }
    by_method["vae"]["xla_mixed_float16"] = {**good, "finite": False, "loss_scaled": True}
    results = {
        "steps": 5,
        "methods": methods,
        "precision": "precision line",
        "warning": "warning: emulated",
        "presets": [
            {
                "preset": "shapes3d_pmp_quick",
                "here": "mixed_bfloat16",
                "gpu": "mixed_float16",
                "cpu_without_bfloat16": "float32",
            }
        ],
        "machine": "Measured on a test.",
        "load": [0.0, 1.0],
        "cpu_count": 2,
        "command": "python -m benchmarks.gpu_readiness --steps 5",
    }
    text = gpu_readiness.section(results)
    assert text.startswith("Measured on a test.\nprecision line\n")
    assert "prints one line: `warning: emulated`" in text
    assert "| `shapes3d_pmp_quick` | mixed_bfloat16 | mixed_float16 | float32 |" in text
    assert "steps/s: 5 steps after a 2-step warm-up" in text
    assert "| abc | `shapes3d_demo` | yes | 4.00 | yes | yes | 0.50 |" in text
    assert (
        "| pmp | `shapes3d_pmp_quick` | no: No registered 'Foo' OpKernel for XLA_CPU_JIT "
        "| - | yes | yes | 0.50 |" in text
    )
    assert "| vae | `mnist_vae_quick` | yes | 4.00 | trains, loss not finite | yes | 4.00 |" in text
    assert text.endswith("Command: `python -m benchmarks.gpu_readiness --steps 5`")
