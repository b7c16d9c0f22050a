#pragma once

constexpr int kTaps = 16;

// out[i] = sum over t < kTaps of coeff[t] * in[i + t], for i < n (in holds n + kTaps - 1).
void launch_fir(const float* in, const float* coeff, float* out, long n);
