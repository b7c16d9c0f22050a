#include "kernel.h"

// One thread per element: bulk-modulus factor from the compression, pressure from the
// energy, then the cutoffs a hydro code applies so that round-off noise never drives motion.
// @optimize
__global__ void pressure_kernel(const double* compression, const double* e_old,
                                const double* vnewc, double* p_new, long n,
                                PressureParams params) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double bvc = params.cls * (compression[i] + 1.0);
  double p = bvc * e_old[i];
  if (fabs(p) < params.p_cut) p = 0.0;
  if (vnewc[i] >= params.eosvmax) p = 0.0;
  if (p < params.pmin) p = params.pmin;
  p_new[i] = p;
}

void launch_pressure(const double* compression, const double* e_old, const double* vnewc,
                     double* p_new, long n, PressureParams params) {
  const int block = 256;
  long grid = (n + block - 1) / block;
  pressure_kernel<<<grid, block>>>(compression, e_old, vnewc, p_new, n, params);
}
