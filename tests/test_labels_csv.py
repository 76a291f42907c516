"""Label CSV files (abc_tf.data.folders.labels_csv): rows matched by path or unique name, typed columns,
class indices, and errors naming the file and line."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data.folders import labels_csv

FILES = ["a/img_000.png", "a/img_001.png", "a/img_002.png", "b/img_000.png", "b/img_001.png"]


def test_rows_match_paths_and_names_and_columns_are_typed(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(
        "\ufeffFilename,colour,size\n"  # a byte-order mark, as spreadsheets write it
        "a/img_000.png,red,1\n"
        "./a/img_001.png,blue,2\n"
        "b\\img_000.png,red,\n"  # backslashes and an empty cell
        "\n"
        "b/img_001.png,green,3\n"
    )
    columns = labels_csv.read_labels_csv(path, FILES)
    assert columns["colour"] == ["red", "blue", None, "red", "green"]  # a/img_002.png has no row: unknown
    assert columns["size"] == [1.0, 2.0, None, None, 3.0]
    # A bare file name matches when it is unique.
    path.write_text("image,kind\nimg_002.png,cat\n")
    assert labels_csv.read_labels_csv(path, FILES)["kind"] == [None, None, "cat", None, None]


def test_encode_labels_sorts_classes_and_marks_unknowns():
    codes, values = labels_csv.encode_labels(["red", "blue", None, "red", "green", ""])
    assert list(values) == ["blue", "green", "red"]
    np.testing.assert_array_equal(codes, [2, 0, -1, 2, 1, -1])
    codes, values = labels_csv.encode_labels([3.0, 1.0, None, 2.0, 10.0])
    np.testing.assert_array_equal(values, [1.0, 2.0, 3.0, 10.0])  # numbers sort numerically
    np.testing.assert_array_equal(codes, [2, 0, -1, 1, 3])
    assert codes.dtype == np.int32


def test_errors_name_the_file_and_line(tmp_path):
    files = ["a/img_000.png", "a/img_001.png", "b/img_000.png", "b/img_001.png"]
    path = tmp_path / "labels.csv"
    path.write_text("filename,colour\na/missing.png,red\n")
    with pytest.raises(ValueError, match="missing.png.*names no image"):
        labels_csv.read_labels_csv(path, files)
    path.write_text("filename,colour\nimg_000.png,red\n")  # bare name, in both groups
    with pytest.raises(ValueError, match="matches several images"):
        labels_csv.read_labels_csv(path, files)
    path.write_text("filename,colour\na/img_000.png,red,extra\n")
    with pytest.raises(ValueError, match="line 2"):
        labels_csv.read_labels_csv(path, files)
    path.write_text("filename\na/img_000.png\n")
    with pytest.raises(ValueError, match="no label columns"):
        labels_csv.read_labels_csv(path, files)
    path.write_text("")
    with pytest.raises(ValueError, match="empty"):
        labels_csv.read_labels_csv(path, files)


def test_a_latin1_file_is_not_utf8_text(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_bytes("filename,colour\na.png,rosé\n".encode("latin-1"))
    with pytest.raises(ValueError) as error:
        labels_csv.read_labels_csv(str(path), ["a.png"])
    assert f"{tmp_path}/labels.csv is not UTF-8 text" in str(error.value)
    assert "\n" not in str(error.value)
