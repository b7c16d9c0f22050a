#pragma once

constexpr int kCounters = 64;

// Sets counters[c] (c in [0, kCounters)) to the sum of weights[i] over all i < n with
// i % kCounters == c (device pointers).
void launch_atomic(const double* weights, double* counters, int n);
