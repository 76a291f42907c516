"""Experiment presets: one frozen dataclass holds every knob of a run.

Each field carries its flag help text in ``metadata["help"]``; ``train.py`` turns every field
into an absl flag of the same name, so a new knob is added here and nowhere else.
Presets hold the paper's settings (SPEC.md section 3); flags override single fields.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

SIMILARITIES = ("l2sq", "l2", "l1", "linf", "cosine")
# Fields naming files or folders: checked to exist whenever they are set, by every family.
PATH_FIELDS = ("data_path", "real_data_path", "background_data_path", "pose_test_list", "pose_test_images")
STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def _field(default: Any, help: str) -> Any:  # noqa: A002 - mirrors absl's argument name
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Every setting of one training run. Units: steps are optimizer updates."""

    name: str = _field("custom", "Preset name this config came from.")
    data: str = _field("shapes3d", "Data family: a key of abc_tf.data.DATA_FAMILIES.")
    method: str = _field("abc", "Training method: a key of abc_tf.methods.METHODS (abc, contrastive, ...).")
    data_source: str = _field("procedural", "Backend of the data family (e.g. procedural, h5, tfds, idx, npz).")
    data_path: str = _field("", "File or directory of real data for the chosen data_source.")
    model: str = _field("s3", "Encoder architecture: a key of the models registry (s3, s4, s6, ...).")
    embedding_dim: int = _field(64, "Size d of the embedding.")
    set_size: int = _field(32, "Images per set (N = M).")
    pairs_per_step: int = _field(1, "Pairs per training step: pairs of sets (P) for the set methods (abc, contrastive), pairs of images (the batch) for --method=pmp.")
    batch_size: int = _field(64, "Images per training step for the methods trained on single images (batch format 'images': vae, u_vitae, c_vitae, elastic_infogan).")
    similarity: str = _field("l2sq", "Similarity: l2sq, l2, l1, linf or cosine.")
    temperature: float = _field(1.0, "Temperature tau dividing every similarity.")
    double_augmentation: bool = _field(False, "Augment every image twice and cycle from one view to the other.")
    learning_rate: float = _field(3e-5, "Adam learning rate.")
    lr_halving_steps: int = _field(0, "Halve the learning rate every this many steps (0: constant).")
    steps: int = _field(2000, "Training steps.")
    log_every: int = _field(100, "Steps between TensorBoard logs and checkpoints.")
    keep_checkpoints: int = _field(2, "Checkpoints kept in <output_dir>/checkpoints (the newest; older ones are deleted).")
    seed: int = _field(0, "Seed for weights, data and augmentation.")
    jit_compile: bool = _field(False, "Compile the train step with XLA.")
    steps_per_execution: int = _field(1, "Train steps per compiled call.")
    strategy: str = _field("default", "tf.distribute strategy: default (one device), mirrored (all local GPUs), multi_worker (TF_CONFIG), tpu.")
    mixed_precision: bool = _field(False, "Compute in the host's fast reduced precision, keeping embeddings and the loss in float32: float16 with loss scaling on GPUs, bfloat16 on TPUs and CPUs that compute it natively (AVX-512 BF16, AMX), float32 with a warning on other CPUs.")
    eval_every: int = _field(0, "Steps between factor-isolation measurements (probes, short MINE) written to TensorBoard, on the run's labelled sample: known factors, the labels of grouped images, pose bins (0: once, at the end).")
    eval_images: int = _field(512, "Labelled images in the fixed sample of the factor-isolation callback and the embedding projector.")
    # Shapes3D (SPEC.md sections 3 and 6).
    inactive_factors: str = _field("wall_hue", "Factors fixed within a set, comma separated. Shapes3D: names or the authors' digits; yaleb: 'person,pose' (illumination active) or 'person' (pose and illumination active).")
    curate_both_sets: bool = _field(True, "Curate set B like set A (False: set B unconstrained, drawn from the whole data set).")
    augmentation_baseline: bool = _field(False, "Double-augmentation baseline instead of curated sets: unconstrained sets and their second views, no set B, for --method=abc or contrastive. Shapes3D: random_hue(0.5) (the paper's Fig. 3c baseline is contrastive); MNIST: Elastic-InfoGAN's augmentation T (the authors' rotation and zoom).")
    sample_with_replacement: bool = _field(False, "Allow repeated images inside a set (needed when set_size exceeds the distinct images that share the inactive values).")
    data_in_memory: bool = _field(False, "Shapes3D h5: read all images into RAM first (5.9 GB for the real file) instead of reading each set from disk.")
    # MNIST (SPEC.md section 3).
    holdout_digit: str = _field("9", "MNIST digit kept out of training ('none' keeps all ten).")
    allow_same_digit: bool = _field(False, "MNIST: the two stacks of a step may show the same digit.")
    class_split: int = _field(-1, "MNIST: train on Elastic-InfoGAN's class-imbalanced split k (1..50, numbered as the authors' --ind; their per-digit counts, e.g. split 1: 42,794 images), drawn class by class from --class_split_pool; -1: no imbalance.")
    class_split_pool: str = _field("all", "MNIST with --class_split: the images a split is drawn from, 'all' (the 70,000 training and test images, as the authors) or 'train' (the 60,000 training images, so the test images stay out of training; a split then keeps its proportions at a smaller size).")
    # Real images: YaleB, EPFL cars, grouped folders (SPEC.md section 3, supplement S8.4).
    image_size: int = _field(64, "Images are resized to image_size x image_size (yaleb, epfl_cars, folders, pose).")
    image_channels: int = _field(3, "Channels images are converted to: 1 (gray) or 3 (RGB) (yaleb, epfl_cars, folders).")
    augmentations: str = _field("", "Per-image augmentations 'name:amplitude,...' applied in order (contrast, saturation, crop; see abc_tf.data.augment); twice under double_augmentation.")
    # Pose regression (SPEC.md section 3, Table 2): spherical-regression head on set A's embeddings.
    regression_weight: float = _field(0.0, "Weight of the spherical-regression head loss on set A's pose labels (0: no head). Pose data only.")
    abc_weight: float = _field(1.0, "Weight of the ABC loss (0 with regression_weight > 0: the regression-only baseline).")
    # Pose (SPEC.md sections 3, 5, 6; supplement S5, S8.3): data family "pose".
    pose_category: str = _field("car", "Pose object category: car or chair (sets the default maximum elevation).")
    max_elevation: float = _field(0.0, "Pose: keep synthetic views up to this elevation in radians (0: the category's 0.5 car / 1.3 chair).")
    real_fraction: float = _field(0.1, "Pose: fraction of real images in the unconstrained set B once titration is complete.")
    titration_interval: int = _field(4000, "Pose: the real fraction steps up every this many steps, from 0 to real_fraction (0: no titration, real_fraction from the start).")
    crop_amplitude: float = _field(0.1, "Pose: random translation of the bounding box, as a fraction of its height and width.")
    augmentation_amplitude: float = _field(1.0, "Pose: scale of the colouring augmentations (brightness, hue, noise, Sobel; 0: none).")
    real_data_path: str = _field("", "Pose: folder of unlabelled real images titrated into set B; empty with data_source=procedural.")
    background_data_path: str = _field("", "Pose: folder of images whose random crops are painted behind the synthetic renders (the paper: ImageNet-A, images without the category's objects); empty: built-in procedural clutter scenes.")
    pose_test_list: str = _field("", "Pose: Pascal3D+-style test list 'image left top right bottom azimuth elevation tilt' (evaluation only).")
    pose_test_images: str = _field("", "Pose: folder the test list's image names are relative to (default: the list's folder).")
    backbone_weights: str = _field("", "Pretrained weights of the encoder's backbone (s5: 'imagenet' as in the paper, needs internet or the cached file, or a weights file path; empty: random).")
    # Product-manifold projection (PEERS.md section 1): --method=pmp, trained on pairs of images.
    pair_factors: str = _field("", "Pairs (--method=pmp): factors that may change between the two images of a pair, comma separated names or the authors' digits; one of them, drawn uniformly, changes in each pair (empty: every factor).")
    num_subspaces: int = _field(10, "PMP: number k of latent subspaces, one projector each.")
    pmp_warmup: float = _field(0.25, "PMP: fraction of the steps trained on the reconstruction loss alone before the other terms ramp in (the authors' code 0.25, their supplement 0.2).")
    pmp_distance_weight: float = _field(0.1, "PMP: maximum weight of the distance loss L_dis (0: off).")
    pmp_sparsity_weight: float = _field(0.1, "PMP: maximum weight of the sparsity loss L_spar (0: off).")
    pmp_consistency_weight: float = _field(100.0, "PMP: maximum weight of the consistency loss L_cons (0: off).")
    pmp_usage_weight: float = _field(1e-4, "PMP: initial weight of the subspace-usage loss L_reg, decaying as L_dis ramps in (0: off).")
    # VITAE (PEERS.md section 2): --method=vae, u_vitae, c_vitae on single images; embedding_dim
    # is the whole latent size (the VAE's d; VITAE's d_A + d_P, split in halves).
    kl_warmup: float = _field(0.5, "VAE/VITAE: fraction of the steps over which the KL weight rises linearly from 0 to 1 (the paper: half of training; 0: weight 1 from the start).")
    affine_augmentation: bool = _field(True, "VAE/VITAE: warp every training image by a random rotation (up to 20 degrees) and translation (up to 10% of the size), as the authors' disentanglement script does (RandomAffine(20, translate 0.1); their final main.py has the line commented out; their poster's MNIST is randomly translated and rotated).")
    # Elastic-InfoGAN (PEERS.md section 3): --method=elastic_infogan on single images. The two
    # ablations of the paper are flags of the same model: infogan_prior=uniform with
    # infogan_contrastive_weight=0 is InfoGAN, learned with 0 the Gumbel-softmax baseline.
    infogan_prior: str = _field("learned", "Elastic-InfoGAN: the categorical code's class prior, 'learned' (softmax of trained logits, initialised uniform) or 'uniform' (fixed: InfoGAN).")
    infogan_contrastive_weight: float = _field(10.0, "Elastic-InfoGAN: weight of the NT-Xent loss on Q's features of real images and their augmentations (0: off).")
    infogan_noise_dim: int = _field(62, "Elastic-InfoGAN: dimensions of the generator's Gaussian noise z (besides the 10-way code).")
    infogan_ntxent_temperature: float = _field(1.0, "Elastic-InfoGAN: temperature of the NT-Xent loss (1, what the authors' run script passes; their main.py's default is 0.5).")
    infogan_elastic_field: bool = _field(False, "Elastic-InfoGAN: add a smooth random displacement of about one pixel to the augmentation T (ours; the authors' T is rotation and zoom only).")

    def replace(self, **overrides: Any) -> "ExperimentConfig":
        return dataclasses.replace(self, **overrides)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ExperimentConfig":
        values = json.loads(text)
        if "loss" in values:  # runs written before the method registry named the method "loss"
            values["method"] = values.pop("loss")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Config JSON has unknown fields {unknown}; known fields: {sorted(known)}")
        return cls(**values)

    def validate(self) -> None:
        """Raises ValueError naming the field when a value cannot work. Called before any work."""
        for name in ("embedding_dim", "set_size", "pairs_per_step", "batch_size", "steps", "log_every", "keep_checkpoints",
                     "steps_per_execution", "image_size"):
            value = getattr(self, name)
            if value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value}.")
        for name in ("temperature", "learning_rate"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive finite number, got {value}.")
        if self.lr_halving_steps < 0:
            raise ValueError(f"lr_halving_steps must be >= 0, got {self.lr_halving_steps}.")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"Unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}.")
        for name in ("regression_weight", "abc_weight"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}.")
        if self.regression_weight == 0 and self.abc_weight == 0:
            raise ValueError("abc_weight and regression_weight are both 0: nothing to train.")
        if self.similarity not in SIMILARITIES:
            raise ValueError(f"Unknown similarity {self.similarity!r}; choose one of {', '.join(SIMILARITIES)}.")
        for name in PATH_FIELDS:
            path = getattr(self, name)
            if path and not os.path.exists(path):
                raise ValueError(f"--{name}={path} does not exist.")

    @property
    def length_scale(self) -> float:
        """Scale in embedding space below which the loss sees no difference (SPEC.md section 1)."""
        return length_scale(self.similarity, self.temperature)


