#pragma once

// Ints of scratch that launch_scan may use for block sums of n inputs.
inline int scan_scratch_size(int n) { return n / 128 + 64; }

// Writes the inclusive prefix sums of in[0..n) to out (device pointers; scratch holds
// scan_scratch_size(n) ints).
void launch_scan(const int* in, int* out, int* scratch, int n);
