// reduce_sum benchmark: the sum of a large float array.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

// Relative error of the float sum against a double reference: a tree over log2(n) levels of
// positive values stays near 1e-6; 1e-5 leaves room for rewrites that sum a few hundred
// elements per thread before the tree.
constexpr double kTolerance = 1e-5;

static std::vector<float> make_input(int n, uint64_t seed) {
  std::vector<float> data(n);
  uint64_t state = seed;
  for (float& x : data) x = static_cast<float>(splitmix64(&state) >> 40) * 0x1.0p-24f;
  return data;
}

static double reference_sum(const std::vector<float>& data) {
  double sum = 0.0;
  for (float x : data) sum += x;
  return sum;
}

int main(int argc, char** argv) {
  Options opt{1LL << 26, 500, 12345};  // 256 MiB of floats: ~0.1 ms per pass on an H100
  if (!parse_options(argc, argv, &opt, 1LL << 30)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  std::vector<float> input = make_input(n, static_cast<uint64_t>(opt.seed));

  float *d_in = nullptr, *d_scratch = nullptr, *d_out = nullptr;
  CUDA_CHECK(cudaMalloc(&d_in, sizeof(float) * n));
  CUDA_CHECK(cudaMalloc(&d_scratch, sizeof(float) * reduce_sum_scratch_size(n)));
  CUDA_CHECK(cudaMalloc(&d_out, sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_in, input.data(), sizeof(float) * n, cudaMemcpyHostToDevice));

  launch_reduce_sum(d_in, d_scratch, d_out, n);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < opt.reps; ++r) launch_reduce_sum(d_in, d_scratch, d_out, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  float result = 0.0f;
  CUDA_CHECK(cudaMemcpy(&result, d_out, sizeof(float), cudaMemcpyDeviceToHost));
  double expected = reference_sum(input);
  double rel_err = std::fabs(result - expected) / std::fmax(std::fabs(expected), 1e-30);
  bool pass = rel_err <= kTolerance;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", static_cast<double>(result));
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", rel_err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_scratch));
  CUDA_CHECK(cudaFree(d_out));
  return pass ? 0 : 1;
}
