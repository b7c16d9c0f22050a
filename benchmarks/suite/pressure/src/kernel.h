#pragma once

// Equation-of-state constants shared by the kernel and the CPU reference.
struct PressureParams {
  double cls;      // pressure coefficient (2/3 for an ideal gas)
  double p_cut;    // |p| below this snaps to zero
  double pmin;     // pressure floor
  double eosvmax;  // relative volume at or above which the element carries no pressure
};

// p_new[i] = pressure of element i from its energy and compression, for n elements.
void launch_pressure(const double* compression, const double* e_old, const double* vnewc,
                     double* p_new, long n, PressureParams params);
