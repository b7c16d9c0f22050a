#pragma once

#include <cuda_runtime.h>

// Structured n x n x n zones; nodes form an (n+1)^3 lattice, x fastest.
// Zeroes node_vals, then every zone adds 1/8 of its value to each of its 8 corner nodes.
// Returns the first CUDA error of the memset or the launch.
cudaError_t launch_nodal_accumulation(const double* zone_vals, double* node_vals, int n);
