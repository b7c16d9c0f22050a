#pragma once

// Structured n x n x n zones; nodes form an (n+1)^3 lattice, x fastest.
// Every zone's value becomes 1/8 of the sum of its 8 corner node values.
void launch_zonal_accumulation(const double* node_vals, double* zone_vals, int n);
