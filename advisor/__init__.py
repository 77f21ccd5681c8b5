"""advisor: which hardware to train a PyTorch model on, how long it takes, what it costs."""

__version__ = "0.1.0"
