// floyd_warshall benchmark: all-pairs shortest paths on a dense graph (Floyd-Warshall).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_basic.cuh"

// Integer path lengths are exact, so every distance must match the CPU reference exactly.
constexpr double kTolerance = 0.0;

// About half the edges exist, with weights in [1, 100]; the diagonal is 0.
static std::vector<int> make_graph(int n, uint64_t seed) {
  std::vector<int> dist(static_cast<size_t>(n) * n);
  uint64_t state = seed;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      uint64_t r = splitmix64(&state);
      int weight = (r & 1) ? static_cast<int>((r >> 32) % 100) + 1 : kInf;
      dist[static_cast<size_t>(i) * n + j] = i == j ? 0 : weight;
    }
  }
  return dist;
}

static std::vector<int> reference_paths(std::vector<int> dist, int n) {
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < n; ++i) {
      const int* row_k = &dist[static_cast<size_t>(k) * n];
      int* row_i = &dist[static_cast<size_t>(i) * n];
      for (int j = 0; j < n; ++j) row_i[j] = std::min(row_i[j], row_i[k] + row_k[j]);
    }
  }
  return dist;
}

static double max_rel_err(const std::vector<int>& got, const std::vector<int>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    worst = std::fmax(worst, diff / std::fmax(static_cast<double>(want[i]), 1.0));
  }
  return worst;
}

int main(int argc, char** argv) {
  Options opt{384, 100, 12345};  // 384 nodes: 384 launches of 147K threads, ~1 ms on an H100
  if (!parse_options(argc, argv, &opt, 4096)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  size_t bytes = sizeof(int) * static_cast<size_t>(n) * n;
  std::vector<int> graph = make_graph(n, static_cast<uint64_t>(opt.seed));

  int *d_graph = nullptr, *d_dist = nullptr;
  CUDA_CHECK(cudaMalloc(&d_graph, bytes));
  CUDA_CHECK(cudaMalloc(&d_dist, bytes));
  CUDA_CHECK(cudaMemcpy(d_graph, graph.data(), bytes, cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float total_ms = 0.0f;
  // Rep 0 is the warm-up. The solve is in place, so each rep restarts from the graph and only
  // the solve itself is timed.
  for (long long r = 0; r <= opt.reps; ++r) {
    CUDA_CHECK(cudaMemcpy(d_dist, d_graph, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(start));
    launch_floyd_warshall(d_dist, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) total_ms += ms;
  }

  std::vector<int> dist(graph.size());
  CUDA_CHECK(cudaMemcpy(dist.data(), d_dist, bytes, cudaMemcpyDeviceToHost));
  double err = max_rel_err(dist, reference_paths(graph, n));
  bool pass = err <= kTolerance;
  double checksum = 0.0;
  for (int d : dist) checksum += d;

  std::printf("time_ms: %.6f\n", total_ms / opt.reps);
  std::printf("checksum: %.10g\n", checksum);
  std::printf("check: %s max_rel_err=%.3e\n", pass ? "PASS" : "FAIL", err);

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_graph));
  CUDA_CHECK(cudaFree(d_dist));
  return pass ? 0 : 1;
}
