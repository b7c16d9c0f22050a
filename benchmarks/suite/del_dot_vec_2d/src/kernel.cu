#include "kernel.h"

// One thread per zone: by Green's theorem the mean divergence is the outward flux through the
// zone's 4 edges (velocity averaged along each edge) divided by the zone's area.
// @optimize
__global__ void del_dot_vec_2d_kernel(const double* x, const double* y, const double* xdot,
                                      const double* ydot, const int* zone_nodes, double* div,
                                      long num_zones, double area_min) {
  long zone = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (zone >= num_zones) return;
  double px[4], py[4], u[4], v[4];
  for (int k = 0; k < 4; ++k) {
    int node = zone_nodes[4 * zone + k];
    px[k] = x[node];
    py[k] = y[node];
    u[k] = xdot[node];
    v[k] = ydot[node];
  }
  // Half the cross product of the diagonals: exact for a quad, and free of the cancellation
  // the shoelace sum suffers far from the origin.
  double area = 0.5 * ((px[2] - px[0]) * (py[3] - py[1]) - (px[3] - px[1]) * (py[2] - py[0]));
  double flux = 0.0;
  for (int k = 0; k < 4; ++k) {
    int next = (k + 1) % 4;
    double dx = px[next] - px[k];
    double dy = py[next] - py[k];
    flux += 0.5 * ((u[k] + u[next]) * dy - (v[k] + v[next]) * dx);
  }
  div[zone] = area > area_min ? flux / area : 0.0;
}

void launch_del_dot_vec_2d(const double* x, const double* y, const double* xdot,
                           const double* ydot, const int* zone_nodes, double* div,
                           long num_zones, double area_min) {
  const int block = 256;
  long grid = (num_zones + block - 1) / block;
  del_dot_vec_2d_kernel<<<grid, block>>>(x, y, xdot, ydot, zone_nodes, div, num_zones,
                                         area_min);
}
