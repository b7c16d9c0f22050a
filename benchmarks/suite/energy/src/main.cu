// energy: predictor-corrector update of element internal energy under pdV work, followed by
// pressure (ideal-gas EOS) and artificial viscosity, as four kernels. See src/kernel.cu.
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

constexpr int kInputs = 9;  // e_old, delvc, p_old, q_old, work, comp_half, comp_new, ql, qq

// Lower bound and width of each input's uniform range; delvc straddles zero so both the
// compressing (viscous) and expanding branches run.
constexpr double kRange[kInputs][2] = {{0.1, 1.0},  {-0.05, 0.1}, {0.0, 1.0},
                                       {0.0, 0.1},  {0.0, 0.01},  {-0.1, 0.2},
                                       {-0.1, 0.2}, {0.0, 0.1},   {0.0, 0.01}};

std::vector<std::vector<double>> make_inputs(long n, uint64_t seed) {
  Rng rng{seed};
  std::vector<std::vector<double>> in(kInputs, std::vector<double>(n));
  for (long i = 0; i < n; ++i)
    for (int k = 0; k < kInputs; ++k) in[k][i] = kRange[k][0] + kRange[k][1] * rng.uniform();
  return in;
}

double eos_ref(double comp, double e, EnergyParams prm) {
  return std::fmax((prm.gamma - 1.0) * prm.rho0 * (comp + 1.0) * e, 0.0);
}

double visc_ref(double delvc, double comp, double p, double ql, double qq, EnergyParams prm) {
  if (delvc > 0.0) return 0.0;
  double ssc = std::sqrt(std::fmax(prm.gamma * p / (prm.rho0 * (comp + 1.0)), 1e-12));
  return ssc * ql + qq;
}

// Output layout: e_new | p_new | q_new, n each.
std::vector<double> reference(const std::vector<std::vector<double>>& in, EnergyParams prm) {
  const auto &e0 = in[0], &dv = in[1], &p0 = in[2], &q0 = in[3], &w = in[4];
  const size_t n = e0.size();
  std::vector<double> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    double e = std::fmax(e0[i] - dv[i] * (p0[i] + q0[i]) + w[i], prm.emin);
    double ph = eos_ref(in[5][i], e, prm);
    double qh = visc_ref(dv[i], in[5][i], ph, in[7][i], in[8][i], prm);
    e = e0[i] - 0.5 * dv[i] * (p0[i] + q0[i] + ph + qh) + w[i];
    if (std::fabs(e) < prm.e_cut) e = 0.0;
    e = std::fmax(e, prm.emin);
    double p = eos_ref(in[6][i], e, prm);
    double q = visc_ref(dv[i], in[6][i], p, in[7][i], in[8][i], prm);
    if (std::fabs(q) < prm.q_cut) q = 0.0;
    out[i] = e;
    out[n + i] = p;
    out[2 * n + i] = q;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{1L << 22, 400, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long n = opt.size;
  const EnergyParams prm{5.0 / 3.0, 1.0, 0.0, 1e-7, 1e-7};
  std::vector<std::vector<double>> in = make_inputs(n, static_cast<uint64_t>(opt.seed));
  double* d_in[kInputs];
  for (int k = 0; k < kInputs; ++k) d_in[k] = to_device(in[k]);
  double* d_out[5];  // p_half, q_half, e_new, p_new, q_new
  for (double*& ptr : d_out) ptr = device_buffer<double>(n);
  EnergyArrays a{d_in[0],  d_in[1],  d_in[2],  d_in[3],  d_in[4],  d_in[5],  d_in[6], d_in[7],
                 d_in[8],  d_out[0], d_out[1], d_out[2], d_out[3], d_out[4]};

  float ms = time_reps(opt.reps, [&] { launch_energy(a, n, prm); });
  std::vector<double> got(3 * n);
  for (int k = 0; k < 3; ++k) copy_back(got, k * n, d_out[2 + k], n);
  for (double* ptr : d_in) CUDA_CHECK(cudaFree(ptr));
  for (double* ptr : d_out) CUDA_CHECK(cudaFree(ptr));

  // Outputs are O(0.01..1); a floor of 1e-3 judges clamped zeros absolutely. A handful of
  // double ops and one sqrt per value differ only by FMA contraction, so 1e-10 is generous.
  return report(ms, got, reference(in, prm), 1e-3, 1e-10);
}
