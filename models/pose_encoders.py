"""Pose encoders: Table S5 (``s5``) and a small CPU stand-in (``s5_small``), docs/PAPERS.md section 2.

Table S5: ResNet50 up to ``conv4_block6_out``, ImageNet-pretrained in the paper. Then Conv256 3x3
ReLU ('valid'), global average pooling, Flatten, Dense128 tanh, Dense d linear. The paper's input
is 128 x 128 x 3. The backbone is ResNet50V2, as supplement S8.5 names it. Its ``conv4_block6_out``
has output stride 32: at 128 px that is 4 x 4 x 1024 = 16,384 values. That matches the "ResNet"
baseline size the ICLR text quotes; ResNet50 v1's layer has stride 16, 8 x 8 x 1024 at 128 px.
The head's 'valid' 3 x 3 convolution needs an input side of at least 65.

Every pose encoder has an identity layer ``"backbone"`` on the trunk's output. Evaluation reads the
backbone features, the paper's "ResNet" row, with ``encoder.get_layer("backbone").output``.

Inputs are float images in [0, 1], like every registry encoder. S5 rescales them to ResNet50V2's
range [-1, 1] itself, so ImageNet weights see what they were trained on.
"""

from __future__ import annotations

import keras

from models.architectures import register

RESNET_FEATURES = "conv4_block6_out"
BACKBONE_LAYER = "backbone"


def _check_input_shape(name: str, input_shape, minimum: int) -> tuple[int, int, int]:
    input_shape = tuple(int(v) for v in input_shape)
    if len(input_shape) != 3 or input_shape[-1] != 3:
        raise ValueError(f"{name} takes RGB images (H, W, 3), got input_shape {input_shape}.")
    if min(input_shape[:2]) < minimum:
        raise ValueError(
            f"{name} needs images of at least {minimum} x {minimum} pixels, got {input_shape[:2]} "
            "(--data.image_size)."
        )
    return input_shape


def _s5_head(features, embedding_dim: int):
    """Table S5 after the trunk: Conv256 3x3 ReLU, GAP, Flatten, Dense128 tanh, Dense d."""
    x = keras.layers.Conv2D(256, 3, padding="valid", activation="relu", name="head_conv")(features)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    x = keras.layers.Flatten(name="flatten")(x)  # a no-op after pooling; kept to mirror the table
    x = keras.layers.Dense(128, activation="tanh", name="hidden")(x)
    # float32 even under a mixed-precision policy: similarities need the precision.
    return keras.layers.Dense(embedding_dim, name="embedding", dtype="float32")(x)


def _load_resnet_weights(model: keras.Model, weights: str, input_shape: tuple[int, int, int]) -> None:
    """Copies ResNet50V2 weights, "imagenet" or a weights file, into ``model`` layer by layer, by name."""
    try:
        reference = keras.applications.ResNet50V2(include_top=False, weights=weights, input_shape=input_shape)
    except Exception as error:  # noqa: BLE001 - a failed download surfaces as many exception types
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(
            f"Cannot load ResNet50V2 weights {weights!r} ({first_line}). weights='imagenet' downloads "
            "resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5 on first use (internet needed, "
            "then cached in ~/.keras/models); without internet copy that file there or pass its path "
            "(--encoder.backbone_weights=PATH); "
            "an empty --encoder.backbone_weights (weights=None) starts from random weights."
        ) from None
    for layer in reference.layers:
        if layer.weights and layer.name in {own.name for own in model.layers}:
            model.get_layer(layer.name).set_weights(layer.get_weights())


@register("s5", pretrained=True)
def s5(
    embedding_dim: int = 64, input_shape: tuple[int, int, int] = (128, 128, 3), weights: str | None = None
) -> keras.Model:
    """Table S5 on ResNet50V2.

    ``weights``: None (random, the default; nothing is downloaded), "imagenet" (the paper's), or the
    path of a ResNet50V2 notop weights file. "imagenet" needs internet or the cached file; otherwise a
    ValueError says what to do.
    """
    input_shape = _check_input_shape("s5", input_shape, 65)
    inputs = keras.Input(shape=input_shape, name="images")
    # [0, 1] -> [-1, 1], ResNet50V2's preprocessing ("tf" mode: x / 127.5 - 1 on 0..255).
    x = keras.layers.Rescaling(2.0, offset=-1.0, name="resnet_preprocess")(inputs)
    # input_tensor builds the ResNet layers on our graph (flat, not nested): the features are a
    # tensor of this model, and the unused conv5 stage is left out of it.
    resnet = keras.applications.ResNet50V2(include_top=False, weights=None, input_tensor=x)
    features = keras.layers.Identity(name=BACKBONE_LAYER)(resnet.get_layer(RESNET_FEATURES).output)
    model = keras.Model(inputs, _s5_head(features, embedding_dim), name="s5")
    if weights:
        _load_resnet_weights(model, weights, input_shape)
    return model


@register("s5_small")
def s5_small(embedding_dim: int = 64, input_shape: tuple[int, int, int] = (32, 32, 3)) -> keras.Model:
    """The S5 head on a small trunk, for CPU runs. Input side at least 32.

    Trunk: Conv32 s1, Conv32 s2, Conv64 s1, Conv64 s2, Conv128 s1, all 3x3 'valid', each followed by
    batch norm and ReLU. Then Table S5's head.

    Why it exists: on 2 CPU cores, a train step of 128 images at 64 x 64 costs about 8 s with the S5
    trunk (measured with ResNet50 v1) and 3.4 s with S3. That is too slow for a 15-minute demonstration.
    ``s5_small`` runs at 32 x 32 in about 0.5 s per step of 512 images. Batch norm follows each
    convolution, as in ResNet. Without it, training from scratch under the S5 double augmentation
    collapses to a constant embedding (RESULTS.md, Pose isolation).

    Larger inputs get more Conv128 stride-2 layers while one more still leaves at least 3 x 3. The trunk's
    output stays small: 3 x 3 at 32 px, 5 x 5 at 64, 6 x 6 at 128; ResNet's is 4 x 4 at 128 px.
    So the head's 3x3 convolution sees nearly the whole image before pooling, and the embedding can
    depend on where things are. Without these layers at 64 px, the head pools 9 x 9 local features of a
    19-pixel receptive field. Every image's embedding comes out alike, and ABC sits at its chance loss
    2 ln N (RESULTS.md, Table S1 at 64 x 64).
    """
    input_shape = _check_input_shape("s5_small", input_shape, 32)
    inputs = keras.Input(shape=input_shape, name="images")
    x = inputs
    layers = [(32, 1), (32, 2), (64, 1), (64, 2), (128, 1)]
    side = min(input_shape[:2])
    for _, stride in layers:
        side = (side - 3) // stride + 1
    while (side - 3) // 2 + 1 >= 3:
        layers.append((128, 2))
        side = (side - 3) // 2 + 1
    for index, (filters, stride) in enumerate(layers):
        # conv -> batch norm -> ReLU, as in ResNet's blocks.
        x = keras.layers.Conv2D(filters, 3, strides=stride, padding="valid", name=f"conv{index + 1}")(x)
        x = keras.layers.BatchNormalization(name=f"bn{index + 1}")(x)
        x = keras.layers.ReLU(name=f"relu{index + 1}")(x)
    features = keras.layers.Identity(name=BACKBONE_LAYER)(x)
    return keras.Model(inputs, _s5_head(features, embedding_dim), name="s5_small")