def read_config(path: str) -> ExperimentConfig:
    """The config stored at ``path`` (a run's config.json); a ValueError naming the file when it
    is missing or damaged."""
    if not os.path.isfile(path):
        raise ValueError(f"{path} does not exist: pass a run directory written by train.py.")
    try:
        with open(path, encoding="utf-8") as handle:
            return ExperimentConfig.from_json(handle.read())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{path} is not a readable run config ({message}).") from None


def length_scale(similarity: str, temperature: float) -> float:
    """sqrt(tau) for l2sq; tau for the unsquared distances l2, l1 and linf (similarity / tau
    changes by 1 over a distance tau); 1 for cosine (the scale is an angle)."""
    if similarity == "l2sq":
        return math.sqrt(temperature)
    if similarity in ("l2", "l1", "linf"):
        return temperature
    return 1.0


_SHAPES3D = ExperimentConfig(
    name="shapes3d", data="shapes3d", model="s3", embedding_dim=64, set_size=32, pairs_per_step=1,
    similarity="l2sq", temperature=1.0, learning_rate=3e-5, steps=2000, inactive_factors="wall_hue",
)

# Supplement S8.4: S6 encoder, negative l2, lr 3e-4, double augmentation; one set = one group.
_REAL_IMAGES = ExperimentConfig(
    data_source="files", model="s6", embedding_dim=64, pairs_per_step=1, similarity="l2", temperature=1.0,
    learning_rate=3e-4, steps=10000, log_every=500, double_augmentation=True, image_size=64,
)

