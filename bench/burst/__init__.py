"""The busy-relay benchmarks of ``bench.bench_burst``: the platform sides, the naive bots, the measuring."""
