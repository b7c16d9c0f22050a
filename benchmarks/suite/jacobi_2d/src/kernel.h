#pragma once

// `steps` Jacobi time steps on an n x n row-major grid with fixed boundary values, each step two
// 5-point sweeps (in -> tmp -> out on the first, out -> tmp -> out after). `in` is not written.
void launch_jacobi_2d(int n, int steps, const float* in, float* tmp, float* out);
