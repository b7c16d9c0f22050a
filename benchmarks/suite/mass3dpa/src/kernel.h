#pragma once

// Q3 hexahedra: 4 nodal dofs and 5 quadrature points per direction.
constexpr int D1D = 4;
constexpr int Q1D = 5;
constexpr int DOFS = D1D * D1D * D1D;
constexpr int QPTS = Q1D * Q1D * Q1D;

// y[e] = B^T diag(op[e]) B x[e] for every element; x, y are element-local dof vectors.
// basis: [Q1D][D1D] 1D values; op: [elems][QPTS] (quadrature weight x detJ x coefficient).
void launch_mass3dpa(const double* basis, const double* op, const double* x, double* y,
                     int num_elems);
