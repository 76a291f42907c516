"""The epfl_cars family: EPFL multi-view cars, one car's turntable sequence per group (ABC
supplement S8.4).

Its family.py reads image folders in the data set's own layout; its config is the image folders'.
"""
