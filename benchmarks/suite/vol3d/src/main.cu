// vol3d: volumes of the hexahedral elements of a perturbed n^3 mesh, each element's 8 node
// coordinates gathered through a node-index list. See src/kernel.cu.
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
  std::vector<double> x, y, z;
  std::vector<int> elem_nodes;
};

// Unit-spaced n^3 brick with every node jittered by up to +-0.15, so elements stay valid but
// are not parallelepipeds (which would make the volume formula trivial).
Mesh make_mesh(long n, uint64_t seed) {
  Rng rng{seed};
  const long m = n + 1;
  Mesh mesh{std::vector<double>(m * m * m), std::vector<double>(m * m * m),
            std::vector<double>(m * m * m), std::vector<int>(8 * n * n * n)};
  for (long k = 0; k < m; ++k)
    for (long j = 0; j < m; ++j)
      for (long i = 0; i < m; ++i) {
        long id = (k * m + j) * m + i;
        mesh.x[id] = i + 0.3 * (rng.uniform() - 0.5);
        mesh.y[id] = j + 0.3 * (rng.uniform() - 0.5);
        mesh.z[id] = k + 0.3 * (rng.uniform() - 0.5);
      }
  const long di[8] = {0, 1, 1, 0, 0, 1, 1, 0}, dj[8] = {0, 0, 1, 1, 0, 0, 1, 1};
  for (long e = 0; e < n * n * n; ++e) {
    long i = e % n, j = (e / n) % n, k = e / (n * n);
    for (int c = 0; c < 8; ++c)
      mesh.elem_nodes[8 * e + c] = static_cast<int>(((k + c / 4) * m + j + dj[c]) * m + i + di[c]);
  }
  return mesh;
}

double det3(const double j[3][3]) {
  return j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) -
         j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0]) +
         j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]);
}

// Same 2x2x2 Gauss integration of det(J) as the kernel.
std::vector<double> reference(const Mesh& mesh) {
  const double sx[8] = {-1, 1, 1, -1, -1, 1, 1, -1}, sy[8] = {-1, -1, 1, 1, -1, -1, 1, 1};
  const double sz[8] = {-1, -1, -1, -1, 1, 1, 1, 1}, g = 1.0 / std::sqrt(3.0);
  std::vector<double> vol(mesh.elem_nodes.size() / 8);
  for (size_t e = 0; e < vol.size(); ++e) {
    for (int q = 0; q < 8; ++q) {
      double r[3] = {(q & 1) ? g : -g, (q & 2) ? g : -g, (q & 4) ? g : -g};
      double j[3][3] = {};
      for (int k = 0; k < 8; ++k) {
        int nd = mesh.elem_nodes[8 * e + k];
        double p[3] = {mesh.x[nd], mesh.y[nd], mesh.z[nd]};
        double d[3] = {0.125 * sx[k] * (1 + sy[k] * r[1]) * (1 + sz[k] * r[2]),
                       0.125 * sy[k] * (1 + sx[k] * r[0]) * (1 + sz[k] * r[2]),
                       0.125 * sz[k] * (1 + sx[k] * r[0]) * (1 + sy[k] * r[1])};
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) j[a][b] += d[b] * p[a];
      }
      vol[e] += det3(j);
    }
  }
  return vol;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{160, 500, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long num_elems = opt.size * opt.size * opt.size;
  Mesh mesh = make_mesh(opt.size, static_cast<uint64_t>(opt.seed));
  double* d_x = to_device(mesh.x);
  double* d_y = to_device(mesh.y);
  double* d_z = to_device(mesh.z);
  int* d_nodes = to_device(mesh.elem_nodes);
  double* d_vol = device_buffer<double>(num_elems);

  float ms = time_reps(opt.reps, [&] { launch_vol3d(d_x, d_y, d_z, d_nodes, d_vol, num_elems); });
  std::vector<double> got(num_elems);
  copy_back(got, 0, d_vol, num_elems);
  for (double* ptr : {d_x, d_y, d_z, d_vol}) CUDA_CHECK(cudaFree(ptr));
  CUDA_CHECK(cudaFree(d_nodes));

  // Volumes are about 1 (unit spacing) and never near zero; sums of O(1) double products give
  // ~1e-15 relative differences (FMA contraction), so 1e-10 is generous.
  return report(ms, got, reference(mesh), 1.0, 1e-10);
}
