"""Benchmarks: scripts that print figures (`python benchmarks/bench_matrix.py`), not tests."""
