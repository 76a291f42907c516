"""The contrastive loss (``--method=contrastive``) on two views of each image: the paper's Fig. 3c
baseline as ``losses.contrastive_loss`` computes it, a one-way cross-entropy of view 1 against
view 2 under the run's similarity (l2sq by default), not NT-Xent's symmetric cosine loss.

It is ABC's model with the loss the paper compares it with (Fig. 3c). Its config is ABC's base
class. Its preset is ABC's ``shapes3d_hue_baseline``. Its declaration is ``CONTRASTIVE`` in
abc_tf/methods/abc/model.py.
"""
