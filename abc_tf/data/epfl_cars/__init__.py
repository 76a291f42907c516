"""The epfl_cars family (EPFL multi-view cars: one car's turntable sequence per group; ABC supplement S8.4):
image folders in the data set's own layout, read by its family.py; its config is the image folders'."""
