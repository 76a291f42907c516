"""train.py: every config field is a flag, and the README's error-handling promise for it: a bad
flag, run directory or fault during training ends in one clear line naming the flag or file
(no traceback), before any work where it can be checked first. docs/errors.md lists the same
cases for users.

The flags are parsed and ``train.main`` is called in this process (``run_train``); one test runs
the real command line, and Ctrl-C and SIGTERM need a process to signal. This module imports ``train``:
``evaluate`` defines flags of the same names in absl's global FLAGS, so no test may import it
in-process (tests/test_evaluate.py runs it in child processes).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.cli import train
from abc_tf.evaluation import callbacks
from abc_tf.evaluation import run_summary
from abc_tf import config as config_lib
from abc_tf.runs.experiments import get_preset
from abc_tf.runs import checkpoints, run_lock, training, training_logs
from evaluate_helpers import evaluate_each
from process_helpers import assert_one_clear_error, modules_loaded_by, run_script, start_code, wait_for_marker
from run_summary_helpers import NAMES, RECORD


@pytest.fixture
def run_train(train_in_process):
    """``run_train(*flags) -> (exit code, stderr)``: tests/conftest.py's ``train_in_process``."""
    return lambda *flags: train_in_process(*flags)[:2]


# ----------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    "experiment", ["shapes3d_demo", "mnist_vae_quick", "shapes3d_pmp_quick", "pose_quick"]
)
def test_every_field_of_the_chosen_parts_is_a_flag_through_its_part(experiment):
    try:
        train.parse_flags(["train.py", f"--experiment={experiment}"])
        help_text = train.FLAGS.get_help()
        config = get_preset(experiment)
        dotted = {name for name in train.FLAGS if "." in name}
        expected = {
            f"{part_name}.{name}"
            for part_name, part in config.parts().items()
            for name in part.field_names()
            if name not in config_lib.SELECTORS.values()
        }
        assert dotted == expected
        assert all(f"--{name}" in help_text or f"--[no]{name}" in help_text for name in expected)
    finally:
        train.FLAGS.unparse_flags()


# A field the run's family, method or batch format does not have cannot be passed:
# among them the seven that one side declared and the other read before configs had parts.
NOT_THE_RUNS_FIELDS = [
    (
        ["--experiment=mnist_vae_quick", "--method.temperature=0.5"],
        "--method.temperature: method 'vae' (VaeConfig) has no field 'temperature'; "
        "its fields: latent_dim, kl_warmup, affine_augmentation.",
    ),
    (
        ["--experiment=mnist", "--batch.batch_size=8"],
        "--batch.batch_size: the batch part (SetBatch) has no field 'batch_size'; "
        "its fields: set_size, pairs_per_step, double_augmentation, augmentation_baseline.",
    ),
    (
        ["--experiment=shapes3d_demo", "--batch.pair_factors=shape"],
        "--batch.pair_factors: the batch part (SetBatch) has no field 'pair_factors'",
    ),
    (
        ["--experiment=shapes3d_hue_baseline", "--method.regression_weight=1"],
        "--method.regression_weight: method 'contrastive' (ContrastiveConfig) "
        "has no field 'regression_weight'; its fields: similarity, temperature.",
    ),
    (
        ["--experiment=mnist", "--method.regression_weight=1"],  # ABC has the head, MNIST no pose labels
        "--method.regression_weight=1.0: the spherical-regression head trains on set A's pose labels, "
        "and data family 'mnist' has none",
    ),
    (
        ["--experiment=shapes3d_demo", "--data.class_split=1"],
        "--data.class_split: data family 'shapes3d' (Shapes3DConfig) has no field 'class_split'; "
        "its fields: source, path, inactive_factors, curate_both_sets, sample_with_replacement, "
        "data_in_memory, augmentations.",
    ),
    (
        ["--experiment=mnist_vae_quick", "--batch.augmentation_baseline"],
        "--batch.augmentation_baseline: the batch part (ImageBatch) has no field 'augmentation_baseline'; "
        "its fields: batch_size.",
    ),
    (
        ["--experiment=shapes3d_pmp_quick", "--batch.augmentation_baseline"],
        "--batch.augmentation_baseline: the batch part (PairBatch) has no field 'augmentation_baseline'; "
        "its fields: pairs_per_step, pair_factors, pair_labels.",
    ),
    (
        ["--experiment=mnist_elastic_infogan_quick", "--nobatch.double_augmentation"],
        "--batch.double_augmentation: the batch part (ImageBatch) has no field 'double_augmentation'",
    ),
    (
        ["--experiment=mnist", "--method.eval_every=5"],  # the trainer's field, given to another part
        "--method.eval_every: method 'abc' (AbcConfig) has no field 'eval_every'; "
        "its fields: similarity, temperature, regression_weight, abc_weight.",
    ),
    (
        ["--experiment=mnist_elastic_infogan_quick", "--encoder.embedding_dim=8"],
        "--encoder.embedding_dim: method 'elastic_infogan' has no encoder part (its networks are its own); "
        "this run's parts: trainer, data, batch, method.",
    ),
    (
        [
            "--experiment=mnist",
            "--method=vae",
            "--method.similarity=l2",
        ],  # --method chooses the class the flags follow
        "--method.similarity: method 'vae' (VaeConfig) has no field 'similarity'",
    ),
    (
        ["--experiment=mnist_vae_quick", "--method.name=abc"],
        "--method.name: method 'vae' (VaeConfig) has no field 'name'",
    ),
]


