"""The machine in front of us: its CPU and GPU facts, and which variant fits it."""
