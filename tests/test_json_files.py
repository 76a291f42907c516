"""abc_tf.json_files: the one JSON writer, atomic."""

from __future__ import annotations

import json
import os

from abc_tf import json_files


def test_writes_the_value_indented_and_leaves_no_temporary_file(tmp_path):
    path = str(tmp_path / "metrics.json")
    json_files.write_json(path, {"b": 1, "a": [1.5, None]})
    with open(path) as handle:
        text = handle.read()
    assert json.loads(text) == {"b": 1, "a": [1.5, None]}
    assert text.startswith('{\n  "b"')  # indent=2, keys in the given order
    assert os.listdir(tmp_path) == ["metrics.json"]


def test_options_reach_json_dump_and_a_rewrite_replaces_the_file(tmp_path):
    path = str(tmp_path / "config.json")
    json_files.write_json(path, {"b": 1, "a": 2})
    json_files.write_json(path, {"b": 3, "a": 4}, sort_keys=True)
    with open(path) as handle:
        text = handle.read()
    assert text.index('"a"') < text.index('"b"') and json.loads(text) == {"a": 4, "b": 3}


def test_a_value_json_cannot_hold_leaves_the_old_file_whole(tmp_path):
    path = str(tmp_path / "prior.json")
    json_files.write_json(path, {"step": 1})
    try:
        json_files.write_json(path, {"step": object()})
    except TypeError:
        pass
    with open(path) as handle:
        assert json.load(handle) == {"step": 1}