# Pose lookup (SPEC.md section 3; supplement S8.3): S5 on 128 x 128 images, 4 pairs of sets of
# 32, cosine with tau 0.1, double augmentation (S5), lr 1e-4 halved every 10k steps, 40k steps,
# real images titrated into set B up to 10% in stairs every 4k steps. data_source=procedural
# renders the built-in stand-in; --data_source=keypointnet --data_path=... --real_data_path=...
# --pose_test_list=... reads the paper's data.
_POSE_LOOKUP = ExperimentConfig(
    data="pose", data_source="procedural", model="s5", image_size=128, embedding_dim=64, set_size=32,
    pairs_per_step=4, similarity="cosine", temperature=0.1, double_augmentation=True, learning_rate=1e-4,
    lr_halving_steps=10000, steps=40000, log_every=1000, real_fraction=0.1, titration_interval=4000,
    crop_amplitude=0.1, augmentation_amplitude=1.0,
)

PRESETS: dict[str, ExperimentConfig] = {
    # Paper settings, SPEC.md section 3, Shapes3D row.
    "shapes3d": _SHAPES3D,
    # The README's main job: the same experiment, short enough for 2 CPU cores.
    "shapes3d_demo": _SHAPES3D.replace(name="shapes3d_demo", steps=600, log_every=100, eval_every=300),
    # Fig. 3c bottom: contrastive loss on two random_hue(0.5) views of one unconstrained batch.
    "shapes3d_hue_baseline": _SHAPES3D.replace(name="shapes3d_hue_baseline", augmentation_baseline=True, method="contrastive"),
    # Paper settings, SPEC.md section 3, MNIST row.
    "mnist": ExperimentConfig(
        name="mnist", data="mnist", data_source="auto", model="s4", embedding_dim=8, set_size=64,
        pairs_per_step=1, similarity="l2sq", temperature=1.0, learning_rate=1e-4, steps=500, log_every=50,
    ),
    # Paper settings, SPEC.md section 3, YaleB row: a set is the 64 illuminations of one person and pose.
    "yaleb_illumination": _REAL_IMAGES.replace(
        name="yaleb_illumination", data="yaleb", image_channels=1, set_size=64, inactive_factors="person,pose",
        augmentations="contrast:0.3,crop:0.2",
    ),
    # YaleB row, pose also active: 384 of a person's 576 images per set, 50k steps.
    "yaleb_pose_illumination": _REAL_IMAGES.replace(
        name="yaleb_pose_illumination", data="yaleb", image_channels=1, set_size=384, inactive_factors="person",
        augmentations="contrast:0.3,crop:0.2", steps=50000,
    ),
    # EPFL cars row: a set is 81 frames of one car's turntable sequence.
    "epfl_cars": _REAL_IMAGES.replace(
        name="epfl_cars", data="epfl_cars", image_channels=3, set_size=81, inactive_factors="car",
        augmentations="contrast:0.3,saturation:0.3,crop:0.2",
    ),
    # Pose lookup, paper settings (Table 1), per category; elevation filter 0.5 / 1.3 rad.
    "pose_lookup_car": _POSE_LOOKUP.replace(name="pose_lookup_car", pose_category="car"),
    "pose_lookup_chair": _POSE_LOOKUP.replace(name="pose_lookup_chair", pose_category="chair"),
    # Pose isolation on the procedural cars within about 15 minutes on 2 CPU cores: the S5 head
    # on a small trunk (s5_small) at 32 x 32, the paper's sets, loss and augmentations, a
    # shorter schedule (titration stairs every 100 steps, lr 3e-4 halved every 500).
    "pose_quick": _POSE_LOOKUP.replace(
        name="pose_quick", model="s5_small", image_size=32, steps=1000, log_every=100, learning_rate=3e-4,
        lr_halving_steps=500, titration_interval=100,
    ),
    # Pose regression, paper settings (Table 2; supplement S8.3): ABC plus the spherical-regression
    # head on set A's labelled renders, tau 0.05, lr 1e-4 halved every 20k, 60k steps, real images
    # titrated into set B up to 2%. The loss is regression + abc_weight * ABC (weights 1 and 1;
    # the paper does not state its weighting).
    "pose_regression_car": _POSE_LOOKUP.replace(
        name="pose_regression_car", pose_category="car", temperature=0.05, lr_halving_steps=20000, steps=60000,
        real_fraction=0.02, regression_weight=1.0,
    ),
    "pose_regression_chair": _POSE_LOOKUP.replace(
        name="pose_regression_chair", pose_category="chair", temperature=0.05, lr_halving_steps=20000, steps=60000,
        real_fraction=0.02, regression_weight=1.0,
    ),
    # Table 2's first row (Liao et al. 2019): the same network and schedule with regression alone;
    # real images could only enter through the ABC loss, so none are drawn.
    "pose_regression_only_car": _POSE_LOOKUP.replace(
        name="pose_regression_only_car", pose_category="car", temperature=0.05, lr_halving_steps=20000, steps=60000,
        real_fraction=0.0, regression_weight=1.0, abc_weight=0.0,
    ),
    "pose_regression_only_chair": _POSE_LOOKUP.replace(
        name="pose_regression_only_chair", pose_category="chair", temperature=0.05, lr_halving_steps=20000,
        steps=60000, real_fraction=0.0, regression_weight=1.0, abc_weight=0.0,
    ),
    # The user's own grouped folders (--data_path), with the real-image settings above.
    "folders": _REAL_IMAGES.replace(
        name="folders", data="folders", image_channels=3, set_size=32, inactive_factors="group",
        augmentations="contrast:0.3,saturation:0.3,crop:0.2",
    ),
}