@pytest.mark.parametrize(
    "flags,message", NOT_THE_RUNS_FIELDS, ids=[" ".join(flags) for flags, _ in NOT_THE_RUNS_FIELDS]
)
def test_a_field_the_run_does_not_have_exits_2_naming_the_parts_fields(run_train, tmp_path, flags, message):
    assert_one_clear_error(*run_train(*flags, f"--output_dir={tmp_path / 'run'}"), message)
    assert not (tmp_path / "run").exists()


def test_choosing_a_method_gives_its_parts_and_keeps_shared_fields():
    try:
        train.parse_flags(
            [
                "train.py",
                "--experiment=mnist",
                "--method=contrastive",
                "--method.temperature=0.2",
                "--batch.double_augmentation",
            ]
        )
        config = train.resolve_config()
    finally:
        train.FLAGS.unparse_flags()
    assert (config.method.name, config.method.temperature, config.batch.double_augmentation) == (
        "contrastive",
        0.2,
        True,
    )
    assert config.data == get_preset("mnist").data and config.encoder == get_preset("mnist").encoder


BAD_FLAGS = [
    # (flags, message); {tmp} is the test's folder, {file} an existing file, {folder} a folder of images.
    (["--experiment=shapes4d"], "Unknown experiment 'shapes4d'; known experiments:"),
    (
        ["--batch.set_size=0"],
        "--batch.set_size must be at least 2 (a set or group of one image teaches nothing",
    ),
    (
        ["--batch.set_size=1"],
        "--batch.set_size must be at least 2 (a set or group of one image teaches nothing about what "
        "images share), got 1.",
    ),
    (
        ["--output_dir="],
        "--output_dir is empty (an unset shell variable?); name the run directory, or leave the flag out",
    ),
    (
        ["--trainer.mixed_precision=garbage"],
        "--trainer.mixed_precision=garbage is not true or false; pass "
        "--trainer.mixed_precision, --notrainer.mixed_precision, ",
    ),
    (["--trainer.steps=ten"], "--trainer.steps=ten is not an integer."),
    (
        ["--trainer.steps=1e3"],
        "--trainer.steps=1e3 is not an integer; write it in digits: --trainer.steps=1000.",
    ),
    (["--trainer.learning_rate=fast"], "--trainer.learning_rate=fast is not a number."),
    (
        ["--trainer.step=10"],
        "--trainer.step: the trainer part (TrainerConfig) has no field 'step'; its fields: steps, ",
    ),
    (
        ["--output_dir={tmp}/run", "--trainer.steps"],
        "Missing value for flag --trainer.steps (--help lists the flags).",
    ),
    (["10"], "unexpected arguments: 10 (flags are written --name=value)."),
    # /sys takes no new file, even from root (a read-only folder would not stop root).
    (
        ["--output_dir=/sys/abc_tf_run"],
        "--output_dir=/sys/abc_tf_run cannot be written: creating a file in /sys failed (",
    ),
    (["--encoder.embedding_dim=-3"], "--encoder.embedding_dim must be positive, got -3"),
    (["--trainer.steps=0"], "--trainer.steps must be positive, got 0"),
    (
        ["--method.similarity=dot"],
        "Unknown --method.similarity='dot'; choose one of l2sq, l2, l1, linf, cosine",
    ),
    (["--method.temperature=0"], "--method.temperature must be positive, got 0.0"),
    (["--trainer.learning_rate=-1e-3"], "--trainer.learning_rate must be positive, got -0.001"),
    (["--seeds=0"], "--seeds must be a positive integer"),
    (["--trainer.keep_checkpoints=0"], "--trainer.keep_checkpoints must be positive, got 0"),
    (
        ["--trainer.strategy=gpu"],
        "Unknown --trainer.strategy='gpu'; choose one of default, mirrored, multi_worker, tpu",
    ),
    (["--data=faces"], "Unknown data family 'faces'; choose one of:"),
    (["--encoder=s9"], "Unknown model 's9'; known models:"),
    (
        ["--encoder.backbone_weights=imagenet"],
        "--encoder.backbone_weights: model 's3' has no pretrained backbone",
    ),
    (
        ["--trainer.strategy=multi_worker"],
        "--trainer.strategy=multi_worker needs the TF_CONFIG environment variable",
    ),
    (["--trainer.strategy=tpu"], "--trainer.strategy=tpu found no TPU to connect to"),
    (
        ["--experiment=mnist", "--data.image_size=32"],
        "--data.image_size: data family 'mnist' (MnistConfig) has no field 'image_size'",
    ),
    (
        ["--experiment=mnist", "--data.inactive_factors=bogus"],
        "--data.inactive_factors: data family 'mnist' (MnistConfig) has no field",
    ),
    (
        ["--experiment=folders", "--data.path={folder}", "--data.inactive_factors=bogus"],
        "--data.inactive_factors='bogus' for data=folders: a set is one group folder; use 'group'.",
    ),
    (
        ["--experiment=mnist", "--batch.double_augmentation"],
        "--batch.double_augmentation: MNIST's stacks have no augmented second view",
    ),
    (
        ["--experiment=pose_quick", "--data.real_data_path={tmp}/missing"],
        "--data.real_data_path={tmp}/missing does not exist",
    ),
    (["--experiment=mnist", "--data.path={tmp}/missing.npz"], "--data.path={tmp}/missing.npz does not exist"),
    (["--output_dir={file}"], "--output_dir={file} is an existing file, not a directory"),
    (
        ["--allow_config_change=encoder.embedding_dim"],
        "--allow_config_change: encoder.embedding_dim cannot change within a run",
    ),
    (
        ["--experiment=folders", "--data.path={folder}", "--data.image_size=8"],
        "--encoder=s6 cannot take images of shape (8, 8, 3) (--data.image_size=8)",
    ),
    (
        ["--experiment=mnist", "--data.path={file}"],
        "(--data.path) is not an .npz archive (it starts with b'not da')",
    ),
]


