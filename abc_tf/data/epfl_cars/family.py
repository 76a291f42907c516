"""EPFL multi-view cars (supplement S8.4), family ``epfl_cars``: a group is one car's turntable sequence.

Ozuysal et al. 2009: 20 sequences of 376x250 JPEGs, about 3-4 degrees between frames.
``--data.path`` holds the data set as distributed, or is the folder above ``tripod-seq/``::

    data_path/tripod-seq.txt                 metadata, 7 lines (below)
    data_path/tripod_seq_01_001.jpg ...      frames, 1-based, named by line 3's pattern
    data_path/times.txt                      optional: capture time of every frame, a line per sequence

``tripod-seq.txt``: (1) number of sequences, image width, height; (2) frames per sequence; (3) file name
pattern ``tripod_seq_%02i_%03i.jpg``; (4) bounding-box file pattern; (5) per sequence, the frame a full
turn after frame 1; (6) the frame showing the front; (7) the rotation direction, +1 or -1.
Bounding boxes are unused: the paper did not tight-crop. A set is ``--batch.set_size=81`` frames of one
sequence. Labels, for evaluation only: car, and azimuth_bin (``AZIMUTH_BINS`` bins, :func:`epfl_azimuths`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from abc_tf.config import ExperimentConfig
from abc_tf.data.family import GroupedImages
from abc_tf.data.folders import family as folders
from abc_tf.data.folders.image_files import load_images

EPFL_METADATA = "tripod-seq.txt"
EPFL_TIMES = "times.txt"
AZIMUTH_BINS = 8


@dataclasses.dataclass(frozen=True)
class EpflMetadata:
    """The content of ``tripod-seq.txt``; frame numbers are 1-based as in the file."""

    num_sequences: int
    width: int
    height: int
    frames: tuple[int, ...]
    file_pattern: str
    bbox_pattern: str
    full_turn_frames: tuple[int, ...]
    front_frames: tuple[int, ...]
    directions: tuple[int, ...]

    def file_name(self, sequence: int, frame: int) -> str:
        """1-based sequence and frame -> file name, e.g. tripod_seq_01_001.jpg."""
        return self.file_pattern % (sequence, frame)


def _int_line(
    path: str, lines: list[str], index: int, what: str, count: int | None = None
) -> tuple[int, ...]:
    try:
        values = tuple(int(float(token)) for token in lines[index].split())
    except (IndexError, ValueError):
        raise ValueError(f"{path}, line {index + 1}: expected integers ({what}).") from None
    if count is not None and len(values) != count:
        raise ValueError(
            f"{path}, line {index + 1}: {len(values)} values for {what}, {count} expected (one per sequence)."
        )
    return values


def read_epfl_metadata(path: str | os.PathLike) -> EpflMetadata:
    """Parses ``tripod-seq.txt`` (module docstring); raises ValueError naming file and line."""
    path = str(path)
    with open(path) as handle:
        lines = [line.strip() for line in handle if line.strip()]
    if len(lines) < 7:
        raise ValueError(f"{path}: {len(lines)} non-empty lines, 7 expected (EPFL tripod-seq.txt format).")
    first = _int_line(path, lines, 0, "number of sequences, image width, height")
    if len(first) < 1 or first[0] <= 0:
        raise ValueError(f"{path}, line 1: the number of sequences must be positive.")
    count = first[0]
    width, height = (first[1], first[2]) if len(first) >= 3 else (0, 0)
    frames = _int_line(path, lines, 1, "frames per sequence", count)
    pattern, bbox_pattern = lines[2], lines[3]
    try:
        pattern % (1, 1)
    except (TypeError, ValueError):
        raise ValueError(
            f"{path}, line 3: {pattern!r} is no file name pattern with two integer fields."
        ) from None
    full_turn = _int_line(path, lines, 4, "frame of a full turn", count)
    front = _int_line(path, lines, 5, "frontal frame", count)
    directions = _int_line(path, lines, 6, "rotation direction", count)
    for sequence in range(count):
        number = sequence + 1
        if frames[sequence] <= 0:
            raise ValueError(f"{path}, line 2: sequence {number} has {frames[sequence]} frames.")
        if not 1 <= front[sequence] <= frames[sequence]:
            raise ValueError(
                f"{path}, line 6: frontal frame {front[sequence]} of sequence {number} is outside "
                f"1..{frames[sequence]}."
            )
        if full_turn[sequence] < 2:
            raise ValueError(
                f"{path}, line 5: full-turn frame {full_turn[sequence]} of sequence {number} must be at "
                "least 2."
            )
        if directions[sequence] not in (1, -1):
            raise ValueError(
                f"{path}, line 7: rotation direction of sequence {number} is {directions[sequence]}, not 1 "
                "or -1."
            )
    return EpflMetadata(count, width, height, frames, pattern, bbox_pattern, full_turn, front, directions)


def _read_times(path: str, metadata: EpflMetadata) -> list[np.ndarray]:
    with open(path) as handle:
        lines = [line for line in handle if line.strip()]
    if len(lines) < metadata.num_sequences:
        raise ValueError(f"{path}: {len(lines)} lines, one per sequence ({metadata.num_sequences}) expected.")
    times = []
    for sequence in range(metadata.num_sequences):
        try:
            row = np.array([float(token) for token in lines[sequence].split()])
        except ValueError:
            raise ValueError(f"{path}, line {sequence + 1}: expected numbers (capture times).") from None
        needed = max(metadata.frames[sequence], metadata.full_turn_frames[sequence])
        if row.size < needed:
            raise ValueError(f"{path}, line {sequence + 1}: {row.size} times, {needed} frames need one each.")
        times.append(row)
    return times


def epfl_azimuths(metadata: EpflMetadata, times: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Azimuth in degrees [0, 360) of every frame, per sequence; 0 = the frontal frame.

    ``direction * (t_j - t_front) * 360 / (t_full - t_1)`` mod 360, with the capture times t of
    ``times.txt``, as the turntable turns at constant speed. Frame numbers stand in for the times t
    when ``times`` is None.
    """
    azimuths = []
    for sequence in range(metadata.num_sequences):
        count = metadata.frames[sequence]
        if times is None:
            t = np.arange(1, max(count, metadata.full_turn_frames[sequence]) + 1, dtype=np.float64)
        else:
            t = times[sequence]
        period = t[metadata.full_turn_frames[sequence] - 1] - t[0]
        if not period > 0:
            raise ValueError(
                f"EPFL metadata: sequence {sequence + 1} has a non-positive full-turn time ({period})."
            )
        relative = t[:count] - t[metadata.front_frames[sequence] - 1]
        azimuths.append(np.mod(metadata.directions[sequence] * relative * 360.0 / period, 360.0))
    return azimuths


