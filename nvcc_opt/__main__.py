"""`python -m nvcc_opt ...`: the same as the `nvcc-opt` command."""

from nvcc_opt.entry import main

main()