# Product-manifold projection (PEERS.md section 1), paper settings: Table 1's networks, d = 10,
# k = 10, batches of 32 pairs, Adam 5e-4 (0.9, 0.99), the authors' loss weights and schedule.
# The supplement gives no training length: 30 epochs of 480,000 pairs (450,000 steps), the
# epochs of the authors' notebook (run there on Cars3D) [ours]. Pairs change any of the six factors.
_PMP = ExperimentConfig(
    name="shapes3d_pmp", data="shapes3d", method="pmp", model="pmp_encoder", embedding_dim=10, num_subspaces=10,
    pairs_per_step=32, learning_rate=5e-4, steps=450_000, log_every=1000, eval_every=15_000,
)
PRESETS["shapes3d_pmp"] = _PMP
# PMP in about 4 minutes on 2 CPU cores: the same networks, losses and schedule over 1,500 steps
# (warm-up to step 375, L_dis at full weight from step 600, L_cons from 750), in bfloat16 on CPUs
# that compute it natively (BENCHMARKS.md, "PMP training step (CPU)"), float16 on GPUs and float32
# on other CPUs, where bfloat16 would be slower (abc_tf/runs/precision.py); the reconstruction
# loss falls from 0.13 to about 0.013.
PRESETS["shapes3d_pmp_quick"] = _PMP.replace(
    name="shapes3d_pmp_quick", steps=1500, log_every=100, eval_every=500, mixed_precision=True,
)

