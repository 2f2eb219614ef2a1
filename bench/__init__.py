"""Benchmarks: `python -m bench NAME` prints figures against a baseline measured in the same run."""
