"""The model-agnostic reasoning loop: a model, a toolbox, limits, a trace. Knows nothing of CUDA."""
