// Shared declarations of the saxpy-stencil pipeline: smooth -> axpy -> rescale -> block sums.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "params.h"

// Any failed CUDA call ends the program with a non-zero status.
#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), \
                         __FILE__, __LINE__, cudaGetErrorString(err_));                   \
            std::exit(EXIT_FAILURE);                                                      \
        }                                                                                 \
    } while (0)

inline int num_blocks(int n) { return (n + kBlockSize - 1) / kBlockSize; }

// out = weighted average of in over [i - kRadius, i + kRadius], indices clamped to [0, n).
void launch_smooth(const float* in, const float* weights, float* out, int n);

// out = kScale * (kAlpha * s + y) + kShift, through the scratch buffer tmp.
void launch_update(const float* s, const float* y, float* tmp, float* out, int n);

// partials[b] = sum of x over block b (num_blocks(n) entries), accumulated in double.
void launch_block_sums(const float* x, double* partials, int n);
