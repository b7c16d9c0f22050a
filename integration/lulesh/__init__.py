"""LULESH 2.0.2-dev (cuda/src) with nvcc-opt: the paper's Table II on a user's checkout.

`python -m integration.lulesh --help` lists the commands; README.md says what each does.
"""
