"""tfds builders without the litter tfds leaves.

Building the builder of a data set that is not prepared makes an empty temporary folder that
nothing removes. In tfds 4.9, ``DatasetInfo.initialize_from_bucket`` makes it to copy metadata
from GCS. Our sources build one to ask whether a data set is prepared, and "auto" MNIST asks on
every run. So a user's temporary directory would fill with empty ``tmp*tfds`` folders.
"""

from __future__ import annotations

import tempfile

from absl import logging


def builder(name: str, data_dir: str | None = None):
    """``tfds.builder(name, data_dir=data_dir or None)``, its temporary folder made inside one of
    ours and removed on return.

    It swaps ``tempfile.tempdir`` for the call. That is safe: the main thread opens data sets
    before training starts.
    """
    import tensorflow_datasets as tfds  # imported lazily: slow, and only the tfds sources need it

    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="abc_tf_tfds_") as scratch:
        tempfile.tempdir = scratch
        try:
            return tfds.builder(name, data_dir=data_dir or None)
        finally:
            tempfile.tempdir = saved


def is_prepared(builder) -> bool:
    """``builder.is_prepared()`` without tfds's warning for a folder that lacks the data set.

    The warning reads "Variant folder ... has no dataset_info.json". The answer says it, and the
    caller says it in its own words.
    """
    verbosity = logging.get_verbosity()
    logging.set_verbosity(logging.ERROR)
    try:
        return bool(builder.is_prepared())
    finally:
        logging.set_verbosity(verbosity)
