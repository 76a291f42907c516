"""The yaleb family (Extended Yale Face Database B: one person's faces under every illumination, per pose; ABC
supplement S8.4): image folders in the data set's own layout, read by its family.py; its config is the image
folders'."""
