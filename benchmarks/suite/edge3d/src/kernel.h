#pragma once

// Structured n x n x n hexahedra over an (n+1)^3 lattice of nodes (x fastest); coords holds
// x, y, z per node. For each element, writes the 12 x 12 mass matrix of the lowest-order edge
// (Nedelec) basis, row-major, to mass[element * 144 ...], integrated with 2x2x2 Gauss points.
// Edges 0-3 run along reference x, 4-7 along y, 8-11 along z.
void launch_edge3d(const double* coords, double* mass, int n);
