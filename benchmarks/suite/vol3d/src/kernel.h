#pragma once

// vol[e] = volume of trilinear hexahedron e, whose 8 node ids are elem_nodes[8 * e + 0..7]
// (bottom face counter-clockwise, then the top face above it); coordinates are x, y, z.
void launch_vol3d(const double* x, const double* y, const double* z, const int* elem_nodes,
                  double* vol, long num_elems);
