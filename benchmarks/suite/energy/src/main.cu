// energy: predictor-corrector update of element internal energy under pdV work, followed by
// pressure (ideal-gas EOS) and artificial viscosity, as four kernels. See src/kernel.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "driver_apps.cuh"

namespace {

constexpr int kInputs = 9;  // e_old, delvc, p_old, q_old, work, comp_half, comp_new, ql, qq

// Lower bound and width of each input's uniform range; delvc straddles zero so both the
// compressing (viscous) and expanding branches run.
constexpr double kRange[kInputs][2] = {{0.1, 1.0},  {-0.05, 0.1}, {0.0, 1.0},
                                       {0.0, 0.1},  {0.0, 0.01},  {-0.1, 0.2},
                                       {-0.1, 0.2}, {0.0, 0.1},   {0.0, 0.01}};

std::vector<std::vector<double>> make_inputs(long n, uint64_t seed) {
  Rng rng{seed};
  std::vector<std::vector<double>> in(kInputs, std::vector<double>(n));
  for (long i = 0; i < n; ++i)
    for (int k = 0; k < kInputs; ++k) in[k][i] = kRange[k][0] + kRange[k][1] * rng.uniform();
  return in;
}

double eos_ref(double comp, double e, EnergyParams prm) {
  return std::fmax((prm.gamma - 1.0) * prm.rho0 * (comp + 1.0) * e, 0.0);
}

double visc_ref(double delvc, double comp, double p, double ql, double qq, EnergyParams prm) {
  if (delvc > 0.0) return 0.0;
  double ssc = std::sqrt(std::fmax(prm.gamma * p / (prm.rho0 * (comp + 1.0)), 1e-12));
  return ssc * ql + qq;
}

// Output layout: e_new | p_new | q_new, n each.
std::vector<double> reference(const std::vector<std::vector<double>>& in, EnergyParams prm) {
  const auto &e0 = in[0], &dv = in[1], &p0 = in[2], &q0 = in[3], &w = in[4];
  const size_t n = e0.size();
  std::vector<double> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    double e = std::fmax(e0[i] - dv[i] * (p0[i] + q0[i]) + w[i], prm.emin);
    double ph = eos_ref(in[5][i], e, prm);
    double qh = visc_ref(dv[i], in[5][i], ph, in[7][i], in[8][i], prm);
    e = e0[i] - 0.5 * dv[i] * (p0[i] + q0[i] + ph + qh) + w[i];
    if (std::fabs(e) < prm.e_cut) e = 0.0;
    e = std::fmax(e, prm.emin);
    double p = eos_ref(in[6][i], e, prm);
    double q = visc_ref(dv[i], in[6][i], p, in[7][i], in[8][i], prm);
    if (std::fabs(q) < prm.q_cut) q = 0.0;
    out[i] = e;
    out[n + i] = p;
    out[2 * n + i] = q;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt{1L << 22, 400, 12345};
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--size N] [--reps N] [--seed N]\n", argv[0]);
    return 2;
  }
  const long n = opt.size;
  const EnergyParams prm{5.0 / 3.0, 1.0, 0.0, 1e-7, 1e-7};
  std::vector<std::vector<double>> in = make_inputs(n, static_cast<uint64_t>(opt.seed));
  double* d_in[kInputs];
  for (int k = 0; k < kInputs; ++k) d_in[k] = to_device(in[k]);
  double* d_out[5];  // p_half, q_half, e_new, p_new, q_new
  for (double*& ptr : d_out) ptr = device_buffer<double>(n);
  EnergyArrays a{d_in[0],  d_in[1],  d_in[2],  d_in[3],  d_in[4],  d_in[5],  d_in[6], d_in[7],
                 d_in[8],  d_out[0], d_out[1], d_out[2], d_out[3], d_out[4]};

  float ms = time_reps(opt.reps, [&] { launch_energy(a, n, prm); });
  std::vector<double> got(3 * n);
  for (int k = 0; k < 3; ++k) copy_back(got, k * n, d_out[2 + k], n);
  for (double* ptr : d_in) CUDA_CHECK(cudaFree(ptr));
  for (double* ptr : d_out) CUDA_CHECK(cudaFree(ptr));

  // Outputs are O(0.01..1); a floor of 1e-3 judges clamped zeros absolutely. A handful of
  // double ops and one sqrt per value differ only by FMA contraction, so 1e-10 is generous.
  return report(ms, got, reference(in, prm), 1e-3, 1e-10);
}
