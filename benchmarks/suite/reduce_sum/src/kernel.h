#pragma once

// Floats of scratch that launch_reduce_sum may use for partial sums of n inputs.
inline int reduce_sum_scratch_size(int n) { return n / 128 + 1024; }

// Writes the sum of in[0..n) to *out (device pointers; scratch holds
// reduce_sum_scratch_size(n) floats).
void launch_reduce_sum(const float* in, float* scratch, float* out, int n);
