"""Extended YaleB faces (supplement S8.4), family ``yaleb``: ``--data.path`` is the data set as distributed.

It becomes :class:`abc_tf.data.family.GroupedImages`, drawn by ``abc_tf.data.folders.family``'s set sampler.
Pose and illumination are labels for evaluation only; training sees set membership alone.
The uncropped data set has 28 people, ``yaleB11`` .. ``yaleB39`` without ``yaleB14``, in 640x480 gray PGM::

    data_path/yaleB11/yaleB11_P00A+000E+00.pgm     person yaleB11, pose P00 (of P00..P08),
    data_path/yaleB11/yaleB11_P00A-005E+10.pgm     light azimuth -5 deg, elevation +10 deg
    data_path/yaleB11/yaleB11_P00_Ambient.pgm      ambient image (no light): skipped

``--data.inactive_factors=person,pose`` groups one person in one pose. Its 64 illuminations form a set,
with ``--batch.set_size=64``. ``person`` groups one person's 576 images, and a set draws
``--batch.set_size=384`` of them. Labels: person, pose, light_azimuth, light_elevation; the classes are
their distinct values.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from abc_tf.config import ExperimentConfig
from abc_tf.data.family import GroupedImages
from abc_tf.data.folders import family as folders
from abc_tf.data.folders.image_files import load_images
from abc_tf.data.folders.labels_csv import encode_labels

YALEB_FILE = re.compile(r"^(yaleB\d+)_P(\d{2})A([+-]\d{3})E([+-]\d{2})\.pgm$", re.IGNORECASE)
YALEB_AMBIENT = re.compile(r"^yaleB\d+_P\d{2}_Ambient\.pgm$", re.IGNORECASE)
YALEB_GROUPINGS = {"person,pose": ("person", "pose"), "person": ("person",)}


def scan_yaleb(root: str | os.PathLike) -> tuple[list[str], list[tuple[str, str, int, int, int]]]:
    """Sorted person folder names, and each lit image's relative path, person, pose, light azimuth
    and elevation.

    The images are sorted by person, pose and light. Raises ValueError when ``root`` holds no
    person folders, or on a PGM whose name breaks the YaleB naming. Other extensions, e.g.
    ``.info`` or ``.bad``, are ignored.
    """
    root_path = Path(root)
    if not str(root) or not root_path.is_dir():
        raise ValueError(
            f"--data.path {str(root)!r} is not a directory (Extended YaleB person folders expected)."
        )
    person_dirs = sorted(p for p in root_path.iterdir() if p.is_dir() and p.name.lower().startswith("yaleb"))
    if not person_dirs:
        raise ValueError(
            f"--data.path {root} holds no person folders named like 'yaleB11' (Extended YaleB layout "
            "yaleB11/yaleB11_P00A+000E+00.pgm)."
        )
    entries = []
    for person_dir in person_dirs:
        for path in sorted(person_dir.rglob("*")):
            if not path.is_file() or path.suffix.lower() != ".pgm" or YALEB_AMBIENT.match(path.name):
                continue
            match = YALEB_FILE.match(path.name)
            if match is None:
                raise ValueError(
                    f"{path}: not an Extended YaleB file name (expected e.g. yaleB11_P00A+000E+00.pgm "
                    "or yaleB11_P00_Ambient.pgm)."
                )
            person, pose, azimuth, elevation = match.groups()
            if person.lower() != person_dir.name.lower():
                raise ValueError(f"{path}: image of {person} in the folder of {person_dir.name}.")
            entries.append(
                (str(path.relative_to(root_path)), person_dir.name, int(pose), int(azimuth), int(elevation))
            )
    # Sorted by person, pose, then light: rows of one group are contiguous for either grouping.
    entries.sort(key=lambda e: (e[1], e[2], e[3], e[4]))
    return [p.name for p in person_dirs], entries


def load_yaleb(
    root: str | os.PathLike, image_size: int, channels: int = 1, inactive: str = "person,pose"
) -> GroupedImages:
    """Extended YaleB as grouped images [N, image_size, image_size, channels] uint8.

    inactive: "person,pose" for a group per person and pose, or "person" for a group per person.
    Person folders without lit images become empty groups, which the sampler skips.
    """
    inactive = folders.parse_inactive(inactive)
    if inactive not in YALEB_GROUPINGS:
        raise ValueError(
            f"--data.inactive_factors={inactive!r} for yaleb: use 'person,pose' (illumination active) "
            "or 'person' (pose and illumination active)."
        )
    person_names, entries = scan_yaleb(root)
    if not entries:
        raise ValueError(
            f"--data.path {root}: no lit YaleB images (yaleBXX_PxxA...E....pgm) in any person folder."
        )
    files = [e[0] for e in entries]
    person, pose, azimuth, elevation = (np.array([e[k] for e in entries]) for k in (1, 2, 3, 4))
    if YALEB_GROUPINGS[inactive] == ("person",):
        group_names = person_names
        group_of = {name: index for index, name in enumerate(group_names)}
        groups = np.array([group_of[p] for p in person], np.int32)
    else:
        poses = sorted(set(pose.tolist()))
        group_names = [f"{p}/P{q:02d}" for p in person_names for q in poses]
        group_of = {name: index for index, name in enumerate(group_names)}
        groups = np.array([group_of[f"{p}/P{q:02d}"] for p, q in zip(person, pose)], np.int32)
    images = load_images([os.path.join(root, f) for f in files], image_size, channels)
    labels, label_values = {}, {}
    for name, values in (
        ("person", person.tolist()),
        ("pose", pose.tolist()),
        ("light_azimuth", azimuth.tolist()),
        ("light_elevation", elevation.tolist()),
    ):
        labels[name], label_values[name] = encode_labels(values)
    return GroupedImages(images, group_names, groups, files, labels, label_values)


def _read_yaleb(config: ExperimentConfig) -> GroupedImages:
    return load_yaleb(
        config.data.path, config.data.image_size, config.data.image_channels, config.data.inactive_factors
    )


FAMILY = folders.file_layout_family("yaleb", _read_yaleb)
