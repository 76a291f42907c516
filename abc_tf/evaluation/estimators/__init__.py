"""The estimators every task shares: MI (MINE, histograms), probes, noise, regression,
disentanglement scores and their figures.
"""
