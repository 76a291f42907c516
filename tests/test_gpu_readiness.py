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
    assert text.startswith("Each method's step compiled with XLA, 5 steps, in float32 and in mixed_float16")
    assert "`python -m benchmarks.gpu_readiness --steps 5`, Measured on a test, load 0.0-1.0." in text
    ready = len(methods) - 2
    assert f"{ready} of {len(methods)} methods compile and train with a finite loss in both; not: " in text
    assert "pmp (XLA float32: no: No registered 'Foo' OpKernel for XLA_CPU_JIT; mixed_float16: yes)" in text
    assert "vae (XLA float32: yes; mixed_float16: trains, loss not finite)" in text
    assert (
        "Mixed precision: `shapes3d_pmp_quick` gets mixed_bfloat16 here, mixed_float16 on a GPU, "
        "float32 without native bfloat16."
    ) in text
