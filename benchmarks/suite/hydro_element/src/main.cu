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

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,              \
                   cudaGetErrorString(err_));                                            \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

namespace {

struct Options {
  long size;
  long reps;
  long seed;
};

// Parses an integer option value >= `min`; false on junk or out of range.
bool parse_value(const char* text, long min, long* out) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min) return false;
  *out = value;
  return true;
}

bool parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    bool ok = false;
    if (std::strcmp(argv[i], "--size") == 0) ok = parse_value(argv[i + 1], 1, &opt->size);
    if (std::strcmp(argv[i], "--reps") == 0) ok = parse_value(argv[i + 1], 1, &opt->reps);
    if (std::strcmp(argv[i], "--seed") == 0) ok = parse_value(argv[i + 1], 0, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

// splitmix64: tiny and deterministic, so one seed always gives the same inputs.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

template <class T>
T* to_device(const std::vector<T>& host) {
  T* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return dev;
}

template <class T>
T* device_buffer(size_t count) {
  T* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, count * sizeof(T)));
  return dev;
}

// Copies `count` device values to host[offset...], so several outputs can share one check.
template <class T>
void copy_back(std::vector<T>& host, size_t offset, const T* dev, size_t count) {
  CUDA_CHECK(cudaMemcpy(host.data() + offset, dev, count * sizeof(T), cudaMemcpyDeviceToHost));
}

// One warm-up launch, then `reps` timed ones; returns the mean ms per repetition.
template <class Launch>
float time_reps(long reps, Launch launch) {
  launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long r = 0; r < reps; ++r) launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / static_cast<float>(reps);
}

// Relative error per element; `floor` bounds the denominator so values near zero are judged
// on an absolute scale. NaN anywhere makes the result infinite.
template <class T>
double max_rel_err(const std::vector<T>& got, const std::vector<double>& want, double floor) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = static_cast<double>(got[i]);
    double err = std::fabs(g - want[i]) / std::fmax(std::fabs(want[i]), floor);
    if (std::isnan(err)) return INFINITY;
    worst = std::fmax(worst, err);
  }
  return worst;
}

// Prints the three result lines; returns the process exit code.
template <class T>
int report(float ms, const std::vector<T>& got, const std::vector<double>& want, double floor,
           double tol) {
  double sum = 0.0;
  for (const T& v : got) sum += static_cast<double>(v);
  double err = max_rel_err(got, want, floor);
  bool pass = err <= tol;
  std::printf("time_ms: %.6f\n", ms);
  std::printf("checksum: %.10g\n", sum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);
  return pass ? 0 : 1;
}

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
