"""The estimators every task shares: mutual information (MINE, histograms), probes, noise,
regression, disentanglement scores, and the figures they draw."""
