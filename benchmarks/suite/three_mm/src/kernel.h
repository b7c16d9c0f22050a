#pragma once

// G = (A * B) * (C * D) for n x n row-major matrices; E and F are n x n scratch.
void launch_three_mm(int n, const float* A, const float* B, const float* C, const float* D,
                     float* E, float* F, float* G);
