#pragma once

constexpr int kDirs = 64;     // d: discrete directions
constexpr int kGroups = 32;   // g: energy groups
constexpr int kMoments = 25;  // m: angular moments

// phi(m, g, z) = sum over d of ell(m, d) * psi(d, g, z) for z < num_zones, with layouts
// ell[m * kDirs + d], psi[(z * kGroups + g) * kDirs + d], phi[(z * kGroups + g) * kMoments + m].
void launch_ltimes(const double* ell, const double* psi, double* phi, long num_zones);
