"""benchmarks/report.py: each script replaces its own section of BENCHMARKS.md and leaves the
others as they are; --no_write prints only."""

from __future__ import annotations

import platform
import sys

from abc_tf.runs import precision
from benchmarks import report


def test_write_section_replaces_its_section_and_keeps_the_others(tmp_path):
    path = str(tmp_path / "BENCHMARKS.md")
    report.write_section("Lookup", "old lookup rows", path)
    assert open(path).read() == report.HEADER.rstrip("\n") + "\n\n## Lookup\n\nold lookup rows\n\n"
    report.write_section("Serving (GPU)", "serving rows\n", path)
    report.write_section("Lookup", "\nnew lookup rows\n\n", path)
    text = open(path).read()
    assert text.startswith(report.HEADER.rstrip("\n")) and "old lookup rows" not in text
    assert text.index("## Lookup\n\nnew lookup rows\n\n") < text.index("## Serving (GPU)\n\nserving rows\n\n")
    assert text.count("## ") == 2


def test_publish_prints_and_writes_only_when_asked(tmp_path, monkeypatch, capsys):
    written = []
    monkeypatch.setattr(report, "write_section", lambda title, body: written.append((title, body)))
    monkeypatch.setattr(report, "FIGURES", str(tmp_path / "figures"))
    drawn = []
    report.publish("Curation", "rows", write=False, draw=lambda: drawn.append(1))
    assert capsys.readouterr().out == "rows\n" and written == [] and drawn == []
    report.publish("Curation", "rows", write=True, draw=lambda: drawn.append(1))
    assert written == [("Curation", "rows")] and drawn == [1] and (tmp_path / "figures").is_dir()
    assert report.argument_parser("doc").parse_args(["--no_write"]).no_write
    assert "1-minute load average of the machine: 0.5 at the start" in report.load_line(0.5)


def test_a_child_answers_what_its_name_asks_and_the_parent_nothing(capsys):
    named = {"measure": lambda: {"rate": 2.0}}
    assert not report.answer_child(None, named, lambda setting: 1.0)
    assert capsys.readouterr().out == ""
    assert report.answer_child("measure", named, lambda setting: 1.0)
    assert report.answer_child("fit_xla", named, lambda setting: {"setting": setting})
    assert capsys.readouterr().out.splitlines() == ['RESULT{"rate": 2.0}', 'RESULT{"setting": "fit_xla"}']


def test_the_precision_line_says_what_mixed_precision_gets_on_the_host(monkeypatch):
    monkeypatch.setattr(precision, "this_host", lambda: precision.Host(cpu_flags=frozenset({"avx2"})))
    assert report.precision_line().startswith(
        "`--trainer.mixed_precision` on this host: float32 (the CPU has no native bfloat16"
    )
    assert report.precision_line().endswith(": float32 instead of emulated bfloat16).")
    monkeypatch.setattr(precision, "this_host", lambda: precision.Host(cpu_flags=frozenset({"amx_bf16"})))
    assert report.precision_line() == (
        "`--trainer.mixed_precision` on this host: mixed_bfloat16 "
        "(the CPU computes bfloat16 natively: amx_bf16)."
    )


def test_run_children_runs_each_child_with_the_shared_arguments_and_keeps_their_labels(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(
        report, "run_child", lambda module, args: calls.append((module, args)) or {"child": args[1]}
    )
    results = report.run_children(
        "benchmarks.x", {"ML-VAE": "pose_ml_vae:all", "LORD": "pose_lord:stage2"}, ["--steps", "3"]
    )
    assert results == {"ML-VAE": {"child": "pose_ml_vae:all"}, "LORD": {"child": "pose_lord:stage2"}}
    assert calls == [
        ("benchmarks.x", ["--child", "pose_ml_vae:all", "--steps", "3"]),
        ("benchmarks.x", ["--child", "pose_lord:stage2", "--steps", "3"]),
    ]
    assert capsys.readouterr().out.splitlines()[0].startswith("ML-VAE {'child': 'pose_ml_vae:all'} (")


def test_the_machine_line_names_the_cpu_model(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2\n"
    )
    named = report.cpu_model(str(cpuinfo))
    # /proc/cpuinfo is Linux's: elsewhere the architecture alone, as precision.cpu_flags reads none.
    linux = sys.platform.startswith("linux")
    assert named == (f"AMD EPYC 9R14 ({platform.machine()})" if linux else platform.machine())
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu\n")  # some ARM kernels give no model name
    assert report.cpu_model(str(cpuinfo)) == platform.machine()
    assert report.cpu_model(str(tmp_path / "missing")) == platform.machine()
    assert f" on {report.cpu_model()}, " in report.machine_line()