# Found only reading the file's content, which --check_only does not.
FOUND_READING_DATA = [["--experiment=mnist", "--data.path={file}"]]


@pytest.mark.parametrize("check_only", [False, True], ids=["train", "check_only"])
@pytest.mark.parametrize("flags,message", BAD_FLAGS, ids=[" ".join(flags) for flags, _ in BAD_FLAGS])
def test_bad_flags_fail_with_one_line_before_any_work(run_train, tmp_path, flags, message, check_only):
    if check_only and flags in FOUND_READING_DATA:
        pytest.skip("found reading the data, which --check_only does not")
    (tmp_path / "a_file.txt").write_text("not data\n")
    (tmp_path / "images" / "group").mkdir(parents=True)
    values = {"tmp": tmp_path, "file": tmp_path / "a_file.txt", "folder": tmp_path / "images"}
    arguments = [flag.format(**values) for flag in flags]
    if not any(flag.startswith("--output_dir") for flag in arguments):
        arguments.append(f"--output_dir={tmp_path / 'run'}")
    assert_one_clear_error(
        *run_train(*(["--check_only"] if check_only else []), *arguments), message.format(**values)
    )
    assert not (tmp_path / "run").exists()


def test_check_only_passes_good_settings_and_writes_nothing(run_train, tmp_path):
    code, errors = run_train(
        "--experiment=mnist",
        "--trainer.steps=7",
        "--seeds=2",
        "--check_only",
        f"--output_dir={tmp_path / 'run'}",
    )
    assert code == 0 and not (tmp_path / "run").exists(), errors[-3000:]