# VAE and VITAE (PEERS.md section 2), paper settings: Table 1's MLPs, d = 4 (VITAE: 2 + 2),
# Adam 1e-4, batches of 512, 2000 epochs of the 54,051 training images left once digit 9 is held
# out as in ABC's MNIST preset: 211,200 steps; the KL weight rises over the first half. The
# holdout is ours (the paper trains on all ten digits: 2,000 epochs of 60,000 images are 234,375
# steps of 512); --holdout_digit=none --steps=234375 runs that.
_VAE = ExperimentConfig(
    name="mnist_vae", data="mnist", data_source="auto", method="vae", embedding_dim=4, batch_size=512,
    learning_rate=1e-4, steps=211_200, log_every=1000, holdout_digit="9",
)
PRESETS["mnist_vae"] = _VAE
PRESETS["mnist_u_vitae"] = _VAE.replace(name="mnist_u_vitae", method="u_vitae")
PRESETS["mnist_c_vitae"] = _VAE.replace(name="mnist_c_vitae", method="c_vitae")
# About 1.5 minutes on 2 CPU cores: 5,000 steps of batches of 128 at Adam 1e-3 [ours], the KL
# weight rising over the first half, compiled with XLA (3x the plain graph's speed for these
# small MLPs and the warp). C-VITAE reaches a test ELBO of about -154 nats and
# importance-weighted log p(x) -151 (README.md, "VITAE (peer method)").
for _variant in ("vae", "u_vitae", "c_vitae"):
    PRESETS[f"mnist_{_variant}_quick"] = PRESETS[f"mnist_{_variant}"].replace(
        name=f"mnist_{_variant}_quick", batch_size=128, learning_rate=1e-3, steps=5000, log_every=250, jit_compile=True,
    )

