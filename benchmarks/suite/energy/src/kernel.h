#pragma once

// Device arrays of the energy update, n elements each.
struct EnergyArrays {
  const double* e_old;      // specific internal energy at the start of the step
  const double* delvc;      // relative volume change over the step
  const double* p_old;      // pressure at the start of the step
  const double* q_old;      // artificial viscosity at the start of the step
  const double* work;       // energy source (e.g. deposited work) over the step
  const double* comp_half;  // compression at the half step
  const double* comp_new;   // compression at the end of the step
  const double* ql;         // linear viscosity coefficient per element
  const double* qq;         // quadratic viscosity term per element
  double* p_half;           // scratch: predicted pressure
  double* q_half;           // scratch: predicted viscosity
  double* e_new;            // output energy (also holds the predicted energy)
  double* p_new;            // output pressure
  double* q_new;            // output viscosity
};

struct EnergyParams {
  double gamma;  // ideal-gas exponent: p = (gamma - 1) * rho * e
  double rho0;   // reference density: rho = rho0 * (1 + compression)
  double emin;   // energy floor
  double e_cut;  // |e| below this snaps to zero
  double q_cut;  // |q| below this snaps to zero
};

// Predictor-corrector update of energy, then pressure and viscosity, for n elements.
void launch_energy(EnergyArrays a, long n, EnergyParams prm);
