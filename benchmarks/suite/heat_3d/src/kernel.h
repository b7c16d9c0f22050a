#pragma once

// `steps` heat-equation time steps on an n x n x n row-major grid with fixed boundary values, each
// step two 7-point sweeps (in -> tmp -> out on the first, out -> tmp -> out after). `in` is not
// written.
void launch_heat_3d(int n, int steps, const float* in, float* tmp, float* out);
