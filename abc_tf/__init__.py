"""abc_tf: Approximate Bijective Correspondence (ABC) in TensorFlow/Keras.

The library reads no flags; ``train.py`` and ``evaluate.py`` are the command-line entry points.
"""

__version__ = "0.1.0"
