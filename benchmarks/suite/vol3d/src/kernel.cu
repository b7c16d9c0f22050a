#include "kernel.h"

// Reference-cube corner of each local node, in [-1, 1]^3.
__constant__ double kSx[8] = {-1, 1, 1, -1, -1, 1, 1, -1};
__constant__ double kSy[8] = {-1, -1, 1, 1, -1, -1, 1, 1};
__constant__ double kSz[8] = {-1, -1, -1, -1, 1, 1, 1, 1};

// One thread per element: gather its 8 nodes, then integrate det(J) of the trilinear map with
// 2x2x2 Gauss points, which is exact because det(J) has degree <= 2 in each reference variable.
// @optimize
__global__ void vol3d_kernel(const double* x, const double* y, const double* z,
                             const int* elem_nodes, double* vol, long num_elems) {
  long e = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (e >= num_elems) return;
  double px[8], py[8], pz[8];
  for (int k = 0; k < 8; ++k) {
    int node = elem_nodes[8 * e + k];
    px[k] = x[node];
    py[k] = y[node];
    pz[k] = z[node];
  }
  const double g = 0.57735026918962576;  // 1/sqrt(3); all Gauss weights are 1
  double v = 0.0;
  for (int q = 0; q < 8; ++q) {
    double xi = (q & 1) ? g : -g, eta = (q & 2) ? g : -g, zeta = (q & 4) ? g : -g;
    double j[3][3] = {};  // j[a][m] = d x_a / d xi_m
    for (int k = 0; k < 8; ++k) {
      double d0 = 0.125 * kSx[k] * (1.0 + kSy[k] * eta) * (1.0 + kSz[k] * zeta);
      double d1 = 0.125 * kSy[k] * (1.0 + kSx[k] * xi) * (1.0 + kSz[k] * zeta);
      double d2 = 0.125 * kSz[k] * (1.0 + kSx[k] * xi) * (1.0 + kSy[k] * eta);
      double p[3] = {px[k], py[k], pz[k]};
      for (int a = 0; a < 3; ++a) {
        j[a][0] += d0 * p[a];
        j[a][1] += d1 * p[a];
        j[a][2] += d2 * p[a];
      }
    }
    v += j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) -
         j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0]) +
         j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]);
  }
  vol[e] = v;
}

void launch_vol3d(const double* x, const double* y, const double* z, const int* elem_nodes,
                  double* vol, long num_elems) {
  const int block = 256;
  long grid = (num_elems + block - 1) / block;
  vol3d_kernel<<<grid, block>>>(x, y, z, elem_nodes, vol, num_elems);
}
