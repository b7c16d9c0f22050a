#pragma once

// `steps` 2D FDTD time steps updating n x n row-major fields ex, ey and hz in place; fict holds
// one source value per step (device memory), written into row 0 of ey.
void launch_fdtd_2d(int n, int steps, const float* fict, float* ex, float* ey, float* hz);
