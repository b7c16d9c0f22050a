#pragma once

// div[z] = divergence of the nodal vector field (xdot, ydot) over quad zone z, whose 4 node ids
// are zone_nodes[4 * z + 0..3] counter-clockwise; node coordinates are x, y. Zones with area
// at or below area_min get 0.
void launch_del_dot_vec_2d(const double* x, const double* y, const double* xdot,
                           const double* ydot, const int* zone_nodes, double* div,
                           long num_zones, double area_min);
