#include "kernel.h"

// @optimize begin energy_update
__device__ double eos_pressure(double comp, double e, EnergyParams prm) {
  return fmax((prm.gamma - 1.0) * prm.rho0 * (comp + 1.0) * e, 0.0);
}

// Viscosity only acts in compression; it scales with the local sound speed.
__device__ double viscosity(double delvc, double comp, double p, double ql, double qq,
                            EnergyParams prm) {
  if (delvc > 0.0) return 0.0;
  double rho = prm.rho0 * (comp + 1.0);
  double ssc = sqrt(fmax(prm.gamma * p / rho, 1e-12));
  return ssc * ql + qq;
}

// Euler predictor of de = -(p + q) dV + work.
__global__ void energy_predict(EnergyArrays a, long n, EnergyParams prm) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double e = a.e_old[i] - a.delvc[i] * (a.p_old[i] + a.q_old[i]) + a.work[i];
  a.e_new[i] = fmax(e, prm.emin);
}

__global__ void half_state(EnergyArrays a, long n, EnergyParams prm) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double p = eos_pressure(a.comp_half[i], a.e_new[i], prm);
  a.p_half[i] = p;
  a.q_half[i] = viscosity(a.delvc[i], a.comp_half[i], p, a.ql[i], a.qq[i], prm);
}

// Trapezoidal corrector using the old and predicted pressure and viscosity.
__global__ void energy_correct(EnergyArrays a, long n, EnergyParams prm) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double pq = a.p_old[i] + a.q_old[i] + a.p_half[i] + a.q_half[i];
  double e = a.e_old[i] - 0.5 * a.delvc[i] * pq + a.work[i];
  if (fabs(e) < prm.e_cut) e = 0.0;
  a.e_new[i] = fmax(e, prm.emin);
}

__global__ void final_state(EnergyArrays a, long n, EnergyParams prm) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double p = eos_pressure(a.comp_new[i], a.e_new[i], prm);
  double q = viscosity(a.delvc[i], a.comp_new[i], p, a.ql[i], a.qq[i], prm);
  if (fabs(q) < prm.q_cut) q = 0.0;
  a.p_new[i] = p;
  a.q_new[i] = q;
}

void launch_energy(EnergyArrays a, long n, EnergyParams prm) {
  const int block = 256;
  long grid = (n + block - 1) / block;
  energy_predict<<<grid, block>>>(a, n, prm);
  half_state<<<grid, block>>>(a, n, prm);
  energy_correct<<<grid, block>>>(a, n, prm);
  final_state<<<grid, block>>>(a, n, prm);
}
// @optimize end
