#pragma once

// y = alpha * A x + beta * B x for n x n row-major matrices A and B.
void launch_gesummv(int n, float alpha, float beta, const float* A, const float* B, const float* x,
                    float* y);
