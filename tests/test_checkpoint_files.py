"""abc_tf.runs.checkpoint_files: a run's complete checkpoints, from the state file or, without a
usable one, from the files on disk; a listed checkpoint with missing files is skipped."""

from __future__ import annotations

import os

import pytest

from abc_tf.runs import checkpoint_files, checkpoints
from checkpoint_helpers import assert_same_state, files, saved_steps, steps, trained_model


@pytest.mark.parametrize("damage", ["deleted", "unreadable", "names_none"])
def test_without_a_usable_state_file_the_checkpoints_on_disk_are_used_and_kept(tmp_path, damage):
    model = saved_steps(tmp_path, 5, 10)
    state = os.path.join(checkpoint_files.checkpoint_dir(str(tmp_path)), checkpoint_files.STATE_FILE)
    if damage == "deleted":
        os.remove(state)
    else:
        with open(state, "w") as handle:
            handle.write(
                "garbage {"
                if damage == "unreadable"
                else 'model_checkpoint_path: "ckpt-99"\nall_model_checkpoint_paths: "ckpt-99"\n'
            )
    expected = {
        "deleted": "is missing",
        "unreadable": "cannot be read",
        "names_none": "names no checkpoint whose files are there",
    }[damage]
    with pytest.warns(
        UserWarning, match=f"checkpoint \\(the list of checkpoints\\) {expected}|checkpoint {expected}"
    ):
        assert steps(tmp_path) == [5, 10]
    fresh = trained_model(0, seed=1)
    with pytest.warns(UserWarning, match="using the checkpoints found beside it: ckpt-5, ckpt-10"):
        assert checkpoints.restore(fresh, str(tmp_path)) == 10
    assert_same_state(fresh, model)
    # The next save writes the state file anew from them: nothing trained is deleted or overwritten.
    before = {
        name: os.path.getmtime(os.path.join(checkpoint_files.checkpoint_dir(str(tmp_path)), name))
        for name in files(tmp_path)
        if name.startswith("ckpt-")
    }
    fresh.optimizer.iterations.assign(15)
    checkpoints.save(fresh, str(tmp_path), step=15, keep=3)
    assert steps(tmp_path) == [5, 10, 15]
    for name, mtime in before.items():
        assert os.path.getmtime(os.path.join(checkpoint_files.checkpoint_dir(str(tmp_path)), name)) == mtime


def test_a_checkpoint_with_half_its_files_is_not_taken_from_disk(tmp_path):
    saved_steps(tmp_path, 5, 10)
    directory = checkpoint_files.checkpoint_dir(str(tmp_path))
    os.remove(os.path.join(directory, checkpoint_files.STATE_FILE))
    os.remove(os.path.join(directory, "ckpt-10.data-00000-of-00001"))
    with pytest.warns(UserWarning, match="using the checkpoints found beside it: ckpt-5\\."):
        assert steps(tmp_path) == [5]


def test_a_newest_checkpoint_without_its_index_is_skipped_with_a_warning(tmp_path):
    saved_steps(tmp_path, 5, 10)
    os.remove(os.path.join(checkpoint_files.checkpoint_dir(str(tmp_path)), "ckpt-10.index"))
    with pytest.warns(
        UserWarning,
        match="ckpt-10 is skipped: its index file .*ckpt-10.index is missing; "
        "the newest complete one is step 5",
    ):
        assert steps(tmp_path) == [5]
