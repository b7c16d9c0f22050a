// hydro_element: the per-element geometry step of a Lagrangian hydro code: gather each
// hexahedron's 8 nodes through an index list, then its volume and volume gradient (B matrix).
// See src/kernel.cu.
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

// Output layout: vol (num_elems) | bmat (24 * num_elems); same Gauss integration as the kernel.
std::vector<double> reference(const Mesh& mesh) {
  const double sg[3][8] = {{-1, 1, 1, -1, -1, 1, 1, -1}, {-1, -1, 1, 1, -1, -1, 1, 1},
                           {-1, -1, -1, -1, 1, 1, 1, 1}};
  const double g = 1.0 / std::sqrt(3.0);
  const size_t ne = mesh.elem_nodes.size() / 8;
  std::vector<double> out(25 * ne);
  for (size_t e = 0; e < ne; ++e) {
    const int* nd = &mesh.elem_nodes[8 * e];
    for (int q = 0; q < 8; ++q) {
      double r[3] = {(q & 1) ? g : -g, (q & 2) ? g : -g, (q & 4) ? g : -g};
      double dn[8][3], j[3][3] = {};
      for (int k = 0; k < 8; ++k) {
        double p[3] = {mesh.x[nd[k]], mesh.y[nd[k]], mesh.z[nd[k]]};
        for (int m = 0; m < 3; ++m)
          dn[k][m] = 0.125 * sg[m][k] * (1 + sg[(m + 1) % 3][k] * r[(m + 1) % 3]) *
                     (1 + sg[(m + 2) % 3][k] * r[(m + 2) % 3]);
        for (int a = 0; a < 3; ++a)
          for (int m = 0; m < 3; ++m) j[a][m] += p[a] * dn[k][m];
      }
      double c[3][3];
      for (int a = 0; a < 3; ++a)
        for (int m = 0; m < 3; ++m)
          c[a][m] = j[(a + 1) % 3][(m + 1) % 3] * j[(a + 2) % 3][(m + 2) % 3] -
                    j[(a + 1) % 3][(m + 2) % 3] * j[(a + 2) % 3][(m + 1) % 3];
      out[e] += j[0][0] * c[0][0] + j[0][1] * c[0][1] + j[0][2] * c[0][2];
      for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 8; ++k)
          for (int m = 0; m < 3; ++m) out[ne + 24 * e + 8 * a + k] += c[a][m] * dn[k][m];
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{100, 500, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long ne = opt.size * opt.size * opt.size;
  Mesh mesh = make_mesh(opt.size, static_cast<uint64_t>(opt.seed));
  double* d_x = to_device(mesh.x);
  double* d_y = to_device(mesh.y);
  double* d_z = to_device(mesh.z);
  int* d_nodes = to_device(mesh.elem_nodes);
  double* d_vol = device_buffer<double>(ne);
  double* d_b = device_buffer<double>(24 * ne);

  float ms = time_reps(opt.reps, [&] {
    launch_hydro_element(d_x, d_y, d_z, d_nodes, d_vol, d_b, ne);
  });
  std::vector<double> got(25 * ne);
  copy_back(got, 0, d_vol, ne);
  copy_back(got, ne, d_b, 24 * ne);
  for (double* ptr : {d_x, d_y, d_z, d_vol, d_b}) CUDA_CHECK(cudaFree(ptr));
  CUDA_CHECK(cudaFree(d_nodes));

  // Unit spacing makes volumes ~1 and B entries ~0.25; B entries can sit near zero, so a floor
  // of 1 judges everything on that absolute scale. Short sums of O(1) double products differ by
  // ~1e-15 (FMA contraction, order), so 1e-10 is generous.
  return report(ms, got, reference(mesh), 1.0, 1e-10);
}
