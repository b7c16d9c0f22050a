#pragma once

// Runs `steps` ADI diffusion steps with diffusion number alpha on the n x n row-major grid `in`
// and writes the result to `out`, with zero values outside the grid. All pointers are device
// arrays of n * n floats; tmp and scratch are work space.
void launch_adi(const float* in, float* tmp, float* out, float* scratch, int n, int steps,
                float alpha);
