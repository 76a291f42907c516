# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # ABC on MNIST, from Python
#
# Each set holds images of one digit. ABC matches the images of two sets one to one, so the
# encoder keeps what varies within a set, the handwriting style, and drops the digit.
# `MNIST_DIR` may name a folder with MNIST's four IDX files; empty, the built-in procedural
# digits stand in.

# %%
MNIST_DIR = ""
STEPS = 300  # the mnist preset trains 500
FIGURES = "tutorial_figures"

# %%
import os

from abc_tf import command_line

command_line.quiet_tensorflow_start()  # before Keras loads TensorFlow: its start-up lines held back

import keras
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Image

import abc_tf
import models
from abc_tf.data.mnist import digit_style, formats
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.tasks import retrieval

mnist = formats.load_idx_dir(MNIST_DIR) if MNIST_DIR else formats.load_procedural()
os.makedirs(FIGURES, exist_ok=True)

# %% [markdown]
# Train: sets of 64 images of one digit, the paper's S4 encoder with 8 dimensions.

# %%
keras.utils.set_random_seed(0)
encoder = models.build("s4", embedding_dim=8)
sets = abc_tf.set_dataset(mnist.x_train[..., None], mnist.y_train, set_size=64)
model = abc_tf.AbcModel(encoder)
model.compile(optimizer=keras.optimizers.Adam(3e-4))
history = model.fit(sets, steps_per_epoch=STEPS, shuffle=False, verbose=2)  # the stream draws its own sets

# %% [markdown]
# Retrieval: a query per digit on the diagonal; along its row, the nearest image of every
# other digit. Rows of one style mean the code holds style, not the digit.

# %%
pool = mnist.x_test[:2000, ..., None]
codes = abc_tf.embed(encoder, pool)
grid = retrieval.retrieval_grid(codes, mnist.y_test[:2000], range(10))
retrieval.plot_retrieval_grids(pool, [("ABC", grid)], f"{FIGURES}/retrieval.png", ink=True)
Image(f"{FIGURES}/retrieval.png")

# %% [markdown]
# The codes' top two principal components, coloured by the slant measured from the pixels.

# %%
projection, _ = plots.principal_components(codes)
slant = digit_style.slant(pool)
figure, axis = plt.subplots(figsize=(5, 4))
points = axis.scatter(projection[:, 0], projection[:, 1], c=slant, s=4, cmap="coolwarm")
figure.colorbar(points, label="slant")
axis.set(xlabel="PC 1", ylabel="PC 2")
figure.savefig(f"{FIGURES}/embedding.png", dpi=80)

# %% [markdown]
# How much digit and slant the codes hold: probe accuracy (chance 0.1 and 0.25) and MINE in nats
# (at most 2.3 and 1.4).

# %%
style = np.digitize(slant, np.quantile(slant, [0.25, 0.5, 0.75]))
factors = np.stack([mnist.y_test[:2000], style], axis=1)
print("probe accuracy, digit and slant:", abc_tf.probe_accuracies(codes, factors, 0.0).accuracy.round(2))
print("MINE in nats, digit and slant:", abc_tf.mine_mutual_information(codes, factors).round(2))
