"""abc_tf.runs.experiments: the presets beside their methods, choosing another family, method or
encoder, and dotted overrides."""

import re
import subprocess
import sys

import pytest

from abc_tf import data, methods, registry
from abc_tf.runs import experiments
from abc_tf.config import EncoderConfig, ImageBatch, PairBatch, SetBatch
from abc_tf.data.mnist import MnistConfig
from abc_tf.methods.vae import VaeConfig


def test_every_registered_family_and_method_has_its_config_class():
    for name in data.DATA_FAMILIES:
        assert experiments.data_config_class(name)(family=name).family == name
    for name in methods.METHODS:
        cls = experiments.method_config_class(name)
        assert cls.batch_format in ("sets", "pairs", "images") and cls(name=name).name == name
    with pytest.raises(
        ValueError,
        match=re.escape(f"Unknown method 'gan'; choose one of: {', '.join(sorted(methods.METHODS))}."),
    ):
        experiments.method_config_class("gan")


def test_presets_live_beside_their_methods_and_name_themselves():
    presets = experiments.presets()
    assert all(name == preset.name for name, preset in presets.items())
    assert {
        "shapes3d",
        "shapes3d_demo",
        "mnist",
        "pose_quick",
        "mnist_vae_quick",
        "mnist_u_vitae",
        "shapes3d_pmp_quick",
        "mnist_ml_vae_quick",
        "mnist_cc_vae_quick",
        "pose_lord_quick",
        "mnist_elastic_infogan_quick",
    } <= set(presets)
    assert {preset.method.name for preset in presets.values()} == set(methods.METHODS)
    assert (
        isinstance(presets["mnist_vae_quick"].method, VaeConfig)
        and presets["mnist_vae_quick"].encoder is None
    )


def test_a_broken_package_costs_only_its_own_presets(tmp_path, monkeypatch):
    (tmp_path / "broken_lab").mkdir()
    (tmp_path / "broken_lab" / "__init__.py").write_text("PRESETS = {}\nraise RuntimeError('a typo')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(methods.METHODS, "broken", registry.Entry("broken_lab.model:METHOD", "broken_lab"))
    assert experiments.get_preset("mnist").name == "mnist"
    where = f"{tmp_path / 'broken_lab' / '__init__.py'}:2: the method package broken_lab failed to import"
    with pytest.warns(UserWarning, match=re.escape(where)):
        assert "mnist" in experiments.presets()
    with pytest.raises(
        ValueError, match=f"Unknown experiment 'lab'; .*{re.escape(where)}: RuntimeError: a typo"
    ):
        experiments.get_preset("lab")


@pytest.mark.slow
def test_finding_a_preset_loads_no_declaration_and_no_tensorflow():
    code = (
        "import sys; from abc_tf.runs import experiments; experiments.get_preset('mnist_ml_vae'); "
        "print(sorted(name for name in sys.modules if name.endswith(('.model', '.family', 'tensorflow'))))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "[]\n"


def test_choose_keeps_the_method_fields_the_classes_share_and_starts_another_family_from_its_defaults():
    mnist = experiments.get_preset("mnist").replace(source="idx", temperature=0.5, steps=9)
    vae = experiments.choose(mnist, method="vae")
    assert isinstance(vae.batch, ImageBatch) and vae.encoder is None and isinstance(vae.method, VaeConfig)
    assert (vae.data, vae.trainer) == (mnist.data, mnist.trainer)  # the family and trainer are untouched
    assert vae.name == "mnist_with_vae" and experiments.choose(mnist, data="pose", method="vae").name == (
        "mnist_on_pose_with_vae"
    )
    contrastive = experiments.choose(mnist, method="contrastive")
    assert (contrastive.method.name, contrastive.method.temperature, contrastive.batch) == (
        "contrastive",
        0.5,
        mnist.batch,
    )
    pose = experiments.choose(mnist, data="pose", encoder="s5_small", set_size=8)
    assert (pose.data.family, pose.data.source, pose.encoder.architecture, pose.batch.set_size) == (
        "pose",
        "auto",
        "s5_small",
        8,
    )
    assert pose.name == "mnist_on_pose" and pose.data == experiments.data_config_class("pose")(family="pose")
    pmp = experiments.choose(experiments.get_preset("shapes3d"), method="pmp")
    assert isinstance(pmp.batch, PairBatch) and pmp.batch.pairs_per_step == 1
    with pytest.raises(ValueError, match="--encoder=s3: method 'vae' has no encoder to choose"):
        experiments.choose(mnist, method="vae", encoder="s3")


def test_override_takes_dotted_fields_and_names_the_parts_fields():
    config = experiments.get_preset("mnist_vae_quick")
    changed = experiments.override(
        config, {"trainer.steps": 3, "method.latent_dim": 6, "data.holdout_digit": "none"}
    )
    assert (changed.trainer.steps, changed.method.latent_dim, changed.data.holdout_digit) == (3, 6, "none")
    with pytest.raises(
        ValueError,
        match=r"--method\.temperature: method 'vae' \(VaeConfig\) has no field 'temperature'; "
        r"its fields: latent_dim, kl_warmup, affine_augmentation\.",
    ):
        experiments.override(config, {"method.temperature": 0.5})
    with pytest.raises(
        ValueError, match="--encoder.embedding_dim: this run has no encoder part; its parts: trainer, data"
    ):
        experiments.override(config, {"encoder.embedding_dim": 8})
    with pytest.raises(ValueError, match="--method.name: method 'vae'"):  # chosen with --method
        experiments.override(config, {"method.name": "abc"})


def test_config_for_builds_a_config_of_the_classes_defaults():
    config = experiments.config_for(data="mnist", method="abc", encoder="s4", steps=5)
    assert isinstance(config.data, MnistConfig) and isinstance(config.batch, SetBatch)
    assert config.encoder == EncoderConfig(architecture="s4") and config.trainer.steps == 5
