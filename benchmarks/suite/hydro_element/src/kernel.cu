#include "kernel.h"

// Reference-cube corner of each local node, in [-1, 1]^3.
__constant__ double kSign[3][8] = {{-1, 1, 1, -1, -1, 1, 1, -1},
                                   {-1, -1, 1, 1, -1, -1, 1, 1},
                                   {-1, -1, -1, -1, 1, 1, 1, 1}};

// One thread per element. With J = dx/dxi of the trilinear map, vol = integral of det(J) and
// d vol / d x_ak = integral of sum_m cof(J)_am dN_k/dxi_m. Both integrands have degree <= 2 in
// each reference variable, so 2x2x2 Gauss points (weights 1) make both exact.
// @optimize
__global__ void hydro_element_kernel(const double* x, const double* y, const double* z,
                                     const int* elem_nodes, double* vol, double* bmat,
                                     long num_elems) {
  long e = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (e >= num_elems) return;
  double p[3][8];
  for (int k = 0; k < 8; ++k) {
    int node = elem_nodes[8 * e + k];
    p[0][k] = x[node];
    p[1][k] = y[node];
    p[2][k] = z[node];
  }
  const double g = 0.57735026918962576;  // 1/sqrt(3)
  double v = 0.0, b[3][8] = {};
  for (int q = 0; q < 8; ++q) {
    double r[3] = {(q & 1) ? g : -g, (q & 2) ? g : -g, (q & 4) ? g : -g};
    double dn[8][3], j[3][3] = {};  // dn[k][m] = dN_k/dxi_m, j[a][m] = dx_a/dxi_m
    for (int k = 0; k < 8; ++k) {
      double f[3];
      for (int m = 0; m < 3; ++m) f[m] = 1.0 + kSign[m][k] * r[m];
      dn[k][0] = 0.125 * kSign[0][k] * f[1] * f[2];
      dn[k][1] = 0.125 * kSign[1][k] * f[0] * f[2];
      dn[k][2] = 0.125 * kSign[2][k] * f[0] * f[1];
      for (int a = 0; a < 3; ++a)
        for (int m = 0; m < 3; ++m) j[a][m] += p[a][k] * dn[k][m];
    }
    double c[3][3];  // cofactors: c[a][m] = d det(J) / d j[a][m]
    for (int a = 0; a < 3; ++a)
      for (int m = 0; m < 3; ++m) {
        int a1 = (a + 1) % 3, a2 = (a + 2) % 3, m1 = (m + 1) % 3, m2 = (m + 2) % 3;
        c[a][m] = j[a1][m1] * j[a2][m2] - j[a1][m2] * j[a2][m1];
      }
    v += j[0][0] * c[0][0] + j[0][1] * c[0][1] + j[0][2] * c[0][2];
    for (int a = 0; a < 3; ++a)
      for (int k = 0; k < 8; ++k)
        b[a][k] += c[a][0] * dn[k][0] + c[a][1] * dn[k][1] + c[a][2] * dn[k][2];
  }
  vol[e] = v;
  for (int a = 0; a < 3; ++a)
    for (int k = 0; k < 8; ++k) bmat[24 * e + 8 * a + k] = b[a][k];
}

void launch_hydro_element(const double* x, const double* y, const double* z,
                          const int* elem_nodes, double* vol, double* bmat, long num_elems) {
  const int block = 128;
  long grid = (num_elems + block - 1) / block;
  hydro_element_kernel<<<grid, block>>>(x, y, z, elem_nodes, vol, bmat, num_elems);
}
