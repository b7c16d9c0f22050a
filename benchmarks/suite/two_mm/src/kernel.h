#pragma once

// out = alpha * A * B * C + beta * D for n x n row-major matrices; tmp is n x n scratch.
void launch_two_mm(int n, float alpha, float beta, const float* A, const float* B, const float* C,
                   const float* D, float* tmp, float* out);
