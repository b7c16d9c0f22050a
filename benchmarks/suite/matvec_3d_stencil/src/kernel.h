#pragma once

// y = A x for a 27-point stencil on the n x n x n interior of an (n+2)^3 grid (one ghost layer,
// x fastest). coef: [27][n^3], one coefficient per stencil point per interior cell, with
// stencil point s = (dx+1) + 3*(dy+1) + 9*(dz+1). x: (n+2)^3 values; y: n^3 values.
void launch_matvec_3d_stencil(const double* coef, const double* x, double* y, int n);
