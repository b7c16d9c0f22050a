#pragma once

// "No edge": large enough to exceed any path, small enough that kInf + kInf fits in an int.
constexpr int kInf = 1 << 29;

// Replaces the n x n row-major edge weights in dist (device pointer) by shortest path lengths.
void launch_floyd_warshall(int* dist, int n);
