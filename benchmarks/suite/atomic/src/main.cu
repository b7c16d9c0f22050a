// atomic benchmark: many threads atomically add weights into a small array of counters.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

// Weights are multiples of 1/8 and every partial sum stays far below 2^50, so double additions
// are exact in any order: every counter must match the CPU reference exactly.
constexpr double kTolerance = 0.0;

static std::vector<double> make_input(int n, uint64_t seed) {
  std::vector<double> data(n);
  uint64_t state = seed;
  for (double& x : data) x = static_cast<double>(splitmix64(&state) >> 60) / 8.0;
  return data;
}

static std::vector<double> reference_counters(const std::vector<double>& weights) {
  std::vector<double> counters(kCounters, 0.0);
  for (size_t i = 0; i < weights.size(); ++i) counters[i % kCounters] += weights[i];
  return counters;
}

static double max_rel_err(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::fmax(worst, std::fabs(got[i] - want[i]) / std::fmax(std::fabs(want[i]), 1.0));
  }
  return worst;
}

int main(int argc, char** argv) {
  Options opt{1LL << 24, 100, 12345};  // 16M double atomics onto 64 counters: ~0.2-1 ms on an H100
  if (!parse_options(argc, argv, &opt, 1LL << 30)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  std::vector<double> weights = make_input(n, static_cast<uint64_t>(opt.seed));

  double *d_weights = nullptr, *d_counters = nullptr;
  CUDA_CHECK(cudaMalloc(&d_weights, sizeof(double) * n));
  CUDA_CHECK(cudaMalloc(&d_counters, sizeof(double) * kCounters));
  CUDA_CHECK(cudaMemcpy(d_weights, weights.data(), sizeof(double) * n, cudaMemcpyHostToDevice));

  launch_atomic(d_weights, d_counters, n);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < opt.reps; ++r) launch_atomic(d_weights, d_counters, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  std::vector<double> counters(kCounters);
  CUDA_CHECK(cudaMemcpy(counters.data(), d_counters, sizeof(double) * kCounters,
                        cudaMemcpyDeviceToHost));
  double err = max_rel_err(counters, reference_counters(weights));
  bool pass = err <= kTolerance;
  double checksum = 0.0;
  for (double c : counters) checksum += c;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_weights));
  CUDA_CHECK(cudaFree(d_counters));
  return pass ? 0 : 1;
}
