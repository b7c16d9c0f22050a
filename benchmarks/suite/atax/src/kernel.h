#pragma once

// y = A^T (A x) for an n x n row-major matrix A; tmp (n floats) is scratch for A x.
void launch_atax(int n, const float* A, const float* x, float* tmp, float* y);
