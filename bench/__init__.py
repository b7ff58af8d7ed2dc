"""Benchmarks, run as modules: ``python -m bench.bench_streamer``."""