def test_the_command_line_exits_2_with_one_line_and_no_traceback(tmp_path):
    result = run_script("train.py", "--batch.set_size=1", f"--output_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert_one_clear_error(
        result.returncode, result.stderr, "train.py: error: --batch.set_size must be at least 2"
    )
    assert not (tmp_path / "run").exists()


ANSWERED_BEFORE_MAIN = [  # (flags, exit code, the answer) before train.main, the run's modules unneeded
    (["--help"], 0, "--experiment: Preset: one of"),
    (["--trainer.steps=many"], 2, "train.py: error: --trainer.steps=many is not an integer."),
    (
        ["--no_such_flag"],
        2,
        "train.py: error: Unknown command line flag 'no_such_flag' (--help lists the flags).",
    ),
    (  # the encoder part's flags by their names before the rename
        ["--model.embedding_dim=8"],
        2,
        "train.py: error: --model.embedding_dim was renamed --encoder.embedding_dim; "
        "write --encoder.embedding_dim=8.",
    ),
    (["--model", "s4"], 2, "train.py: error: --model was renamed --encoder."),
]


@pytest.mark.parametrize(
    "flags,expected_code,answer", ANSWERED_BEFORE_MAIN, ids=[flags[0] for flags, _, _ in ANSWERED_BEFORE_MAIN]
)
def test_help_and_flag_errors_answer_before_any_training(flags, expected_code, answer):
    # The flags come from the declarations (methods, families), which load TensorFlow with them;
    # no run directory is made and no step is taken.
    code, output, _ = modules_loaded_by("train.py", *flags)
    assert code == expected_code and answer in output, output[-3000:]
    assert not any(line.startswith("Training ") for line in output.splitlines())


