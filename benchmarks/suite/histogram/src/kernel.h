#pragma once

constexpr int kBins = 256;

// Sets bins[0..kBins) to the number of values[0..n) equal to each bin index (device pointers;
// every value is in [0, kBins)).
void launch_histogram(const int* values, unsigned int* bins, int n);
