"""The contrastive loss (``--method=contrastive``): NT-Xent on two views of each image.

It is ABC's model with the loss the paper compares it with (Fig. 3c). Its config is ABC's base
class. Its preset is ABC's ``shapes3d_hue_baseline``. Its declaration is ``CONTRASTIVE`` in
abc_tf/methods/abc/model.py.
"""
