#pragma once

// The gemver vector update for an n x n row-major matrix A (A_hat is n x n scratch):
//   A_hat = A + u1 v1^T + u2 v2^T;  x = beta * A_hat^T y + z;  w = alpha * A_hat x.
void launch_gemver(int n, float alpha, float beta, const float* A, const float* u1,
                   const float* v1, const float* u2, const float* v2, const float* y,
                   const float* z, float* A_hat, float* x, float* w);
