"""The yaleb family: Extended Yale Face Database B (ABC supplement S8.4).

It holds one person's faces under every illumination, per pose. Its family.py reads image folders
in the data set's own layout; its config is the image folders'.
"""
