"""nvcc-opt train: optimization problems, teacher traces, distillation and evaluation.

Installed beside nvcc-opt (`pip install ./training`); its commands appear as `nvcc-opt train ...`.
"""
