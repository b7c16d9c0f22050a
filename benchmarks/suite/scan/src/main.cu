// scan benchmark: inclusive prefix sum of an int array.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

// Integer prefix sums are exact, so every element must match the CPU reference exactly.
constexpr double kTolerance = 0.0;

// Values in [0, 4) keep every prefix sum below 2^31 for sizes up to 2^28.
static std::vector<int> make_input(int n, uint64_t seed) {
  std::vector<int> data(n);
  uint64_t state = seed;
  for (int& x : data) x = static_cast<int>(splitmix64(&state) >> 62);
  return data;
}

static std::vector<int> reference_scan(const std::vector<int>& in) {
  std::vector<int> out(in.size());
  int running = 0;
  for (size_t i = 0; i < in.size(); ++i) out[i] = running += in[i];
  return out;
}

static double max_rel_err(const std::vector<int>& got, const std::vector<int>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    worst = std::fmax(worst, diff / std::fmax(std::fabs(static_cast<double>(want[i])), 1.0));
  }
  return worst;
}

int main(int argc, char** argv) {
  Options opt{1LL << 24, 500, 12345};  // 64 MiB of ints: ~0.1-0.2 ms per scan on an H100
  if (!parse_options(argc, argv, &opt, 1LL << 28)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  std::vector<int> input = make_input(n, static_cast<uint64_t>(opt.seed));

  int *d_in = nullptr, *d_out = nullptr, *d_scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&d_in, sizeof(int) * n));
  CUDA_CHECK(cudaMalloc(&d_out, sizeof(int) * n));
  CUDA_CHECK(cudaMalloc(&d_scratch, sizeof(int) * scan_scratch_size(n)));
  CUDA_CHECK(cudaMemcpy(d_in, input.data(), sizeof(int) * n, cudaMemcpyHostToDevice));

  launch_scan(d_in, d_out, d_scratch, n);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < opt.reps; ++r) launch_scan(d_in, d_out, d_scratch, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  std::vector<int> result(n);
  CUDA_CHECK(cudaMemcpy(result.data(), d_out, sizeof(int) * n, cudaMemcpyDeviceToHost));
  double err = max_rel_err(result, reference_scan(input));
  bool pass = err <= kTolerance;
  double checksum = 0.0;
  for (int x : result) checksum += x;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  CUDA_CHECK(cudaFree(d_scratch));
  return pass ? 0 : 1;
}
