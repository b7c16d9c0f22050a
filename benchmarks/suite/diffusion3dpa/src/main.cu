#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"

#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "CUDA error: %s at %s:%d\n",                     \
                   cudaGetErrorString(err_), __FILE__, __LINE__);           \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

namespace {

struct Options {
  long size;
  long reps;
  long seed;
};

// Strict decimal parse into [lo, hi]; false on junk or out of range.
bool parse_long(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_options(int argc, char** argv, long max_size, Options* opt) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    const char* key = argv[i];
    const char* val = argv[i + 1];
    bool ok = false;
    if (std::strcmp(key, "--size") == 0) ok = parse_long(val, 1, max_size, &opt->size);
    else if (std::strcmp(key, "--reps") == 0) ok = parse_long(val, 1, 1000000, &opt->reps);
    else if (std::strcmp(key, "--seed") == 0) ok = parse_long(val, 0, 1L << 62, &opt->seed);
    if (!ok) return false;
  }
  return true;
}

// splitmix64: a tiny deterministic generator, doubles in [0,1).
struct Rng {
  uint64_t state;
  double next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

// Relative error with a floor so near-zero reference entries do not dominate.
double max_rel_err(const std::vector<double>& got, const std::vector<double>& ref) {
  double scale = 0.0;
  for (double r : ref) scale = std::fmax(scale, std::fabs(r));
  double floor_abs = 1e-6 * scale + 1e-300;
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double err = std::fabs(got[i] - ref[i]) / std::fmax(std::fabs(ref[i]), floor_abs);
    if (!(err <= worst)) worst = err;  // also catches NaN
  }
  return worst;
}

int report(double ms, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  double sum = 0.0;
  for (double v : got) sum += v;
  double err = max_rel_err(got, ref);
  bool pass = err <= tol;
  std::printf("time_ms: %.6f\n", ms);
  std::printf("checksum: %.10g\n", sum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);
  return pass ? 0 : 1;
}

template <typename Launch>
double time_reps(long reps, Launch launch) {
  launch();  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long r = 0; r < reps; ++r) launch();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return static_cast<double>(total) / static_cast<double>(reps);
}

double* to_device(const std::vector<double>& host) {
  double* dev = nullptr;
  CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(double)));
  CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice));
  return dev;
}

std::vector<double> from_device(const double* dev, size_t n) {
  std::vector<double> host(n);
  CUDA_CHECK(cudaMemcpy(host.data(), dev, n * sizeof(double), cudaMemcpyDeviceToHost));
  return host;
}

// The 3D reference gradients of all dofs at all quadrature points: [QPTS][DOFS][3].
std::vector<double> gradient_table(const std::vector<double>& b, const std::vector<double>& g) {
  std::vector<double> t(QPTS * DOFS * 3);
  for (int q = 0; q < QPTS; ++q) {
    int qx = q % Q1D, qy = (q / Q1D) % Q1D, qz = q / (Q1D * Q1D);
    for (int d = 0; d < DOFS; ++d) {
      int dx = d % D1D, dy = (d / D1D) % D1D, dz = d / (D1D * D1D);
      double bx = b[qx * D1D + dx], by = b[qy * D1D + dy], bz = b[qz * D1D + dz];
      double* out = &t[(q * DOFS + d) * 3];
      out[0] = g[qx * D1D + dx] * by * bz;
      out[1] = bx * g[qy * D1D + dy] * bz;
      out[2] = bx * by * g[qz * D1D + dz];
    }
  }
  return t;
}

std::vector<double> reference(const std::vector<double>& b, const std::vector<double>& g,
                              const std::vector<double>& op, const std::vector<double>& x,
                              long elems) {
  std::vector<double> t = gradient_table(b, g), y(x.size(), 0.0);
  for (long e = 0; e < elems; ++e) {
    for (int q = 0; q < QPTS; ++q) {
      double grad[3] = {0.0, 0.0, 0.0};
      for (int d = 0; d < DOFS; ++d)
        for (int k = 0; k < 3; ++k) grad[k] += t[(q * DOFS + d) * 3 + k] * x[e * DOFS + d];
      const double* c = &op[(e * QPTS + q) * SYM];
      double f[3] = {c[0] * grad[0] + c[1] * grad[1] + c[2] * grad[2],
                     c[1] * grad[0] + c[3] * grad[1] + c[4] * grad[2],
                     c[2] * grad[0] + c[4] * grad[1] + c[5] * grad[2]};
      for (int d = 0; d < DOFS; ++d)
        for (int k = 0; k < 3; ++k) y[e * DOFS + d] += t[(q * DOFS + d) * 3 + k] * f[k];
    }
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{32768, 200, 12345};  // size = number of elements
  if (!parse_options(argc, argv, 1L << 20, &opt)) {
    std::fprintf(stderr, "usage: %s [--size ELEMS] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  // Synthetic positive 1D tables keep every output a sum of positive terms: with a true
  // Lagrange basis each element's outputs sum to zero (constants lie in the operator's
  // null space), leaving the checksum as pure rounding noise. The data flow is unchanged.
  Rng rng{static_cast<uint64_t>(opt.seed)};
  std::vector<double> b(Q1D * D1D), g(Q1D * D1D);
  for (double& v : b) v = rng.next();
  for (double& v : g) v = rng.next();
  std::vector<double> op(opt.size * QPTS * SYM), x(opt.size * DOFS);
  for (double& v : op) v = rng.next();
  for (double& v : x) v = rng.next();

  double *d_b = to_device(b), *d_g = to_device(g), *d_op = to_device(op), *d_x = to_device(x);
  double* d_y = nullptr;
  CUDA_CHECK(cudaMalloc(&d_y, x.size() * sizeof(double)));
  int elems = static_cast<int>(opt.size);
  double ms = time_reps(opt.reps, [&] { launch_diffusion3dpa(d_b, d_g, d_op, d_x, d_y, elems); });
  std::vector<double> y = from_device(d_y, x.size());
  for (double* p : {d_b, d_g, d_op, d_x, d_y}) CUDA_CHECK(cudaFree(p));

  // Double-precision sums of ~2k positive terms; a reordered (e.g. sum-factorised) version
  // differs from this reference by ~1e-14 relative, so 1e-10 leaves ample room.
  return report(ms, y, reference(b, g, op, x, opt.size), 1e-10);
}
