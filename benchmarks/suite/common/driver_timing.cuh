// Event timing for the suite's drivers: one untimed warm-up call, then `reps` timed ones.
// The including header defines CUDA_CHECK first.
#pragma once

#include <cuda_runtime.h>

// Mean milliseconds per call of run() over `reps` calls, after one untimed warm-up call.
template <class Run>
double time_reps(long long reps, Run run) {
  run();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start;
  cudaEvent_t stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; ++r) run();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / static_cast<double>(reps);
}
