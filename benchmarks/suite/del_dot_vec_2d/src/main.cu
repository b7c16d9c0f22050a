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
