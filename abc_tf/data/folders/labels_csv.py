"""Label CSV files (``labels.csv`` of a folder family): labels for evaluation, never training.

The file names each image by its path relative to the data directory (column ``filename``,
``file``, ``path`` or ``image``; else the first column) and holds any number of label columns
(numbers or words). Labels become class indices (:func:`encode_labels`).
"""

from __future__ import annotations

import csv
import os
from typing import Sequence

import numpy as np

LABELS_FILE = "labels.csv"
_PATH_COLUMNS = ("filename", "file", "path", "image")


def encode_labels(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Values (numbers or strings; None/'' = unknown) -> (int32 class index [N], sorted distinct values).

    Numbers sort numerically, words alphabetically; unknown entries get class -1.
    """
    present = [v for v in values if v is not None and v != "" and not (isinstance(v, float) and np.isnan(v))]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in present)
    distinct = np.array(sorted(set(present)), dtype=np.float64 if numeric else object)
    lookup = {value: index for index, value in enumerate(distinct.tolist())}
    codes = np.array([lookup.get(v, -1) if v is not None and v != "" else -1 for v in values], np.int32)
    return codes, distinct


def _normalise_path(text: str) -> str:
    """'./a\\b.png ' -> 'a/b.png': CSV paths compare with forward slashes, no leading './'."""
    text = text.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def _typed_column(cells: list[str | None]) -> list[float | str | None]:
    """A column is numeric (floats) when every present cell parses as a number, else text."""
    present = [cell for cell in cells if cell is not None]
    try:
        numbers = {cell: float(cell) for cell in present}
    except ValueError:
        return list(cells)
    return [None if cell is None else numbers[cell] for cell in cells]


def read_labels_csv(path: str | os.PathLike, files: Sequence[str]) -> dict[str, list]:
    """Reads a label CSV: {column: [value per file]} aligned with ``files`` (relative paths).

    Rows are matched on the path relative to the data directory, or on the bare file name
    when that is unique. Columns of numbers become floats, others strings; a missing row or
    empty cell is None. A row naming no known image raises ValueError (a typo or wrong root).
    """
    path = str(path)
    # utf-8-sig: spreadsheet programs often start CSV files with a byte-order mark.
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {error.object[error.start]:#x} at offset {error.start}); "
            "save the label CSV as UTF-8."
        ) from None
    except csv.Error as error:
        raise ValueError(f"{path} is not a readable CSV file ({error}).") from None
    if not rows:
        raise ValueError(f"{path}: the label CSV is empty (a header row is needed).")
    header = [name.strip() for name in rows[0]]
    lowered = [name.lower() for name in header]
    key_column = next((lowered.index(name) for name in _PATH_COLUMNS if name in lowered), 0)
    label_columns = [index for index in range(len(header)) if index != key_column]
    if not label_columns:
        raise ValueError(f"{path}: no label columns besides the file column {header[key_column]!r}.")
    normalised = [_normalise_path(file.replace(os.sep, "/")) for file in files]
    by_path = {file: index for index, file in enumerate(normalised)}
    basenames: dict[str, list[int]] = {}
    for index, file in enumerate(normalised):
        basenames.setdefault(file.rsplit("/", 1)[-1], []).append(index)
    cells: dict[str, list[str | None]] = {header[c]: [None] * len(files) for c in label_columns}
    for line_number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ValueError(f"{path}, line {line_number}: {len(row)} cells, the header has {len(header)}.")
        name = _normalise_path(row[key_column])
        index = by_path.get(name)
        if index is None:
            candidates = basenames.get(name, [])
            if len(candidates) != 1:
                reason = (
                    "matches several images; give its path relative to the data directory"
                    if candidates
                    else "names no image of the data directory"
                )
                raise ValueError(f"{path}, line {line_number}: {name!r} {reason}.")
            index = candidates[0]
        for column in label_columns:
            cells[header[column]][index] = row[column].strip() or None
    return {name: _typed_column(column) for name, column in cells.items()}
