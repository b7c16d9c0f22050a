// The one function the driver calls; the model writes it (and its kernels) in kernel.cu.
#pragma once

#include <cuda_runtime.h>

// Computes out[0..n) from a[0..n) and b[0..n) (device arrays) with kernels on the default
// stream; the driver synchronizes and checks for errors after it.
void launch(const float* a, const float* b, float* out, int n);
