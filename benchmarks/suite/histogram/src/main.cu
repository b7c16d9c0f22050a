// histogram benchmark: counts of int values in a fixed number of bins.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

// Bin counts are integers, so every bin must match the CPU reference exactly.
constexpr double kTolerance = 0.0;

// The mean of two uniform draws gives a peaked (triangular) distribution, so the middle bins
// see more atomic contention than the edges, as in real image or particle histograms.
static std::vector<int> make_input(int n, uint64_t seed) {
  std::vector<int> data(n);
  uint64_t state = seed;
  for (int& x : data) {
    uint64_t a = splitmix64(&state) % kBins;
    uint64_t b = splitmix64(&state) % kBins;
    x = static_cast<int>((a + b) / 2);
  }
  return data;
}

static std::vector<unsigned int> reference_histogram(const std::vector<int>& values) {
  std::vector<unsigned int> bins(kBins, 0);
  for (int v : values) ++bins[v];
  return bins;
}

static double max_rel_err(const std::vector<unsigned int>& got,
                          const std::vector<unsigned int>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    worst = std::fmax(worst, diff / std::fmax(static_cast<double>(want[i]), 1.0));
  }
  return worst;
}

int main(int argc, char** argv) {
  Options opt{1LL << 24, 300, 12345};  // 64 MiB of ints: ~0.1-0.5 ms of atomics on an H100
  if (!parse_options(argc, argv, &opt, 1LL << 30)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  std::vector<int> values = make_input(n, static_cast<uint64_t>(opt.seed));

  int* d_values = nullptr;
  unsigned int* d_bins = nullptr;
  CUDA_CHECK(cudaMalloc(&d_values, sizeof(int) * n));
  CUDA_CHECK(cudaMalloc(&d_bins, sizeof(unsigned int) * kBins));
  CUDA_CHECK(cudaMemcpy(d_values, values.data(), sizeof(int) * n, cudaMemcpyHostToDevice));

  launch_histogram(d_values, d_bins, n);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < opt.reps; ++r) launch_histogram(d_values, d_bins, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  std::vector<unsigned int> bins(kBins);
  CUDA_CHECK(
      cudaMemcpy(bins.data(), d_bins, sizeof(unsigned int) * kBins, cudaMemcpyDeviceToHost));
  double err = max_rel_err(bins, reference_histogram(values));
  bool pass = err <= kTolerance;
  double checksum = 0.0;
  for (unsigned int count : bins) checksum += count;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_values));
  CUDA_CHECK(cudaFree(d_bins));
  return pass ? 0 : 1;
}
