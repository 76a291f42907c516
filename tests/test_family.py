"""The data-family interface (abc_tf.data.family) and its registry (abc_tf.data): every
registered family declares itself completely, ``stream`` picks the batch format, grouped
images give their sampler, and continuous values are binned evenly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from abc_tf.runs import experiments
from abc_tf import data
from abc_tf.config import DataConfig
from abc_tf.registry import ContractError
from abc_tf.data.family import BATCH_FORMATS, DataFamily, GroupedImages, KnownFactors, quantile_bins

BASE_FIELDS = set(DataConfig.field_names())


@pytest.mark.parametrize("name", sorted(data.DATA_FAMILIES))
def test_every_registered_family_is_a_data_family_with_its_fields(name):
    family = data.get_family(name)
    assert isinstance(family, DataFamily) and family.name == name
    # Its fields are those of its config class: every family's family, source and path, and its own.
    config_class = experiments.data_config_class(name)
    assert issubclass(config_class, DataConfig) and BASE_FIELDS <= set(config_class.field_names())
    assert config_class(family=name).family == name and config_class().part_name() == "data"
    assert config_class is family.config
    assert callable(family.image_shape) and callable(family.check_config)
    assert family.batch_formats and set(family.batch_formats) <= set(BATCH_FORMATS)
    for batch_format in family.batch_formats:
        assert (
            callable(family.stream(batch_format))
            and family.stream(batch_format) is family.streams[batch_format]
        )
    assert family.known_factors is None or isinstance(family.known_factors, KnownFactors)
    # Something for the evaluators: every shipped family offers labels, or a task of its own.
    assert family.known_factors or family.grouped_images or family.pose_views or ":" in family.evaluation_task


def test_stream_names_the_format_and_unknown_formats_are_refused():
    sets, pairs = (lambda config, seed, start_step=0: "sets"), (lambda config, seed, start_step=0: "pairs")
    family = DataFamily(
        name="two",
        config=DataConfig,
        image_shape=lambda config: (4, 4, 1),
        streams={"sets": sets, "pairs": pairs},
    )
    assert family.batch_formats == ("sets", "pairs")
    assert family.stream("sets") is sets and family.stream("pairs") is pairs
    assert DataFamily(
        name="one", config=DataConfig, image_shape=None, streams={"pairs": pairs}
    ).batch_formats == ("pairs",)
    # A declaration that breaks the contract is refused in one line naming the family and the docs.
    with pytest.raises(
        ContractError,
        match="^The data family 'bad' streams the batch formats \\['triples'\\]; .*abc_tf.examples.squares",
    ):
        DataFamily(name="bad", config=DataConfig, image_shape=None, streams={"triples": pairs})
    with pytest.raises(
        ContractError, match="^The data family 'bad': config=<class 'int'> is not a DataConfig subclass"
    ):
        DataFamily(name="bad", config=int, image_shape=None, streams={"sets": sets})
    # The optional parts do nothing by default.
    assert (
        family.check_config(experiments.config_for()) is None
        and family.training_callbacks(experiments.config_for()) == []
    )


def test_the_registry_names_the_known_families_and_refuses_fields_of_others():
    with pytest.raises(ValueError, match="Unknown data family 'faces'; choose one of: "):
        data.get_family("faces")
    # A field only other families read is not one of MNIST's: its config class lacks it.
    assert "holdout_digit" in experiments.data_config_class("mnist").field_names()
    assert "image_size" not in experiments.data_config_class("mnist").field_names()
    mnist = experiments.config_for(data="mnist", source="procedural")
    with pytest.raises(
        ValueError,
        match="data family 'mnist' \\(MnistConfig\\) has no field 'image_size'; "
        "its fields: source, path, holdout_digit",
    ):
        experiments.override(mnist, {"data.image_size": 32})
    with pytest.raises(ValueError, match="This config has no field 'image_size' \\(data family 'mnist'"):
        mnist.replace(image_size=32)
    assert data.check_config(experiments.config_for(data="mnist", source="procedural")) is data.get_family(
        "mnist"
    )


def test_factors_augmented_by_the_baseline_are_known_factors():
    def declare(augmented):
        return KnownFactors(
            ("digit", "slant"), (10, 4), labelled_sample=None, inactive=None, augmented_by_baseline=augmented
        )

    assert declare(()).augmented_by_baseline == () and declare(("slant",)).augmented_by_baseline == ("slant",)
    with pytest.raises(ValueError, match=r"augmented_by_baseline names \['hue'\], not among the factors"):
        declare(("slant", "hue"))
    assert data.get_family("shapes3d").known_factors.augmented_by_baseline == (
        "floor_hue",
        "wall_hue",
        "object_hue",
    )


def test_grouped_images_give_their_group_index():
    grouped = GroupedImages(
        images=np.zeros((5, 2, 2, 1), np.uint8),
        group_names=["a", "b", "c"],
        groups=np.array([0, 0, 2, 2, 2], np.int32),
        files=[str(i) for i in range(5)],
    )
    index = grouped.group_index()
    assert index.counts.tolist() == [2, 0, 3] and index.offsets.tolist() == [0, 2, 2]
    assert tuple(index.names) == ("a", "b", "c")
    with pytest.raises(ValueError, match="sorted by group"):
        dataclasses.replace(grouped, groups=np.array([0, 2, 0, 2, 2])).group_index()


def test_quantile_bins_split_evenly():
    bins = quantile_bins(np.arange(100.0), 4)
    assert np.bincount(bins).tolist() == [25, 25, 25, 25]
    # Ties and unsorted values: each value's bin follows its rank.
    values = np.array([5.0, 1.0, 3.0, 3.0, 9.0, 7.0])
    assert quantile_bins(values, 2).tolist() == [1, 0, 0, 0, 1, 1]
