"""The contrastive loss (NT-Xent on two views of each image; ``--method=contrastive``): ABC's
model with the loss the paper compares it with (Fig. 3c). Its config is ABC's base class, its
preset is among ABC's (``shapes3d_hue_baseline``), and its declaration is ``CONTRASTIVE`` in
abc_tf/methods/abc/model.py."""