# pose_quick with the regression head and Table 2's tau 0.05 and 2% real images. With
# --abc_weight=0 --real_fraction=0: the regression-only baseline; with --real_fraction=0:
# regression + ABC on synthetic images only. Derived from pose_quick so it follows its tuning.
PRESETS["pose_regression_quick"] = PRESETS["pose_quick"].replace(
    name="pose_regression_quick", temperature=0.05, real_fraction=0.02, regression_weight=1.0
)

# Elastic-InfoGAN (PEERS.md section 3), the authors' settings on class-imbalanced MNIST: all ten
# digits, their split 1 (--class_split picks another of 1..50) drawn from all 70,000 images,
# batches of 64, Adam 2e-4 (0.5, 0.999), NT-Xent at temperature 1, 200 epochs; their epoch of
# split 1's 42,794 images is 668 full batches of 64 (they stop before the partial one), so
# 133,600 steps [code: main.py, infoGAN.py; the splits' epochs are 463 to 751 steps]. Ablations:
# --infogan_prior=uniform --infogan_contrastive_weight=0 (InfoGAN), --infogan_contrastive_weight=0
# (Gumbel-softmax).
_ELASTIC_INFOGAN = ExperimentConfig(
    name="mnist_elastic_infogan", data="mnist", data_source="auto", method="elastic_infogan", holdout_digit="none",
    class_split=1, batch_size=64, learning_rate=2e-4, steps=133_600, log_every=1000,
    embedding_dim=128,  # Q's penultimate features, the representation (the networks fix it)
    jit_compile=True,  # XLA: 1.2x the plain graph on this CPU (BENCHMARKS.md, "Elastic-InfoGAN training step")
)
PRESETS["mnist_elastic_infogan"] = _ELASTIC_INFOGAN
# About 3 minutes on 2 CPU cores: the same model and data over 1,500 steps (2.2 epochs of split 1).
PRESETS["mnist_elastic_infogan_quick"] = _ELASTIC_INFOGAN.replace(
    name="mnist_elastic_infogan_quick", steps=1500, log_every=100,
)
# The paper's two baselines as flags of the same model, at the quick length.
PRESETS["mnist_infogan_quick"] = PRESETS["mnist_elastic_infogan_quick"].replace(
    name="mnist_infogan_quick", infogan_prior="uniform", infogan_contrastive_weight=0.0,
)
PRESETS["mnist_gumbel_infogan_quick"] = PRESETS["mnist_elastic_infogan_quick"].replace(
    name="mnist_gumbel_infogan_quick", infogan_contrastive_weight=0.0,
)
# ABC given Elastic-InfoGAN's signal (issue 17, item 4): no labels, unconstrained sets of 64 from
# split 1 with all ten digits, both sets two views under its augmentation; otherwise the paper's
# MNIST ABC settings ("mnist"). --method=contrastive trains the two-view loss on the same batches.
PRESETS["mnist_abc_augmentation"] = PRESETS["mnist"].replace(
    name="mnist_abc_augmentation", augmentation_baseline=True, holdout_digit="none", class_split=1,
)


def get_preset(name: str) -> ExperimentConfig:
    if name not in PRESETS:
        raise ValueError(f"Unknown experiment {name!r}; known experiments: {', '.join(sorted(PRESETS))}.")
    return PRESETS[name]
