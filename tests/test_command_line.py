"""abc_tf.command_line: absl's flag-parsing errors, as absl words them, in the project's words."""

from __future__ import annotations

import warnings

import pytest
from absl import flags

from abc_tf import command_line


def parse_error(*arguments: str) -> str:
    """absl's own message for ``arguments`` on flags of each type."""
    values = flags.FlagValues()
    flags.DEFINE_integer("trainer.steps", None, "", flag_values=values)
    flags.DEFINE_float("trainer.learning_rate", None, "", flag_values=values)
    flags.DEFINE_boolean("trainer.mixed_precision", None, "", flag_values=values)
    with pytest.raises(flags.Error) as error:
        values(["train.py", *arguments])
    return str(error.value)


@pytest.mark.parametrize(
    "argument,message",
    [
        ("--trainer.steps=ten", "--trainer.steps=ten is not an integer."),
        (
            "--trainer.steps=1e3",
            "--trainer.steps=1e3 is not an integer; write it in digits: --trainer.steps=1000.",
        ),
        ("--trainer.steps=2.5", "--trainer.steps=2.5 is not an integer."),
        ("--trainer.learning_rate=fast", "--trainer.learning_rate=fast is not a number."),
        (
            "--trainer.mixed_precision=garbage",
            "--trainer.mixed_precision=garbage is not true or false; pass --trainer.mixed_precision, "
            "--notrainer.mixed_precision, --trainer.mixed_precision=true or --trainer.mixed_precision=false.",
        ),
        (
            "--trainer.step=3",
            "Unknown command line flag 'trainer.step'. Did you mean: trainer.steps ? "
            "(--help lists the flags).",
        ),
        ("--trainer.steps", "Missing value for flag --trainer.steps (--help lists the flags)."),
    ],
)
def test_each_absl_error_becomes_one_line_naming_the_flag(argument, message):
    assert command_line.describe_flag_error(parse_error(argument)) == message


def test_a_renamed_flag_is_named_with_its_new_name_and_others_pass():
    def error(*arguments, other_program=None):
        return command_line.renamed_flag_error(["train.py", *arguments], other_program)

    assert error("--model.embedding_dim=8") == (
        "--model.embedding_dim was renamed --encoder.embedding_dim; write --encoder.embedding_dim=8."
    )
    assert error("--trainer.steps=3", "--model", "s4") == "--model was renamed --encoder."
    assert error("--model=s4", other_program="evaluate.py") == (
        "--model was renamed --encoder, a flag of train.py, not of evaluate.py."
    )
    # The new names, other flags that start alike, a value and anything after "--" are not flags of it.
    assert error("--encoder=s4", "--encoder.embedding_dim=8", "--models=3", "--run_dir=--model") is None
    assert error("--", "--model=s4") is None


def test_the_packages_warnings_are_one_line_and_others_keep_their_place(monkeypatch):
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    command_line.plain_warnings("train.py")
    ours = warnings.formatwarning("Checkpoint ckpt-10 is skipped", UserWarning, command_line.__file__, 12)
    assert ours == "train.py: warning: Checkpoint ckpt-10 is skipped\n"
    theirs = warnings.formatwarning(
        "deprecated", DeprecationWarning, "/usr/lib/python3/keras/ops.py", 7, line="x = 1"
    )
    assert theirs.startswith("/usr/lib/python3/keras/ops.py:7: DeprecationWarning: deprecated")


# TensorFlow's start-up output, each line ending in \n (the long ones split across literals).
START_UP = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1795867572.865371   10232 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
    "GPU will not be used.\n"
    "I0000 00:00:1795867576.614453   10232 cpu_feature_guard.cc:227] This TensorFlow binary is optimized "
    "to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the "
    "appropriate compiler flags.\n"
    "E0000 00:00:1795867579.895517   10232 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
    "Failed call to cuInit: UNKNOWN ERROR (303)\n"
    "E0000 00:00:1795867580.000000   10232 gpu_device.cc:99] Could not load dynamic library 'libcudnn.so.9'\n"
)


def test_start_up_noise_is_held_back_and_other_lines_kept():
    assert command_line.without_start_up_noise(START_UP) == [
        "E0000 00:00:1795867580.000000   10232 gpu_device.cc:99] "
        "Could not load dynamic library 'libcudnn.so.9'"
    ]


@pytest.mark.slow
def test_a_fresh_process_starts_tensorflow_without_the_start_up_lines():
    import os
    import subprocess
    import sys

    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    code = (
        "from abc_tf import command_line; command_line.quiet_tensorflow_start(); "
        "import os, sys, tensorflow as tf; "
        "tf.constant(1) + 1; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "1"  # TensorFlow's information lines stay out for the rest of the run
    assert not [line for line in result.stderr.splitlines() if command_line._START_UP_NOISE.search(line)], (
        result.stderr
    )
