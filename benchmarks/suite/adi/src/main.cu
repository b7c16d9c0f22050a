// adi benchmark: alternating-direction implicit (Peaceman-Rachford) diffusion steps on a 2D grid.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

constexpr int kSteps = 2;        // ADI time steps (each a row sweep then a column sweep)
constexpr float kAlpha = 0.25f;  // diffusion number dt * D / h^2 of each half step

// Relative error against a double reference, the denominator floored at 1e-3 (the solution is
// O(0.1..1)). The tridiagonal systems are strongly diagonally dominant (1 + 2a vs a), so float
// Thomas solves stay within a few ulps per sweep; 1e-4 leaves room for any sound solver order.
constexpr double kTolerance = 1e-4;

static std::vector<float> make_input(int n, uint64_t seed) {
  std::vector<float> data(static_cast<size_t>(n) * n);
  uint64_t state = seed;
  for (float& x : data) x = static_cast<float>(splitmix64(&state) >> 40) * 0x1.0p-24f;
  return data;
}

// Same half step as the GPU, in double: solves each line's system with the explicit half step
// across the line as right-hand side.
static void reference_sweep(const std::vector<double>& u, std::vector<double>& x, int n,
                            int along, int across) {
  const double a = kAlpha, diag = 1.0 + 2.0 * a;
  std::vector<double> cp(n);
  for (int line = 0; line < n; ++line) {
    int first = line * across;
    for (int j = 0; j < n; ++j) {
      int p = first + j * along;
      double rhs = (1.0 - 2.0 * a) * u[p];
      if (line > 0) rhs += a * u[p - across];
      if (line < n - 1) rhs += a * u[p + across];
      double m = diag + (j > 0 ? a * cp[j - 1] : 0.0);
      cp[j] = -a / m;
      x[p] = (rhs + (j > 0 ? a * x[p - along] : 0.0)) / m;
    }
    for (int j = n - 2; j >= 0; --j) x[first + j * along] -= cp[j] * x[first + (j + 1) * along];
  }
}

static std::vector<double> reference_adi(const std::vector<float>& in, int n) {
  std::vector<double> u(in.begin(), in.end()), v(in.size());
  for (int s = 0; s < kSteps; ++s) {
    reference_sweep(u, v, n, 1, n);  // rows
    reference_sweep(v, u, n, n, 1);  // columns
  }
  return u;
}

static double max_rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::fmax(worst, std::fabs(got[i] - want[i]) / std::fmax(std::fabs(want[i]), 1e-3));
  }
  return worst;
}

int main(int argc, char** argv) {
  Options opt{1024, 50, 12345};  // 1024 x 1024 grid, one thread per line: ~1 ms per rep on an H100
  if (!parse_options(argc, argv, &opt, 8192)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  size_t bytes = sizeof(float) * static_cast<size_t>(n) * n;
  std::vector<float> input = make_input(n, static_cast<uint64_t>(opt.seed));

  float *d_in = nullptr, *d_tmp = nullptr, *d_out = nullptr, *d_scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&d_in, bytes));
  CUDA_CHECK(cudaMalloc(&d_tmp, bytes));
  CUDA_CHECK(cudaMalloc(&d_out, bytes));
  CUDA_CHECK(cudaMalloc(&d_scratch, bytes));
  CUDA_CHECK(cudaMemcpy(d_in, input.data(), bytes, cudaMemcpyHostToDevice));

  launch_adi(d_in, d_tmp, d_out, d_scratch, n, kSteps, kAlpha);  // warm-up
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < opt.reps; ++r) {
    launch_adi(d_in, d_tmp, d_out, d_scratch, n, kSteps, kAlpha);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  std::vector<float> result(input.size());
  CUDA_CHECK(cudaMemcpy(result.data(), d_out, bytes, cudaMemcpyDeviceToHost));
  double err = max_rel_err(result, reference_adi(input, n));
  bool pass = err <= kTolerance;
  double checksum = 0.0;
  for (float x : result) checksum += x;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_tmp));
  CUDA_CHECK(cudaFree(d_out));
  CUDA_CHECK(cudaFree(d_scratch));
  return pass ? 0 : 1;
}
