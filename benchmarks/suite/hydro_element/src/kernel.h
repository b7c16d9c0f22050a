#pragma once

// For each trilinear hexahedron e (8 node ids at elem_nodes[8 * e + 0..7], bottom face
// counter-clockwise, then the top face above it): vol[e] = its volume and
// bmat[24 * e + 8 * a + k] = d vol / d (coordinate a of local node k), a = x, y, z.
void launch_hydro_element(const double* x, const double* y, const double* z,
                          const int* elem_nodes, double* vol, double* bmat, long num_elems);
