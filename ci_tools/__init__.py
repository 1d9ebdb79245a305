"""ci-tools: catalog, recipes, CI matrix, checks and releases for hardware-specific PyTorch builds."""

__version__ = "0.1.0"
