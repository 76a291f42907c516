"""abc_tf.evaluation.contract and ``abc_tf check``: a built-in method and a plug-in method of an
installed distribution (an entry point, found as a new process finds it) pass the contract's
checks, and a plug-in whose loss is NaN fails them, one line per check."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from abc_tf import cli, command_line, data, methods, registry
from abc_tf.evaluation import contract
from abc_tf.runs import checkpoints

# The cheapest built-in method to train and evaluate (measured: VAE 41 s, 37 s, 11 s and 90 s for
# the four checks on a busy 2-core host, U-VITAE 49 s, 51 s, 23 s and 72 s).
BUILT_IN = "vae"


def smallest(name: str) -> str:
    """A plug-in's model.py, its start: the smallest run ``name`` declares, the toy method (two
    networks, two optimizers) on the toy family."""
    return (
        "import dataclasses\n"
        "from toy_family import CONFIG\n"
        "from toy_method import TWO_NETWORK, TwoNetworkConfig\n"
        f"SMALLEST = CONFIG.replace(name='{name}_smallest', method=TwoNetworkConfig(name='{name}'), "
        "steps=4, log_every=2)\n"
    )


PLUG_INS = {
    "tiny": smallest("tiny")
    + "METHOD = dataclasses.replace(TWO_NETWORK, name='tiny', smallest_run=SMALLEST)\n",
    # Its logged loss is NaN from the first step.
    "nan_loss": smallest("nan_loss") + "import toy_method\n"
    "class NanLoss(toy_method.TwoNetworkModel):\n"
    "    def _decoder_terms(self, batch, step, training, earlier):\n"
    "        terms = super()._decoder_terms(batch, step, training, earlier)\n"
    "        return {**terms, 'loss': terms['loss'] * float('nan')}\n"
    "def build(config, image_shape):\n"
    "    model = toy_method.build(config, image_shape)\n"
    "    model.__class__ = NanLoss\n"
    "    return model\n"
    "METHOD = dataclasses.replace(TWO_NETWORK, name='nan_loss', build=build, smallest_run=SMALLEST)\n",
}


@pytest.fixture
def installed(monkeypatch, tmp_path, toy_family):
    """A distribution whose entry points name the plug-ins' packages, on this process's path, and
    the methods found again as a new process finds them."""
    site = tmp_path / "site"
    points = "".join(f"{name} = abc_contract_plugins.{name}\n" for name in PLUG_INS)
    files = {
        "abc_contract_plugins/__init__.py": "",
        "abc_contract_plugins-0.1.dist-info/METADATA": (
            "Metadata-Version: 2.1\nName: abc-contract-plugins\nVersion: 0.1\n"
        ),
        "abc_contract_plugins-0.1.dist-info/entry_points.txt": f"[abc_tf.methods]\n{points}",
    }
    for name, model in PLUG_INS.items():
        files[f"abc_contract_plugins/{name}/__init__.py"] = ""
        files[f"abc_contract_plugins/{name}/model.py"] = model
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    monkeypatch.syspath_prepend(str(site))
    # Another test of this process may have imported the plug-ins from its own folder: forget them,
    # so that these files are the ones imported.
    for module in [name for name in sys.modules if name.split(".")[0] == "abc_contract_plugins"]:
        monkeypatch.delitem(sys.modules, module)
    importlib.invalidate_caches()
    monkeypatch.setattr(
        methods,
        "METHODS",
        registry.discover(
            methods.__name__, methods.__path__, methods.ENTRY_POINT_GROUP, "model:METHOD", "method"
        ),
    )
    assert methods.METHODS["tiny"].package == "abc_contract_plugins.tiny" and "toy" in data.DATA_FAMILIES
    return site


@pytest.fixture
def shared_replicas(monkeypatch, two_replicas):
    """The command's two-replica check on the test run's shared strategy (tests/conftest.py): a second
    MirroredStrategy in one process would meet the first one's collective ops."""
    monkeypatch.setattr(contract, "replica_strategy", lambda: two_replicas)


def check(method: str, work_dir, capsys, monkeypatch) -> tuple[int, list[str]]:
    """``abc_tf check --method=METHOD --work_dir=WORK_DIR`` in this process: (status, its lines)."""
    monkeypatch.setattr(command_line, "INVOCATION", command_line.INVOCATION)  # cli.main sets it
    code = cli.main(["abc_tf", "check", f"--method={method}", f"--work_dir={work_dir}"])
    captured = capsys.readouterr()
    return code, captured.out.splitlines() + captured.err.splitlines()


@pytest.mark.slow
def test_a_built_in_method_passes_every_check(tmp_path, two_replicas, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # caches under HOME (a GAN's digit classifier)
    trained = contract.trains(BUILT_IN, str(tmp_path))
    assert set(trained.networks) >= {"encoder"} and trained.final_step == 4
    resumed = contract.resumes(BUILT_IN, str(tmp_path))
    assert (
        resumed.final_step == 4
        and [step for step, _ in checkpoints.list_checkpoints(resumed.run_dir)][-1] == 4
    )
    one, two = contract.two_replicas(BUILT_IN, str(tmp_path), strategy=two_replicas)
    assert two == pytest.approx(one, rel=contract.MIRRORED_RTOL)
    metrics = contract.evaluated(BUILT_IN, str(tmp_path), run_dir=trained.run_dir)
    assert "method" in metrics and os.path.isfile(os.path.join(trained.run_dir, "metrics.json"))


@pytest.mark.slow
def test_an_installed_plug_in_passes_every_check_of_the_command(
    installed, shared_replicas, tmp_path, capsys, monkeypatch
):
    code, lines = check("tiny", tmp_path / "work", capsys, monkeypatch)
    assert code == 0, lines
    assert [line.split(" (")[0] for line in lines] == [f"PASS {name}" for name in contract_checks()]
    assert (tmp_path / "work" / "trains" / "decoder.keras").is_file()
    assert (tmp_path / "work" / "trains" / "metrics.json").is_file()


@pytest.mark.slow
def test_a_plug_in_whose_loss_is_nan_fails_with_one_line_per_check(
    installed, shared_replicas, tmp_path, capsys, monkeypatch
):
    work = tmp_path / "work"
    code, lines = check("nan_loss", work, capsys, monkeypatch)
    assert code == 1 and len(lines) == len(contract_checks()), lines
    by_check = {line.split()[1].rstrip(":"): line for line in lines}
    assert (
        by_check["trains"].startswith("FAIL trains: ") and "The loss became nan at step" in by_check["trains"]
    )
    assert by_check["trains"].endswith(f"(log: {work / 'trains.log'})")
    assert by_check["two_replicas"].startswith("FAIL two_replicas: the first loss is nan on one device")
    assert (work / "trains.log").is_file()


def contract_checks() -> tuple[str, ...]:
    from abc_tf.cli import check as check_command

    return check_command.CHECKS


def test_a_method_whose_smallest_run_cannot_resume_is_told_why(monkeypatch):
    monkeypatch.setattr(contract, "smallest_run", lambda name: None)
    from toy_family import CONFIG

    with pytest.raises(ValueError, match="trains 10 steps with a checkpoint every 10: none before its end"):
        contract.resumes("abc", "unused", CONFIG.replace(steps=10, log_every=10))


def test_a_check_trains_into_an_empty_folder_only(tmp_path):
    (tmp_path / "trains").mkdir()
    (tmp_path / "trains" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="trains holds an earlier run; check in an empty work folder"):
        contract.fresh_folder(str(tmp_path), "trains")
    assert contract.fresh_folder(str(tmp_path), "resumes") == str(tmp_path / "resumes")
