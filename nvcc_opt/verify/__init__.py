"""Honest verification of a candidate: correctness first, then timing against the baseline.

Pure modules, no I/O: `stats` (interleaved timing statistics), `checks` (correctness of run
outputs), `verdict` (the combined record the tools and `verify` return). Running the builds and
the programs is the workspace's job; these modules only decide.

This package imports nothing so that importing one module does not pay for the others.
"""