def test_damaged_config_json_in_the_run_directory(run_train, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text('{"name": "shapes3d", "steps": 6')  # cut off by a full disk
    assert_one_clear_error(
        *run_train("--trainer.steps=10", f"--output_dir={run_dir}"),
        f"{run_dir / 'config.json'} is not a readable run config",
    )


def test_a_config_json_edited_to_a_wrong_type_is_refused_not_recorded_as_a_change(run_train, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    values = json.loads(get_preset("shapes3d_demo").to_json())
    values["trainer"]["steps"] = "ten"
    (run_dir / "config.json").write_text(json.dumps(values))
    assert_one_clear_error(
        *run_train(f"--output_dir={run_dir}"),
        f"{run_dir / 'config.json'} is not a readable run config (trainer.steps is 'ten', not an integer).",
    )
    assert sorted(os.listdir(run_dir)) == ["config.json"]  # no config_history.json


# ----------------------------------------------------------------------------- faults while training

TOY_FLAGS = [
    "--experiment=shapes3d",
    "--data=toy",
    "--encoder=s4",
    "--encoder.embedding_dim=8",
    "--batch.set_size=12",
    "--batch.pairs_per_step=2",
    "--method.temperature=0.1",
    "--trainer.steps_per_execution=1",  # a stop lands on any step, not only at a compiled call's end
]
# Ctrl-C reaches a child even when the test runs in a background job, whose children start
# with SIGINT ignored (a non-interactive shell's "&"): Python's own handler is put back first.
RESTORE_CTRL_C = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "


@pytest.mark.slow
def test_nan_stop_says_what_is_kept_and_the_advised_command_works(run_train, toy_family, tmp_path):
    run_dir = tmp_path / "run"
    diverging = [
        *TOY_FLAGS,
        "--trainer.learning_rate=1e9",
        "--method.temperature=0.001",
        "--trainer.steps=20",
        "--trainer.log_every=10",
        f"--output_dir={run_dir}",
    ]
    code, stderr = run_train(*diverging)
    assert code == 1, stderr[-3000:]
    assert "The loss became nan at step" in stderr and "no checkpoint had been written yet" in stderr
    advised = stderr.strip().splitlines()[-1].split()
    assert advised[:2] == ["python", "train.py"] and "--trainer.learning_rate=1e+08" in advised
    # Whether 1e8 still diverges does not matter: the run directory accepts the advised command
    # (a refused config would exit 2).
    code, stderr = run_train(*advised[2:])
    assert code in (0, 1) and "different config" not in stderr, stderr[-3000:]


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    run_dir, marker = tmp_path / "run", tmp_path / "at_step_6"
    flags = [
        *TOY_FLAGS,
        "--trainer.learning_rate=1e-3",
        "--trainer.steps=100000",
        "--trainer.log_every=5",
        f"--output_dir={run_dir}",
    ]
    # Held at step 6, after its first checkpoint, until the interrupt lands: no race with the run.
    returncode, stderr = signal_held_run(
        RESTORE_CTRL_C + TRAIN_TOY_HELD_AT_STEP, 6, marker, flags, signal.SIGINT
    )
    assert returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "Interrupted; " in stderr and "Run the same command again to resume from it." in stderr
    assert checkpoints.list_checkpoints(str(run_dir))


# train.py with the toy family of tests/toy_family.py registered (tiny and fast, but the real CLI)
# and tests/preemption_helpers.HoldAtStep(ARGV[1], ARGV[2]) as the run's callback: the run waits
# at that step for the stop request, so SIGTERM (or Ctrl-C) lands on it.
TRAIN_TOY_HELD_AT_STEP = (
    "import sys; from absl import app; from abc_tf import data; from abc_tf.evaluation import callbacks; "
    "data.DATA_FAMILIES['toy'] = 'toy_family:FAMILY'; "
    "from preemption_helpers import HoldAtStep; step, marker = sys.argv.pop(1), sys.argv.pop(1); "
    "callbacks.evaluation_callbacks = lambda config, run_dir: [HoldAtStep(step, marker)]; "
    "from abc_tf.cli import train; sys.argv[0] = 'train.py'; "
    "app.run(train.main, flags_parser=train.parse_flags)"
)


def signal_held_run(code: str, step: int, marker, flags: list[str], signal_number: int) -> tuple[int, str]:
    """Runs ``code`` (a train.py held at ``step``, see TRAIN_TOY_HELD_AT_STEP) in a child, sends it
    ``signal_number`` once it holds there, and returns its exit code and stderr."""
    process = start_code(
        code, str(step), str(marker), *flags, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_marker(process, marker)
        process.send_signal(signal_number)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stderr


def scalars(log_dir, tag: str) -> dict[int, float]:
    """{step: value} of a TensorBoard scalar over every event file of ``log_dir``."""
    found = {}
    for name in sorted(os.listdir(log_dir)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, name)):
            for value in event.summary.value:
                if value.tag == tag:
                    found[int(event.step)] = float(tf.make_ndarray(value.tensor))
    return found


@pytest.mark.slow
def test_sigterm_stops_at_the_step_end_with_its_checkpoint_and_the_same_command_resumes_exactly(
    run_train, toy_family, tmp_path
):
    run_dir, marker = tmp_path / "run", tmp_path / "at_step_7"
    flags = [
        *TOY_FLAGS,
        "--trainer.learning_rate=1e-3",
        "--trainer.lr_halving_steps=8",
        "--trainer.steps=20",
        "--trainer.log_every=5",
        "--trainer.keep_checkpoints=5",
        f"--output_dir={run_dir}",
    ]
    returncode, stderr = signal_held_run(TRAIN_TOY_HELD_AT_STEP, 7, marker, flags, signal.SIGTERM)
    assert_one_clear_error(
        returncode,
        stderr,
        f"train.py: error: Stopped by SIGTERM; {run_dir} keeps its checkpoint at "
        "step 7, the step it reached. Run the same command again to resume from it.",
        expected_code=143,
    )
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [5, 7]

    code, stderr = run_train(*flags)  # the same command
    assert code == 0, stderr[-3000:]
    # Steps 8 to 20 and no more: the checkpoints and the logs fall on the log steps again, and
    # the optimizer's step counter drives the learning-rate schedule on from step 7.
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [5, 7, 10, 15, 20]
    assert sorted(scalars(run_dir / "logs" / "train", "loss")) == [5, 10, 15, 20]
    learning_rates = scalars(run_dir / "logs" / "train", "learning_rate")
    assert learning_rates == pytest.approx({step: 1e-3 * 0.5 ** (step // 8) for step in (5, 10, 15, 20)})


def test_a_second_train_py_on_a_run_directory_in_use_exits_2_naming_the_holder(
    run_train, toy_family, tmp_path
):
    run_dir = tmp_path / "run"
    with run_lock.RunLock(
        str(run_dir), command="train.py"
    ):  # a train.py of this process: one flock per open file
        code, stderr = run_train(*TOY_FLAGS, "--trainer.steps=10", f"--output_dir={run_dir}")
    assert_one_clear_error(
        code,
        stderr,
        f"run directory {run_dir} is in use by train.py (pid {os.getpid()} on host "
        f"{socket.gethostname()}, since ",
    )
    assert stderr.strip().endswith("; wait for it to finish or use another --output_dir."), stderr[-3000:]
    assert os.listdir(run_dir) == [".lock"]


@pytest.mark.slow
def test_a_lock_left_by_a_killed_train_py_is_taken_over_with_a_warning(run_train, toy_family, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # What a SIGKILLed train.py leaves: its name in the lock file, and no flock (the kernel dropped it).
    (run_dir / ".lock").write_text(
        json.dumps(
            {"command": "train.py", "pid": 4321, "host": "node7", "since": "2026-01-02T03:04:05+00:00"}
        )
    )
    with pytest.warns(
        UserWarning,
        match=r"\.lock was left by train.py \(pid 4321 on host node7, since "
        r"2026-01-02T03:04:05\+00:00\), which no longer runs; taking the run directory over",
    ):
        code, stderr = run_train(
            *TOY_FLAGS, "--trainer.steps=10", "--trainer.log_every=5", f"--output_dir={run_dir}"
        )
    assert code == 0, stderr[-3000:]
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [5, 10]
    assert (run_dir / ".lock").read_text() == ""  # released at the end


def test_nan_advice_after_a_checkpoint_continues_with_the_change_allowed(monkeypatch):
    monkeypatch.setattr(
        sys,
        "argv",
        ["train.py", "--experiment=shapes3d_demo", "--trainer.learning_rate=1e-3", "--output_dir=runs/x"],
    )
    train.parse_flags(["train.py"])  # parsed flags, as app.run leaves them
    try:
        error = training_logs.NonFiniteLossError(
            "The loss became nan at step 26; ...", step=26, checkpoint_step=20
        )
        advice = train._nan_advice(error, get_preset("shapes3d_demo").replace(learning_rate=1e-3), "runs/x")
    finally:
        train.FLAGS.unparse_flags()
    assert advice.splitlines()[0] == "Continue from step 20 with a lower learning rate:"
    assert advice.splitlines()[1].split() == [
        "python",
        "train.py",
        "--experiment=shapes3d_demo",
        "--output_dir=runs/x",
        "--trainer.learning_rate=0.0001",
        "--allow_config_change=trainer.learning_rate",
    ]


# ----------------------------------------------------------------------------- the end of a run


def test_train_py_prints_and_writes_the_summary_of_its_isolation_callback(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", f"--output_dir={tmp_path}"])
    images = np.zeros((8, 4, 4, 3), np.uint8)
    callback = callbacks.FactorIsolationCallback(
        images,
        np.zeros((8, len(NAMES)), int),
        NAMES,
        1.0,
        str(tmp_path / "logs"),
        0,
        inactive=["wall_hue"],
        num_classes=[10, 10, 10, 4],
    )
    callback.history.append(RECORD)
    result = training.TrainResult(
        networks={"encoder": None}, history={"loss": [1.0]}, run_dir=str(tmp_path), final_step=600
    )
    table = train._isolation_summary([callback], get_preset("shapes3d_demo"), result)
    assert "wall_hue       inactive" in table and table.splitlines()[3].endswith("dropped")
    assert os.path.exists(tmp_path / run_summary.SUMMARY_JSON) and os.path.exists(
        tmp_path / run_summary.SUMMARY_PNG
    )
    train._print_summary(result, get_preset("shapes3d_demo"), table)
    printed = capsys.readouterr().out
    assert table in printed
    assert (
        f"tensorboard --logdir {tmp_path / 'logs'}" in printed
        and f"python evaluate.py --run_dir={tmp_path}" in printed
    )
    assert f"python train.py --output_dir={tmp_path} --trainer.steps=<more>" in printed


# ---------------------------- runs written before configs had parts, or before the encoder part's rename

FLAT_DEMO = os.path.join(os.path.dirname(__file__), "fixtures", "flat_configs", "shapes3d_demo.json")
MODEL_PART_DEMO = os.path.join(
    os.path.dirname(__file__), "fixtures", "model_part_configs", "shapes3d_demo.json"
)


def flat_config_json(trained: dict) -> dict:
    """The flat layout of FLAT_DEMO at the settings the test trained at."""
    flat = json.load(open(FLAT_DEMO))
    assert "trainer" not in flat and flat["steps"] == 20  # the old layout: every field at the top
    return {**flat, "steps": 10, "set_size": 8, "eval_every": 0, "eval_images": 32}


def model_part_config_json(trained: dict) -> dict:
    """The config.json the test's run wrote, as train.py wrote it before the encoder part was
    renamed: the part under "model" (MODEL_PART_DEMO is such a file)."""
    assert "model" in json.load(open(MODEL_PART_DEMO))
    old = {key: value for key, value in trained.items() if key != "encoder"}
    return {**old, "model": trained["encoder"]}


@pytest.mark.slow
@pytest.mark.parametrize(
    "old_config_json", [flat_config_json, model_part_config_json], ids=["flat", "model_part"]
)
def test_a_run_directory_with_an_old_config_json_resumes_and_evaluates(run_train, tmp_path, old_config_json):
    """The README's main job as a run written before configs had parts left it, or before the
    encoder part was renamed: its old config.json (the flat one copied from such a run, at a
    smaller size; the parts with "model") is accepted by the same command, which resumes the
    run, and evaluate.py measures it."""
    run_dir = tmp_path / "demo"
    flags = [
        "--experiment=shapes3d_demo",
        "--batch.set_size=8",
        "--trainer.log_every=10",
        "--trainer.eval_every=0",
        "--trainer.eval_images=32",
        f"--output_dir={run_dir}",
    ]
    code, stderr = run_train(*flags, "--trainer.steps=10")
    assert code == 0, stderr[-3000:]
    trained = json.load(open(run_dir / "config.json"))
    (run_dir / "config.json").write_text(json.dumps(old_config_json(trained)))
    code, stderr = run_train(*flags, "--trainer.steps=20")  # extends the run from its checkpoint
    assert code == 0, stderr[-3000:]
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [10, 20]
    written = json.load(open(run_dir / "config.json"))
    assert written["trainer"]["steps"] == 20 and written["batch"]["set_size"] == 8  # written again in parts
    assert written["encoder"] == trained["encoder"] and "model" not in written  # under the part's new name
    history = json.load(open(run_dir / "config_history.json"))
    assert history[-1]["changed"] == {
        "trainer.steps": {"old": 10, "new": 20},
        # The flat layout's runs trained one step a call without XLA: the defaults (auto) are changes.
        **(
            {
                "trainer.steps_per_execution": {"old": 1, "new": 0},
                "trainer.jit_compile": {"old": "false", "new": "auto"},
            }
            if old_config_json is flat_config_json
            else {}
        ),
    }
    [result] = evaluate_each(
        [
            (
                tmp_path,
                [
                    f"--run_dir={run_dir}",
                    "--mine_steps=0",
                    "--probe_epochs=1",
                    "--num_images=32",
                    "--disentanglement=none",
                    f"--output_dir={tmp_path / 'eval'}",
                ],
            )
        ]
    )
    assert result["code"] == 0, result["stderr"][-3000:]
    assert json.load(open(tmp_path / "eval" / "metrics.json"))


@pytest.mark.slow
def test_a_run_whose_checkpoint_list_was_deleted_resumes_from_its_newest_checkpoint(
    run_train, toy_family, tmp_path
):
    run_dir = tmp_path / "run"
    flags = [*TOY_FLAGS, "--trainer.learning_rate=1e-3", "--trainer.log_every=5", f"--output_dir={run_dir}"]
    code, stderr = run_train(*flags, "--trainer.steps=10")
    assert code == 0, stderr[-3000:]
    folder = run_dir / "checkpoints"
    (folder / "checkpoint").unlink()
    kept = {name: (folder / name).read_bytes() for name in os.listdir(folder)}
    with pytest.warns(
        UserWarning,
        match=r"checkpoints/checkpoint \(the list of checkpoints\) is missing; using the "
        r"checkpoints found beside it: ckpt-5, ckpt-10\.",
    ):
        code, stderr = run_train(*flags, "--trainer.steps=15")
    assert code == 0, stderr[-3000:]
    assert [step for step, _ in checkpoints.list_checkpoints(str(run_dir))] == [
        10,
        15,
    ]  # resumed at 10, kept 2
    assert (folder / "ckpt-10.index").read_bytes() == kept["ckpt-10.index"]  # read, never written over
    assert sorted(scalars(run_dir / "logs" / "train", "loss")) == [5, 10, 15]


@pytest.mark.slow
def test_a_change_to_a_finished_run_that_no_step_would_train_with_is_refused(run_train, toy_family, tmp_path):
    run_dir = tmp_path / "run"
    flags = [*TOY_FLAGS, "--trainer.steps=10", "--trainer.log_every=5", f"--output_dir={run_dir}"]
    code, stderr = run_train(*flags, "--trainer.learning_rate=1e-3")
    assert code == 0, stderr[-3000:]
    assert_one_clear_error(
        *run_train(*flags, "--trainer.learning_rate=1e-4", "--allow_config_change=trainer.learning_rate"),
        f"{run_dir} has trained all its 10 steps, so no step would train with trainer.learning_rate "
        "changed; raise --trainer.steps to extend the run with the change",
    )
    assert not (run_dir / "config_history.json").exists()
    code, stderr = run_train(
        *flags,
        "--trainer.steps=15",
        "--trainer.learning_rate=1e-4",
        "--allow_config_change=trainer.learning_rate",
    )
    assert code == 0, stderr[-3000:]
    assert json.loads((run_dir / "config_history.json").read_text())[0]["step"] == 10


@pytest.mark.slow
def test_a_run_directory_that_cannot_be_written_is_refused_before_any_work(
    run_train, toy_family, tmp_path, monkeypatch
):
    run_dir = tmp_path / "run"
    flags = [*TOY_FLAGS, "--trainer.log_every=5", f"--output_dir={run_dir}"]
    code, stderr = run_train(*flags, "--trainer.steps=5")
    assert code == 0, stderr[-3000:]
    before = sorted(os.listdir(run_dir))
    # The run directory on a file system remounted read-only (root could still write a chmod 555 folder).
    real = tempfile.NamedTemporaryFile

    def read_only(*args, dir=None, **kwargs):  # noqa: A002 - tempfile's own argument name
        if dir is not None and os.path.abspath(dir) == str(run_dir):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only)
    assert_one_clear_error(
        *run_train(*flags, "--trainer.steps=10"),
        f"--output_dir={run_dir} cannot be written: "
        f"creating a file in {run_dir} failed (Read-only file system).",
    )
    assert sorted(os.listdir(run_dir)) == before