def azimuth_bins(azimuth: np.ndarray, bins: int = AZIMUTH_BINS) -> np.ndarray:
    """Degrees -> bin index in 0..bins-1; bin 0 is centred on the front view (0 degrees)."""
    width = 360.0 / bins
    return (np.floor(np.mod(np.asarray(azimuth) + width / 2, 360.0) / width).astype(np.int32)) % bins


def _epfl_root(root: str | os.PathLike) -> Path:
    root_path = Path(root)
    for candidate in (root_path, root_path / "tripod-seq"):
        if (candidate / EPFL_METADATA).is_file():
            return candidate
    raise ValueError(
        f"--data.path {str(root)!r}: no {EPFL_METADATA} there or in its tripod-seq/ folder "
        "(EPFL multi-view car data set layout expected)."
    )


def load_epfl(
    root: str | os.PathLike, image_size: int, channels: int = 3, bins: int = AZIMUTH_BINS
) -> GroupedImages:
    """EPFL multi-view cars as grouped images, one group per sequence (car).

    The grouped set sampler of ``abc_tf.data.folders.family`` draws sets from them. Labels: car (the
    sequence) and azimuth_bin; ``attributes["azimuth"]`` keeps the azimuth in degrees.
    Raises ValueError naming the first missing frame file.
    """
    base = _epfl_root(root)
    metadata = read_epfl_metadata(base / EPFL_METADATA)
    times = _read_times(str(base / EPFL_TIMES), metadata) if (base / EPFL_TIMES).is_file() else None
    azimuths = epfl_azimuths(metadata, times)
    files, groups = [], []
    for sequence in range(metadata.num_sequences):
        for frame in range(1, metadata.frames[sequence] + 1):
            name = metadata.file_name(sequence + 1, frame)
            if not (base / name).is_file():
                raise ValueError(
                    f"{base / name} is missing: {EPFL_METADATA} lists {metadata.frames[sequence]} frames "
                    f"for sequence {sequence + 1}."
                )
            files.append(name)
            groups.append(sequence)
    images = load_images([base / f for f in files], image_size, channels)
    groups_array = np.array(groups, np.int32)
    azimuth = np.concatenate(azimuths)
    group_names = [f"seq_{s + 1:02d}" for s in range(metadata.num_sequences)]
    labels = {"car": groups_array.copy(), "azimuth_bin": azimuth_bins(azimuth, bins)}
    label_values = {
        "car": np.array(group_names, dtype=object),
        "azimuth_bin": np.arange(bins, dtype=np.float64) * 360.0 / bins,
    }
    return GroupedImages(images, group_names, groups_array, files, labels, label_values, {"azimuth": azimuth})


def _read_epfl(config: ExperimentConfig) -> GroupedImages:
    if folders.parse_inactive(config.data.inactive_factors) != "car":
        raise ValueError(
            f"--data.inactive_factors={config.data.inactive_factors!r} for epfl_cars: a set is one car's "
            "sequence; use 'car'."
        )
    return load_epfl(config.data.path, config.data.image_size, config.data.image_channels)


FAMILY = folders.file_layout_family("epfl_cars", _read_epfl)
