"""Developer tools of the repository (not part of the ironic_alloc package).

A package so that ``python -m tools.bench`` and the benchmark's tests
(tools/bench/tests) import the same modules from the repository root.
ironic_alloc never imports it.
"""
