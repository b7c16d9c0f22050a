"""nvcc-opt on LLNL/RAJAPerf: prepare a checkout, run the paper's protocol (see README.md)."""
