#pragma once

// x1 += A y1 and x2 += A^T y2 for the n x n row-major matrix a (all device pointers).
void launch_mvt(const float* a, const float* y1, const float* y2, float* x1, float* x2, int n);
