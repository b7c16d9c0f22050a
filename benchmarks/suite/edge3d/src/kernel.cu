#include "kernel.h"

// @optimize begin edge3d
// Reference edge function e at point p of the unit cube: a unit vector along axis e / 4 scaled
// by the bilinear hat of the other two coordinates that is 1 on that edge.
__device__ double edge_hat(int e, const double p[3]) {
  int axis = e / 4, r = e % 4;
  int a = axis == 0 ? 1 : 0;
  int b = axis == 2 ? 1 : 2;
  return ((r & 1) ? p[a] : 1.0 - p[a]) * ((r & 2) ? p[b] : 1.0 - p[b]);
}

// One thread per element. Physical edge fields are J^-T times the reference ones, so
// M_ij = sum_q w detJ hat_i hat_j (J^-1 J^-T)[axis_i][axis_j].
__global__ void edge3d(const double* coords, double* mass, int n) {
  long el = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (el >= (long)n * n * n) return;
  long i = el % n, j = (el / n) % n, k = el / ((long)n * n), np = n + 1;
  double X[8][3];
  for (int c = 0; c < 8; ++c)
    for (int a = 0; a < 3; ++a)
      X[c][a] = coords[3 * ((i + (c & 1)) + np * ((j + (c >> 1 & 1)) + np * (k + (c >> 2)))) + a];
  double M[144];
  for (int m = 0; m < 144; ++m) M[m] = 0.0;
  const double gauss[2] = {0.21132486540518713, 0.78867513459481287};
  for (int q = 0; q < 8; ++q) {
    double p[3] = {gauss[q & 1], gauss[q >> 1 & 1], gauss[q >> 2]};
    double J[3][3] = {};  // J[a][b] = d x_a / d p_b
    for (int c = 0; c < 8; ++c) {
      double t[3], s[3];
      for (int b = 0; b < 3; ++b) {
        t[b] = (c >> b & 1) ? p[b] : 1.0 - p[b];
        s[b] = (c >> b & 1) ? 1.0 : -1.0;
      }
      double dN[3] = {s[0] * t[1] * t[2], t[0] * s[1] * t[2], t[0] * t[1] * s[2]};
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) J[a][b] += X[c][a] * dN[b];
    }
    double inv[3][3];  // adjugate of J; divided by det below
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        inv[b][a] = J[(a + 1) % 3][(b + 1) % 3] * J[(a + 2) % 3][(b + 2) % 3] -
                    J[(a + 1) % 3][(b + 2) % 3] * J[(a + 2) % 3][(b + 1) % 3];
    double det = J[0][0] * inv[0][0] + J[0][1] * inv[1][0] + J[0][2] * inv[2][0];
    double G[3][3];  // 0.125 (the Gauss weight) * det * J^-1 J^-T
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        G[a][b] = 0.125 / det *
                  (inv[a][0] * inv[b][0] + inv[a][1] * inv[b][1] + inv[a][2] * inv[b][2]);
    for (int e = 0; e < 12; ++e)
      for (int f = 0; f < 12; ++f)
        M[e * 12 + f] += edge_hat(e, p) * edge_hat(f, p) * G[e / 4][f / 4];
  }
  for (int m = 0; m < 144; ++m) mass[el * 144 + m] = M[m];
}

void launch_edge3d(const double* coords, double* mass, int n) {
  long elems = (long)n * n * n;
  const int block = 128;
  edge3d<<<(elems + block - 1) / block, block>>>(coords, mass, n);
}
// @optimize end
