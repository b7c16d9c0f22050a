// del_dot_vec_2d: divergence of a nodal 2D vector field over each zone of a perturbed quad
// mesh, gathering the zone's 4 nodes through an index list. See src/kernel.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_apps.cuh"

namespace {

struct Mesh {
  std::vector<double> x, y, xdot, ydot;
  std::vector<int> zone_nodes;
};

// Unit-spaced n x n zones; nodes jittered by up to +-0.15 so zones are general quads, and the
// vector field is random in [-1, 1)^2.
Mesh make_mesh(long n, uint64_t seed) {
  Rng rng{seed};
  const long m = n + 1;
  Mesh mesh{std::vector<double>(m * m), std::vector<double>(m * m), std::vector<double>(m * m),
            std::vector<double>(m * m), std::vector<int>(4 * n * n)};
  for (long j = 0; j < m; ++j)
    for (long i = 0; i < m; ++i) {
      long id = j * m + i;
      mesh.x[id] = i + 0.3 * (rng.uniform() - 0.5);
      mesh.y[id] = j + 0.3 * (rng.uniform() - 0.5);
      mesh.xdot[id] = 2.0 * rng.uniform() - 1.0;
      mesh.ydot[id] = 2.0 * rng.uniform() - 1.0;
    }
  const long di[4] = {0, 1, 1, 0}, dj[4] = {0, 0, 1, 1};
  for (long z = 0; z < n * n; ++z)
    for (int c = 0; c < 4; ++c)
      mesh.zone_nodes[4 * z + c] = static_cast<int>((z / n + dj[c]) * m + z % n + di[c]);
  return mesh;
}

std::vector<double> reference(const Mesh& mesh, double area_min) {
  std::vector<double> div(mesh.zone_nodes.size() / 4);
  for (size_t z = 0; z < div.size(); ++z) {
    const int* nd = &mesh.zone_nodes[4 * z];
    const std::vector<double>&x = mesh.x, &y = mesh.y;
    double area = 0.5 * ((x[nd[2]] - x[nd[0]]) * (y[nd[3]] - y[nd[1]]) -
                         (x[nd[3]] - x[nd[1]]) * (y[nd[2]] - y[nd[0]]));
    double flux = 0.0;
    for (int k = 0; k < 4; ++k) {
      int a = nd[k], b = nd[(k + 1) % 4];
      flux += 0.5 * ((mesh.xdot[a] + mesh.xdot[b]) * (y[b] - y[a]) -
                     (mesh.ydot[a] + mesh.ydot[b]) * (x[b] - x[a]));
    }
    div[z] = area > area_min ? flux / area : 0.0;
  }
  return div;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{2048, 1000, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long num_zones = opt.size * opt.size;
  const double area_min = 1e-12;
  Mesh mesh = make_mesh(opt.size, static_cast<uint64_t>(opt.seed));
  double* d_x = to_device(mesh.x);
  double* d_y = to_device(mesh.y);
  double* d_u = to_device(mesh.xdot);
  double* d_v = to_device(mesh.ydot);
  int* d_nodes = to_device(mesh.zone_nodes);
  double* d_div = device_buffer<double>(num_zones);

  float ms = time_reps(opt.reps, [&] {
    launch_del_dot_vec_2d(d_x, d_y, d_u, d_v, d_nodes, d_div, num_zones, area_min);
  });
  std::vector<double> got(num_zones);
  copy_back(got, 0, d_div, num_zones);
  for (double* ptr : {d_x, d_y, d_u, d_v, d_div}) CUDA_CHECK(cudaFree(ptr));
  CUDA_CHECK(cudaFree(d_nodes));

  // Divergences are O(1) and may sit near zero, so a floor of 1 judges them absolutely; the
  // flux is a short sum of O(1) products divided by an O(1) area, so 1e-10 is generous.
  return report(ms, got, reference(mesh, area_min), 1.0, 1e-10);
}
