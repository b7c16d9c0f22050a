#include "kernel.h"

// One thread per phi entry (moment fastest), each running the full sum over directions.
// @optimize
__global__ void ltimes_kernel(const double* ell, const double* psi, double* phi,
                              long num_zones) {
  long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx >= num_zones * kGroups * kMoments) return;
  int m = idx % kMoments;
  long zg = idx / kMoments;  // z * kGroups + g
  double sum = 0.0;
  for (int d = 0; d < kDirs; ++d) sum += ell[m * kDirs + d] * psi[zg * kDirs + d];
  phi[idx] = sum;
}

void launch_ltimes(const double* ell, const double* psi, double* phi, long num_zones) {
  const int block = 256;
  long total = num_zones * kGroups * kMoments;
  long grid = (total + block - 1) / block;
  ltimes_kernel<<<grid, block>>>(ell, psi, phi, num_zones);
}
