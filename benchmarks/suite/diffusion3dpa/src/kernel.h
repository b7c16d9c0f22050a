#pragma once

// Q2 hexahedra: 3 nodal dofs and 4 quadrature points per direction.
constexpr int D1D = 3;
constexpr int Q1D = 4;
constexpr int DOFS = D1D * D1D * D1D;
constexpr int QPTS = Q1D * Q1D * Q1D;
// Symmetric 3x3 coefficient per quadrature point, stored xx, xy, xz, yy, yz, zz.
constexpr int SYM = 6;

// y[e] = sum_q Gq^T Dq Gq x[e] for every element; x, y are element-local dof vectors.
// basis, dbasis: [Q1D][D1D] 1D values and derivatives; op: [elems][QPTS][SYM].
void launch_diffusion3dpa(const double* basis, const double* dbasis, const double* op,
                          const double* x, double* y, int num_elems);
