// rlkernels/physics/solver.hpp
// MuJoCo's constraint solvers for limits, frictionless contacts and the pyramidal cone
// (mj_fwdConstraint with its warm start), chosen by model::solver: the primal Newton solver, on
// each constraint island (mj_island) of a model with several kinematic trees
// (mj_solNewton: the convex cost 0.5 (a - a0)' M (a - a0) + sum over active rows 0.5 D (J a - aref)^2,
// Newton directions from H = M + J' D J by dense Cholesky, MuJoCo's exact line search and stopping
// rules) and the dual projected Gauss-Seidel solver (mj_solPGS: row by row on the forces with the
// matrix AR = J M^-1 J' + diag(R), Nesterov momentum and a shuffled row order).
#pragma once

#include <cstdint>

#include "../core/config.hpp"
#include "collision.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"
#include "smooth.hpp"

namespace rlkernels {
namespace physics {
namespace detail {

/// In-place dense Cholesky of the lower triangle of A (n x n, row stride N), as MuJoCo's
/// mju_cholFactor: a pivot below mindiag is replaced by mindiag and its column cleared.
/// Returns the rank (n unless pivots were replaced).
template <class S, int N>
RLK_INLINE int solver_cholesky(S (*A)[N], int n, S mindiag) {
  int rank = n;
  for (int j = 0; j < n; ++j) {
    S t = A[j][j];
    if (j) t -= mj_dot(A[j], A[j], j);
    const bool deficient = t < mindiag;
    if (deficient) {
      t = mindiag;
      --rank;
    }
    A[j][j] = std::sqrt(t);
    if (deficient) {
      for (int i = j + 1; i < n; ++i) A[i][j] = S(0);
    } else {
      const S inv = S(1) / A[j][j];
      for (int i = j + 1; i < n; ++i) A[i][j] = (A[i][j] - mj_dot(A[i], A[j], j)) * inv;
    }
  }
  return rank;
}

/// x = (L L')^-1 b with L the lower triangle of a factor from solver_cholesky (x may alias b).
template <class S, int N>
RLK_INLINE void solver_cholesky_solve(S* x, const S (*L)[N], const S* b, int n) {
  for (int i = 0; i < n; ++i) x[i] = b[i];
  for (int i = 0; i < n; ++i) {
    if (i) x[i] -= mj_dot(L[i], x, i);
    x[i] /= L[i][i];
  }
  for (int i = n - 1; i >= 0; --i) {
    S s = x[i];
    for (int k = i + 1; k < n; ++k) s -= L[k][i] * x[k];
    x[i] = s / L[i][i];
  }
}

template <class S> RLK_INLINE S dot_n(const S* a, const S* b, int n) { return mj_dot(a, b, n); }

/// The dofs and rows one Newton solve works on, in local order. whole_problem is all of them
/// (a single-tree model, or islands disabled): its maps are the identity and compile away.
template <int NV>
struct whole_problem {
  static constexpr int nv = NV;  ///< dofs
  int nefc;                      ///< rows
  static RLK_INLINE int dof(int k) { return k; }
  static RLK_INLINE int row(int k) { return k; }
};

/// One constraint island of a model with several kinematic trees (MuJoCo's mj_island): the dofs
/// of its trees and its rows, each in increasing order, as MuJoCo's map_idof2dof and
/// map_iefc2efc list them. A solve on it works on the island alone, with local indices.
template <int NV, int NEFC>
struct island_problem {
  int nv;          ///< dofs of the island
  int nefc;        ///< rows of the island
  int dofs[NV];    ///< local dof -> dof
  int rows[NEFC];  ///< local row -> row
  RLK_INLINE int dof(int k) const { return dofs[k]; }
  RLK_INLINE int row(int k) const { return rows[k]; }
};

/// The bound of a friction-loss row (its dof's dof_frictionloss; 0 for a model without them).
template <class Scalar, class Dims>
RLK_INLINE Scalar row_frictionloss(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, int r) {
  if constexpr (dims_frictionloss<Dims>) {
    return m.dof_frictionloss[d.efc_id[r]];
  } else {
    (void)m;
    (void)d;
    (void)r;
    return Scalar(0);
  }
}

/// Whether row r is a friction-loss row (they come first: rows 0 .. nf-1).
template <class Scalar, class Dims>
RLK_INLINE bool is_friction_row(const data<Scalar, Dims>& d, int r) {
  if constexpr (dims_frictionloss<Dims>) {
    return r < d.nf;
  } else {
    (void)d;
    (void)r;
    return false;
  }
}

/// Forces, states and constraint cost of the problem's rows at jar = J a - aref (local row order;
/// mj_constraintUpdate: an inequality row with jar < 0 is quadratic, force -D jar, otherwise
/// satisfied, no force; a friction-loss row with bound f has the Huber cost: quadratic while
/// |jar| < R f, else linear with force -/+ f).
template <class Scalar, class Dims, class P>
RLK_INLINE Scalar update_rows(const model<Scalar, Dims>& m, data<Scalar, Dims>& d, const P& p, const Scalar* jar) {
  Scalar cost = Scalar(0);
  for (int i = 0; i < p.nefc; ++i) {
    const int r = p.row(i);
    if (is_friction_row(d, r)) {
      const Scalar f = row_frictionloss(m, d, r);
      const Scalar R = d.efc_R[r];
      if (jar[i] <= -R * f) {
        cost += Scalar(-0.5) * R * f * f - f * jar[i];
        d.efc_force[r] = f;
        d.efc_state[r] = state_linear_neg;
      } else if (jar[i] >= R * f) {
        cost += Scalar(-0.5) * R * f * f + f * jar[i];
        d.efc_force[r] = -f;
        d.efc_state[r] = state_linear_pos;
      } else {
        d.efc_force[r] = -d.efc_D[r] * jar[i];
        cost += Scalar(0.5) * d.efc_D[r] * jar[i] * jar[i];
        d.efc_state[r] = state_quadratic;
      }
      continue;
    }
    if (jar[i] >= Scalar(0)) {
      d.efc_force[r] = Scalar(0);
      d.efc_state[r] = state_satisfied;
    } else {
      d.efc_force[r] = -d.efc_D[r] * jar[i];
      cost += Scalar(0.5) * d.efc_D[r] * jar[i] * jar[i];
      d.efc_state[r] = state_quadratic;
    }
  }
  return cost;
}

/// r = M v over the problem's dofs (M = d.qM, dense symmetric), in the order of MuJoCo's
/// mju_mulSymVecSparse over the lower triangle (the entries outside the tree's sparsity are
/// exact zeros and add nothing).
template <class Scalar, class Dims, class P>
RLK_INLINE void mul_M(const data<Scalar, Dims>& d, const P& p, Scalar* r, const Scalar* v) {
  for (int i = 0; i < p.nv; ++i) {
    const int di = p.dof(i);
    r[i] = d.qM[di][di] * v[i];
    for (int j = i - 1; j >= 0; --j) {
      const Scalar mij = d.qM[di][p.dof(j)];
      r[i] += mij * v[j];
      r[j] += mij * v[i];
    }
  }
}

/// r = J v over the problem's rows and dofs.
template <class Scalar, class Dims, class P>
RLK_INLINE void mul_J(const data<Scalar, Dims>& d, const P& p, Scalar* r, const Scalar* v) {
  for (int i = 0; i < p.nefc; ++i) {
    const Scalar* J = d.efc_J[p.row(i)];
    r[i] = mj_dot_by<Scalar>([J, &p](int k) { return J[p.dof(k)]; }, v, p.nv);
  }
}

/// One point of the line search: step alpha, cost change from alpha = 0, first and second derivative.
template <class S>
struct ls_point {
  S alpha;
  S cost;
  S deriv[2];
};

/// The state of one Newton solve (one island), in the problem's local order.
template <class Scalar, class Dims>
struct newton_context {
  static constexpr int nv = Dims::nv;
  static constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  Scalar Ma[nv];              // M qacc
  Scalar Jaref[nefc_];        // J qacc - aref
  Scalar grad[nv];            // M qacc - qfrc_smooth - qfrc_constraint
  Scalar Mgrad[nv];           // H^-1 grad (or M^-1 grad for the certificate)
  Scalar search[nv];          // search direction
  Scalar Mv[nv];              // M search
  Scalar Jv[nefc_];           // J search
  Scalar quad[nefc_][3];      // per-row quadratic in alpha: 0.5 D Jaref^2, D Jaref Jv, 0.5 D Jv^2
  Scalar quadGauss[3];        // the Gauss term's quadratic
  Scalar L[nv][nv];           // Cholesky factor of H
  Scalar cost;
  Scalar scale;               // 1 / (island inertia), or 1 / (meaninertia * nv) without islands
  int ls_iter;
};

/// Cost, forces, qfrc_constraint at the context's qacc (PrimalUpdateConstraint).
template <class Scalar, class Dims, class P>
RLK_INLINE void newton_update_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d, const P& p,
                                         newton_context<Scalar, Dims>& c) {
  c.cost = update_rows(m, d, p, c.Jaref);
  // J' force row by row, skipping rows without force (as MuJoCo's mju_mulMatTVec): each entry
  // still sums its terms in row order from +0, and a zero term never changes such a sum
  for (int j = 0; j < p.nv; ++j) d.qfrc_constraint[p.dof(j)] = Scalar(0);
  for (int i = 0; i < p.nefc; ++i) {
    const int r = p.row(i);
    const Scalar f = d.efc_force[r];
    if (f == Scalar(0)) continue;
    for (int j = 0; j < p.nv; ++j) d.qfrc_constraint[p.dof(j)] += d.efc_J[r][p.dof(j)] * f;
  }
  Scalar gauss = Scalar(0);
  for (int i = 0; i < p.nv; ++i) {
    const int v = p.dof(i);
    gauss += Scalar(0.5) * (c.Ma[i] - d.qfrc_smooth[v]) * (d.qacc[v] - d.qacc_smooth[v]);
  }
  c.quadGauss[0] = gauss;
  c.cost += gauss;
}

/// H = J' D J + M over the quadratic rows, factorized into c.L.
template <class Scalar, class Dims, class P>
RLK_INLINE void newton_factor_hessian(const data<Scalar, Dims>& d, const P& p, newton_context<Scalar, Dims>& c) {
  const int nv = p.nv;
  // J' D J over the quadratic rows, row by row (each entry sums its terms in row order from +0;
  // rows whose (J_ri D_r) is zero add nothing), then M
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nv; ++j) c.L[i][j] = Scalar(0);
  for (int k = 0; k < p.nefc; ++k) {
    const int r = p.row(k);
    if (d.efc_state[r] != state_quadratic) continue;
    const Scalar* J = d.efc_J[r];
    const Scalar D = d.efc_D[r];
    for (int i = 0; i < nv; ++i) {
      const Scalar t = J[p.dof(i)] * D;
      if (t == Scalar(0)) continue;
      for (int j = 0; j <= i; ++j) c.L[i][j] += t * J[p.dof(j)];
    }
  }
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j <= i; ++j) c.L[i][j] += d.qM[p.dof(i)][p.dof(j)];
  solver_cholesky(c.L, nv, min_value<Scalar>());
}

/// Rank-1 update (plus) or downdate of the factor L L' by x x' (MuJoCo's mju_cholUpdate; x is
/// overwritten). Returns the rank (n unless a pivot fell below mjMINVAL and was clamped).
template <class S, int N>
RLK_INLINE int solver_cholesky_update(S (*L)[N], S* x, int n, bool plus) {
  int rank = n;
  for (int k = 0; k < n; ++k) {
    if (x[k] == S(0)) continue;
    const S lkk = L[k][k];
    S t = lkk * lkk + (plus ? x[k] * x[k] : -x[k] * x[k]);
    if (t < min_value<S>()) {
      t = min_value<S>();
      --rank;
    }
    const S r = std::sqrt(t);
    const S c = r / lkk;
    const S cinv = S(1) / c;
    const S sk = x[k] / lkk;
    L[k][k] = r;
    for (int i = k + 1; i < n; ++i) L[i][k] = plus ? (L[i][k] + sk * x[i]) * cinv : (L[i][k] - sk * x[i]) * cinv;
    for (int i = k + 1; i < n; ++i) x[i] = c * x[i] - sk * L[i][k];
  }
  return rank;
}

/// After a change of row states: update the factor row by row, as MuJoCo's HessianIncremental
/// (a row turning quadratic adds sqrt(D) J_i, one leaving subtracts it), refactorising H from
/// scratch if an update loses rank.
template <class Scalar, class Dims, class P>
RLK_INLINE void newton_update_hessian(const data<Scalar, Dims>& d, const P& p, newton_context<Scalar, Dims>& c,
                                      const int* oldstate) {
  for (int i = 0; i < p.nefc; ++i) {
    const int r = p.row(i);
    const bool now = d.efc_state[r] == state_quadratic, before = oldstate[i] == state_quadratic;
    if (now == before) continue;
    Scalar x[Dims::nv];
    const Scalar sd = std::sqrt(d.efc_D[r]);
    for (int k = 0; k < p.nv; ++k) x[k] = d.efc_J[r][p.dof(k)] * sd;
    if (solver_cholesky_update(c.L, x, p.nv, now) < p.nv) {
      newton_factor_hessian(d, p, c);
      return;
    }
  }
}

/// The Huber cost of a friction-loss row at x (frictionCost): quadratic inside (-Rf, Rf), linear outside.
template <class S>
RLK_INLINE S friction_cost(S x, S f, S Rf, S D) {
  if (-Rf < x && x < Rf) return S(0.5) * D * x * x;
  if (x <= -Rf) return f * (S(-0.5) * Rf - x);
  return f * (S(-0.5) * Rf + x);
}

/// cost(x) - cost(start) of a friction-loss row (frictionCostDif: within one zone in closed form).
template <class S>
RLK_INLINE S friction_cost_dif(S start, S x, S f, S Rf, S D) {
  const int zs = (-Rf < start && start < Rf) ? 0 : (start <= -Rf ? -1 : 1);
  const int zx = (-Rf < x && x < Rf) ? 0 : (x <= -Rf ? -1 : 1);
  if (zs == 0 && zx == 0) return S(0.5) * D * (x - start) * (x + start);
  if (zs == -1 && zx == -1) return f * (start - x);
  if (zs == 1 && zx == 1) return f * (x - start);
  return friction_cost(x, f, Rf, D) - friction_cost(start, f, Rf, D);
}

/// Cost change and derivatives at alpha along the search direction (PrimalEval: friction-loss
/// and inequality rows).
template <class Scalar, class Dims, class P>
RLK_INLINE void newton_eval(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, const P& p,
                            newton_context<Scalar, Dims>& c, ls_point<Scalar>& pt) {
  const Scalar alpha = pt.alpha;
  Scalar cost = Scalar(0);
  Scalar deriv0 = Scalar(0), deriv1 = Scalar(0);
  Scalar q0 = Scalar(0), q1 = c.quadGauss[1], q2 = c.quadGauss[2];
  for (int i = 0; i < p.nefc; ++i) {
    const Scalar start = c.Jaref[i];
    if constexpr (dims_frictionloss<Dims>) {
      const int r = p.row(i);
      if (is_friction_row(d, r)) {
        const Scalar dir = c.Jv[i];
        const Scalar x = start + alpha * dir;
        const Scalar f = row_frictionloss(m, d, r);
        const Scalar D = d.efc_D[r];
        const Scalar Rf = d.efc_R[r] * f;
        cost += friction_cost_dif(start, x, f, Rf, D);
        if (-Rf < x && x < Rf) {
          deriv0 += D * x * dir;
          deriv1 += D * dir * dir;
        } else if (x <= -Rf) {
          deriv0 += -f * dir;
        } else {
          deriv0 += f * dir;
        }
        continue;
      }
    }
    const Scalar x = start + alpha * c.Jv[i];
    const Scalar cost0 = start < Scalar(0) ? c.quad[i][0] : Scalar(0);
    if (x < Scalar(0)) {
      q0 += c.quad[i][0] - cost0;
      q1 += c.quad[i][1];
      q2 += c.quad[i][2];
    } else {
      cost -= cost0;
    }
  }
  cost += alpha * alpha * q2 + alpha * q1 + q0;
  pt.cost = cost;
  pt.deriv[0] = deriv0 + (Scalar(2) * alpha * q2 + q1);
  pt.deriv[1] = deriv1 + Scalar(2) * q2;
  if (pt.deriv[1] <= Scalar(0)) pt.deriv[1] = min_value<Scalar>();  // not convex: cannot happen with M > 0
  ++c.ls_iter;
}

/// Replaces pt by a candidate closer to the minimum on its side (same derivative sign, smaller
/// magnitude) and, if it moved, evaluates its Newton point into next (MuJoCo's updateBracket).
template <class Scalar, class Dims, class P>
RLK_INLINE int newton_update_bracket(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, const P& p,
                                     newton_context<Scalar, Dims>& c, ls_point<Scalar>& pt,
                                     const ls_point<Scalar>* cand, ls_point<Scalar>& next) {
  int flag = 0;
  for (int i = 0; i < 3; ++i) {
    if (pt.deriv[0] < Scalar(0) && cand[i].deriv[0] < Scalar(0) && pt.deriv[0] < cand[i].deriv[0]) {
      pt = cand[i];
      flag = 1;
    } else if (pt.deriv[0] > Scalar(0) && cand[i].deriv[0] > Scalar(0) && pt.deriv[0] > cand[i].deriv[0]) {
      pt = cand[i];
      flag = 2;
    }
  }
  if (flag) {
    next.alpha = pt.alpha - pt.deriv[0] / pt.deriv[1];
    newton_eval(m, d, p, c, next);
  }
  return flag;
}

/// MuJoCo's exact line search on the piecewise-quadratic 1-D cost (PrimalSearch): a Newton step,
/// one-sided Newton steps until the derivative changes sign, then bracketing with midpoints.
/// Returns the step (0: no improvement) and the cost decrease in improvement.
template <class Scalar, class Dims, class P>
RLK_INLINE Scalar newton_line_search(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, const P& p,
                                     newton_context<Scalar, Dims>& c,
                                     Scalar tolerance, int ls_iterations, Scalar& improvement) {
  const int nv = p.nv;
  c.ls_iter = 0;
  improvement = Scalar(0);
  const Scalar snorm = std::sqrt(dot_n(c.search, c.search, nv));
  if (snorm < min_value<Scalar>()) return Scalar(0);
  const Scalar gtol = tolerance * snorm / c.scale;
  mul_M(d, p, c.Mv, c.search);
  mul_J(d, p, c.Jv, c.search);
  // quadratics (PrimalPrepare)
  c.quadGauss[1] = dot_n(c.search, c.Ma, nv) -
                   mj_dot_by<Scalar>([&d, &p](int k) { return d.qfrc_smooth[p.dof(k)]; }, c.search, nv);
  c.quadGauss[2] = Scalar(0.5) * dot_n(c.search, c.Mv, nv);
  for (int i = 0; i < p.nefc; ++i) {
    const Scalar D = d.efc_D[p.row(i)];
    const Scalar dj = D * c.Jaref[i];
    c.quad[i][0] = Scalar(0.5) * (c.Jaref[i] * dj);
    c.quad[i][1] = c.Jv[i] * dj;
    c.quad[i][2] = Scalar(0.5) * (c.Jv[i] * D * c.Jv[i]);
  }
  ls_point<Scalar> p0, p1, p2, pmid, p1next, p2next;
  p0.alpha = Scalar(0);
  newton_eval(m, d, p, c, p0);
  p1.alpha = p0.alpha - p0.deriv[0] / p0.deriv[1];
  newton_eval(m, d, p, c, p1);
  if (std::fabs(p1.deriv[0]) < gtol && (p1.alpha == Scalar(0) || p1.cost < Scalar(0))) {
    improvement = -p1.cost;
    return p1.alpha;
  }
  const Scalar dir = p1.deriv[0] < Scalar(0) ? Scalar(1) : Scalar(-1);
  // one-sided search
  p2 = p0;
  while (p1.deriv[0] * dir <= -gtol && c.ls_iter < ls_iterations) {
    p2 = p1;
    p1.alpha -= p1.deriv[0] / p1.deriv[1];
    newton_eval(m, d, p, c, p1);
    if (std::fabs(p1.deriv[0]) < gtol && p1.cost < Scalar(0)) {
      improvement = -p1.cost;
      return p1.alpha;
    }
  }
  if (c.ls_iter >= ls_iterations) {  // could not bracket
    improvement = -p1.cost;
    return p1.alpha;
  }
  // bracketed search between p1 and p2
  p2next = p1;
  p1next.alpha = p1.alpha - p1.deriv[0] / p1.deriv[1];
  newton_eval(m, d, p, c, p1next);
  while (c.ls_iter < ls_iterations) {
    pmid.alpha = Scalar(0.5) * (p1.alpha + p2.alpha);
    newton_eval(m, d, p, c, pmid);
    const ls_point<Scalar> cand[3] = {p1next, p2next, pmid};
    Scalar best = Scalar(0);
    int besti = -1;
    for (int i = 0; i < 3; ++i) {
      if (std::fabs(cand[i].deriv[0]) < gtol && (besti == -1 || cand[i].cost < best)) {
        best = cand[i].cost;
        besti = i;
      }
    }
    if (besti >= 0) {
      improvement = -cand[besti].cost;
      return cand[besti].alpha;
    }
    const int b1 = newton_update_bracket(m, d, p, c, p1, cand, p1next);
    const int b2 = newton_update_bracket(m, d, p, c, p2, cand, p2next);
    if (!b1 && !b2) {  // no progress possible at this precision: the midpoint
      improvement = -pmid.cost;
      return pmid.alpha;
    }
  }
  if (p1.cost <= p2.cost && p1.cost < Scalar(0)) {
    improvement = -p1.cost;
    return p1.alpha;
  }
  if (p2.cost <= p1.cost && p2.cost < Scalar(0)) {
    improvement = -p2.cost;
    return p2.alpha;
  }
  return Scalar(0);
}

/// out = M^-1 v over the problem's dofs with MuJoCo's factor (mj_solveLD; out may alias v). On an
/// island the other trees' entries are zero: the tree-structured solve never mixes trees, so the
/// island's entries come out as MuJoCo's island-local solve makes them.
template <class Scalar, class Dims>
RLK_INLINE void newton_solve_M(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d,
                               const whole_problem<Dims::nv>&, Scalar* out, const Scalar* v) {
  for (int i = 0; i < Dims::nv; ++i) out[i] = v[i];
  solve_inertia(m, d, out);
}
template <class Scalar, class Dims, int NEFC>
RLK_INLINE void newton_solve_M(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d,
                               const island_problem<Dims::nv, NEFC>& p, Scalar* out, const Scalar* v) {
  Scalar x[Dims::nv];
  for (int i = 0; i < Dims::nv; ++i) x[i] = Scalar(0);
  for (int i = 0; i < p.nv; ++i) x[p.dof(i)] = v[i];
  solve_inertia(m, d, x);
  for (int i = 0; i < p.nv; ++i) out[i] = x[p.dof(i)];
}

/// mj_solNewton on one problem (a whole single-tree model or one island), from d.qacc as the
/// warm start left it: writes the problem's entries of d.qacc, d.qfrc_constraint and its rows'
/// efc_force and efc_state; returns the Newton steps taken and adds the line-search evaluations
/// to d.solver_neval. island_scale: the tolerances are scaled by 1 / the trace of the problem's M
/// (MuJoCo's island solver), else by 1 / (meaninertia * nv) (islands disabled).
template <class Scalar, class Dims, class P>
RLK_INLINE int newton_iterate(const model<Scalar, Dims>& m, data<Scalar, Dims>& d, const P& p, bool island_scale) {
  constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  const int nv = p.nv;
  newton_context<Scalar, Dims> c;
  const Scalar tol = m.tolerance;
  for (int i = 0; i < nv; ++i) c.search[i] = d.qacc[p.dof(i)];  // local copy of qacc (search is free yet)
  mul_M(d, p, c.Ma, c.search);
  mul_J(d, p, c.Jaref, c.search);
  for (int i = 0; i < p.nefc; ++i) c.Jaref[i] -= d.efc_aref[p.row(i)];
  newton_update_constraint(m, d, p, c);
  for (int i = 0; i < nv; ++i) {
    const int v = p.dof(i);
    c.grad[i] = c.Ma[i] - d.qfrc_smooth[v] - d.qfrc_constraint[v];
  }
  if (island_scale) {
    Scalar trace = Scalar(0);
    for (int i = 0; i < nv; ++i) trace += d.qM[p.dof(i)][p.dof(i)];
    c.scale = Scalar(1) / trace;
  } else {
    c.scale = Scalar(1) / (m.meaninertia * Scalar(Dims::nv > 1 ? Dims::nv : 1));
  }
  // zero-iteration exit, certified by the duality gap 0.5 grad' M^-1 grad and the gradient
  newton_solve_M(m, d, p, c.Mgrad, c.grad);  // MuJoCo's L^T D L solve (mj_solveLD)
  const Scalar gap = Scalar(0.5) * c.scale * dot_n(c.grad, c.Mgrad, nv);
  const bool small_gradient = c.scale * std::sqrt(dot_n(c.grad, c.grad, nv)) < tol;
  // mju_max(0, x) as MuJoCo writes it (0 >= x ? 0 : x): a NaN stays NaN and never counts as converged
  bool done = (Scalar(0) >= gap ? Scalar(0) : gap) < tol && small_gradient;
  if (!done) {
    newton_factor_hessian(d, p, c);
    solver_cholesky_solve(c.Mgrad, c.L, c.grad, nv);
    const Scalar dec = Scalar(0.5) * c.scale * dot_n(c.grad, c.Mgrad, nv);
    done = small_gradient && (Scalar(0) >= dec ? Scalar(0) : dec) < tol;
  }
  if (!done)
    for (int i = 0; i < nv; ++i) c.search[i] = -c.Mgrad[i];
  // The line search stops when the directional derivative is within tolerance * ls_tolerance
  // (1e-10 in the Gymnasium models) of the gradient's scale. Float rounds that derivative at
  // about 1e-7 relative, so it would run to ls_iterations in most Newton steps (45-60 evaluations
  // per step on random Hopper/Walker2d rollouts instead of double's 2.5-4). In float its
  // tolerance is floored at 128 epsilons, 2^-16 (then 2.6-4.4 evaluations, as double); double
  // keeps MuJoCo's setting exactly (tight solves go far below any such floor).
  const Scalar ls_floor = sizeof(Scalar) == 4 ? Scalar(0x1p-16) : Scalar(0);
  const Scalar ls_tol = tol * m.ls_tolerance > ls_floor ? tol * m.ls_tolerance : ls_floor;
  int iter = 0;
  int oldstate[nefc_];
  while (!done && iter < m.iterations) {
    Scalar ls_improvement;
    const Scalar alpha = newton_line_search(m, d, p, c, ls_tol, m.ls_iterations, ls_improvement);
    if (alpha == Scalar(0)) break;
    d.solver_neval += c.ls_iter;
    for (int i = 0; i < nv; ++i) {
      d.qacc[p.dof(i)] += alpha * c.search[i];
      c.Ma[i] += alpha * c.Mv[i];
    }
    for (int i = 0; i < p.nefc; ++i) c.Jaref[i] += alpha * c.Jv[i];
    for (int i = 0; i < p.nefc; ++i) oldstate[i] = d.efc_state[p.row(i)];
    newton_update_constraint(m, d, p, c);
    newton_update_hessian(d, p, c, oldstate);
    for (int i = 0; i < nv; ++i) {
      const int v = p.dof(i);
      c.grad[i] = c.Ma[i] - d.qfrc_smooth[v] - d.qfrc_constraint[v];
    }
    solver_cholesky_solve(c.Mgrad, c.L, c.grad, nv);
    const Scalar improvement = c.scale * ls_improvement;
    const Scalar gradient = c.scale * std::sqrt(dot_n(c.grad, c.grad, nv));
    const Scalar dec_raw = Scalar(0.5) * c.scale * dot_n(c.grad, c.Mgrad, nv);
    const Scalar decrement = Scalar(0) >= dec_raw ? Scalar(0) : dec_raw;
    ++iter;
    if ((improvement > Scalar(0) && improvement < tol) || gradient < tol || decrement < tol) break;
    for (int i = 0; i < nv; ++i) c.search[i] = -c.Mgrad[i];
  }
  return iter;
}

/// Splits the rows into constraint islands as MuJoCo's mj_island does (union of the trees each
/// row touches: a limit its joint's tree, a contact the trees of its two bodies, a static body
/// none) and solves each island on its own; the dofs of trees without rows keep qacc_smooth.
/// Islands share no dof and no row, so their order does not matter.
template <class Scalar, class Dims>
RLK_INLINE void newton_islands(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  constexpr int ntree = dims_ntree<Dims>;
  constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  int parent[ntree];  // union-find over the trees; -1: no row touches the tree
  for (int t = 0; t < ntree; ++t) parent[t] = -1;
  auto root = [&parent](int t) {
    while (parent[t] != t) t = parent[t];
    return t;
  };
  int efc_tree[nefc_];
  for (int r = 0; r < d.nefc; ++r) {
    int t1, t2;
    if (d.efc_type[r] == static_cast<int>(constraint_type::limit_joint)) {
      t1 = t2 = m.dof_treeid[m.jnt_dofadr[d.efc_id[r]]];
    } else if (d.efc_type[r] == static_cast<int>(constraint_type::friction_dof)) {
      t1 = t2 = m.dof_treeid[d.efc_id[r]];
    } else {  // a contact
      const contact<Scalar>& con = d.con[d.efc_id[r]];
      t1 = m.body_treeid[m.geom_bodyid[con.geom1]];
      t2 = m.body_treeid[m.geom_bodyid[con.geom2]];
      if (t1 < 0) t1 = t2;
      if (t2 < 0) t2 = t1;
    }
    efc_tree[r] = t1;
    if (t1 < 0) continue;  // two static bodies: cannot occur (the generator's pairs exclude them)
    if (parent[t1] < 0) parent[t1] = t1;
    if (parent[t2] < 0) parent[t2] = t2;
    const int r1 = root(t1), r2 = root(t2);
    if (r1 < r2) parent[r2] = r1;
    else if (r2 < r1) parent[r1] = r2;
  }
  for (int v = 0; v < Dims::nv; ++v)
    if (parent[m.dof_treeid[v]] < 0) d.qacc[v] = d.qacc_smooth[v];
  int niter = 0;
  for (int t = 0; t < ntree; ++t) {
    if (parent[t] != t) continue;  // not an island's root
    island_problem<Dims::nv, nefc_> p;
    p.nv = 0;
    p.nefc = 0;
    for (int v = 0; v < Dims::nv; ++v) {
      const int tv = m.dof_treeid[v];
      if (parent[tv] >= 0 && root(tv) == t) p.dofs[p.nv++] = v;
    }
    for (int r = 0; r < d.nefc; ++r)
      if (efc_tree[r] >= 0 && root(efc_tree[r]) == t) p.rows[p.nefc++] = r;
    niter += newton_iterate(m, d, p, true);
  }
  d.solver_niter = niter;
}

/// The Newton solve of solve_constraint (rows present): the warm start over all rows and dofs,
/// then mj_solNewton on the whole model (one tree, or islands disabled) or on each island.
template <class Scalar, class Dims>
RLK_HOST_DEVICE RLK_DEVICE_NOINLINE void newton_solve(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  constexpr int nv = Dims::nv;
  constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  const int nefc = d.nefc;
  const whole_problem<nv> whole{nefc};
  // ---- warm start: the better of qacc_warmstart and qacc_smooth ----
  if (!(m.disableflags & disable_warmstart)) {
    Scalar jar[nefc_];
    Scalar Ma[nv];
    mul_J(d, whole, jar, d.qacc_warmstart);
    for (int i = 0; i < nefc; ++i) jar[i] -= d.efc_aref[i];
    Scalar cost_warm = update_rows(m, d, whole, jar);
    mul_M(d, whole, Ma, d.qacc_warmstart);
    for (int i = 0; i < nv; ++i)
      cost_warm += Scalar(0.5) * (Ma[i] - d.qfrc_smooth[i]) * (d.qacc_warmstart[i] - d.qacc_smooth[i]);
    mul_J(d, whole, jar, d.qacc_smooth);
    for (int i = 0; i < nefc; ++i) jar[i] -= d.efc_aref[i];
    const Scalar cost_smooth = update_rows(m, d, whole, jar);
    const Scalar* start = cost_warm > cost_smooth ? d.qacc_smooth : d.qacc_warmstart;
    for (int i = 0; i < nv; ++i) d.qacc[i] = start[i];
  } else {
    for (int i = 0; i < nv; ++i) d.qacc[i] = d.qacc_smooth[i];
  }
  // ---- Newton ----
  const bool islands = !(m.disableflags & disable_island);
  if constexpr (dims_ntree<Dims> > 1) {
    if (islands) {
      newton_islands(m, d);
      return;
    }
  }
  d.solver_niter = newton_iterate(m, d, whole, islands);
}

// ---- PGS ----

/// MuJoCo's PCG32 generator for PGS's row order (the XSH-RR output of the state before the step).
struct pcg32 {
  std::uint64_t state;
  std::uint64_t inc;
  RLK_INLINE std::uint32_t next() {
    const std::uint64_t old = state;
    state = old * 6364136223846793005ULL + (inc | 1u);
    const std::uint32_t xorshifted = static_cast<std::uint32_t>(((old >> 18u) ^ old) >> 27u);
    const std::uint32_t rot = static_cast<std::uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
  }
};

/// The state of one PGS solve. AR, symmetric, keeps its lower triangle only, row by row:
/// nefc (nefc + 1) / 2 scalars for the model's nefc row capacity (3.3 KB in float for Humanoid's
/// 40), on the stack of the solving thread for the duration of the solve.
template <class Scalar, class Dims>
struct pgs_context {
  static constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  Scalar AR[nefc_ * (nefc_ + 1) / 2];  // J M^-1 J' + diag(R) (MuJoCo's efc_AR), lower triangle packed by rows
  Scalar ARinv[nefc_];           // 1 / diag(AR)
  Scalar b[nefc_];               // J qacc_smooth - aref (MuJoCo's efc_b)
  Scalar force_prev[nefc_];      // the forces before the last momentum step
  Scalar force_momentum[nefc_];  // the forces after it (the sweep's start)
  int order[nefc_];              // the order of the sweep, reshuffled in place every iteration

  /// Entry (i, k) of AR (either triangle).
  RLK_INLINE Scalar ar(int i, int k) const { return i >= k ? AR[i * (i + 1) / 2 + k] : AR[k * (k + 1) / 2 + i]; }
  /// Row i of AR times f over n entries, in MuJoCo's mju_dot order (as mj_dot on the dense row).
  RLK_INLINE Scalar row_dot(int i, const Scalar* f, int n) const {
    return mj_dot_by<Scalar>([this, i](int k) { return ar(i, k); }, f, n);
  }
};

/// AR = Y Y' + diag(R) with Y = J L^-T D^-1/2 from MuJoCo's factor M = L' D L (mj_makeY's dense
/// mj_solveM2, then mj_makeAR's mju_sqrMatTD: the lower triangle summed over dofs in increasing
/// order, zero terms skipped, then mirrored).
template <class Scalar, class Dims>
RLK_INLINE void pgs_make_AR(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, pgs_context<Scalar, Dims>& c) {
  constexpr int nv = Dims::nv;
  constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  const int nefc = d.nefc;
  Scalar Y[nefc_][nv];
  for (int r = 0; r < nefc; ++r)
    for (int j = 0; j < nv; ++j) Y[r][j] = d.efc_J[r][j];
  // Y <- Y L^-T: dof i (deepest first) pushes its entry to its ancestors; simple dofs have none
  for (int i = nv - 1; i > 0; --i) {
    if (m.dof_simplenum[i]) continue;
    for (int r = 0; r < nefc; ++r) {
      const Scalar yi = Y[r][i];
      if (yi == Scalar(0)) continue;
      for (int a = m.dof_parentid[i]; a >= 0; a = m.dof_parentid[a]) Y[r][a] -= d.qLDL[i][a] * yi;
    }
  }
  for (int i = 0; i < nv; ++i) {
    const Scalar s = Scalar(1) / std::sqrt(d.qLDL[i][i]);
    for (int r = 0; r < nefc; ++r) Y[r][i] *= s;
  }
  for (int i = 0; i < nefc; ++i) {
    Scalar* row = c.AR + i * (i + 1) / 2;
    for (int k = 0; k <= i; ++k) row[k] = Scalar(0);
    for (int j = 0; j < nv; ++j) {
      const Scalar t = Y[i][j];
      if (t == Scalar(0)) continue;
      for (int k = 0; k <= i; ++k) row[k] += Y[k][j] * t;
    }
    row[i] += d.efc_R[i];
  }
}

/// efc_state as the dual solver sets it (dualState): an inequality row with positive force is
/// active (quadratic); a friction-loss row at its bound -f is linear positive, at +f linear
/// negative (the primal's opposites), else quadratic.
template <class Scalar, class Dims>
RLK_INLINE void pgs_state(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  for (int i = 0; i < d.nefc; ++i) {
    if (is_friction_row(d, i)) {
      const Scalar f = row_frictionloss(m, d, i);
      d.efc_state[i] = d.efc_force[i] <= -f ? state_linear_pos : d.efc_force[i] >= f ? state_linear_neg : state_quadratic;
      continue;
    }
    d.efc_state[i] = d.efc_force[i] <= Scalar(0) ? state_satisfied : state_quadratic;
  }
}

/// Projects row i's force onto its bounds: [-f, f] for a friction-loss row, [0, inf) otherwise.
template <class Scalar, class Dims>
RLK_INLINE void pgs_project(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, Scalar& force, int i) {
  if (is_friction_row(d, i)) {
    const Scalar f = row_frictionloss(m, d, i);
    if (force < -f) force = -f;
    else if (force > f) force = f;
    return;
  }
  if (force < Scalar(0)) force = Scalar(0);
}

/// The PGS solve of solve_constraint (rows present): MuJoCo's dual warm start, mj_solPGS, and
/// qfrc_constraint = J' f, qacc = qacc_smooth + M^-1 qfrc_constraint (mj_dualFinish).
template <class Scalar, class Dims>
RLK_HOST_DEVICE RLK_DEVICE_NOINLINE void pgs_solve(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  constexpr int nv = Dims::nv;
  constexpr int nefc_ = data<Scalar, Dims>::nefc_;
  const int nefc = d.nefc;
  pgs_context<Scalar, Dims> c;
  pgs_make_AR(m, d, c);
  mul_J(d, whole_problem<nv>{nefc}, c.b, d.qacc_smooth);
  for (int i = 0; i < nefc; ++i) c.b[i] -= d.efc_aref[i];
  // ---- warm start: the primal forces at qacc_warmstart, unless the dual cost
  // f'b + 0.5 f' AR f says no force at all is better ----
  if (!(m.disableflags & disable_warmstart)) {
    Scalar tmp[nefc_];
    mul_J(d, whole_problem<nv>{nefc}, tmp, d.qacc_warmstart);
    for (int i = 0; i < nefc; ++i) tmp[i] -= d.efc_aref[i];
    update_rows(m, d, whole_problem<nv>{nefc}, tmp);
    Scalar cost = mj_dot(d.efc_force, c.b, nefc);
    for (int i = 0; i < nefc; ++i) tmp[i] = c.row_dot(i, d.efc_force, nefc);
    cost += Scalar(0.5) * mj_dot(d.efc_force, tmp, nefc);
    if (cost > Scalar(0))
      for (int i = 0; i < nefc; ++i) d.efc_force[i] = Scalar(0);
  } else {
    for (int i = 0; i < nefc; ++i) d.efc_force[i] = Scalar(0);
  }
  // ---- mj_solPGS: every row is its own block (no elliptic cones); each update is clamped to
  // [-f, f] (friction loss) or at 0 (inequality) ----
  Scalar* f = d.efc_force;
  const Scalar scale = Scalar(1) / (m.meaninertia * Scalar(nv > 1 ? nv : 1));  // no island scale in PGS
  for (int i = 0; i < nefc; ++i) {
    c.ARinv[i] = Scalar(1) / c.ar(i, i);
    c.force_prev[i] = f[i];
    c.order[i] = i;
  }
  // the same generator for every solve: state 0, increment 1, one draw discarded
  pcg32 rng{0u, 1u};
  rng.next();
  int iter = 0;
  int k = 0;  // momentum counter, reset to 0 on a restart
  while (iter < m.iterations) {
    // Nesterov extrapolation f += beta (f - f_prev), projected back onto the bounds
    const Scalar beta = iter > 0 ? Scalar(k - 1) / Scalar(k + 2) : Scalar(0);
    if (beta > Scalar(0)) {
      for (int i = 0; i < nefc; ++i) {
        const Scalar before = f[i];
        f[i] += beta * (f[i] - c.force_prev[i]);
        c.force_prev[i] = before;
      }
      for (int i = 0; i < nefc; ++i) pgs_project(m, d, f[i], i);
    } else {
      for (int i = 0; i < nefc; ++i) c.force_prev[i] = f[i];
    }
    for (int i = 0; i < nefc; ++i) c.force_momentum[i] = f[i];
    // Fisher-Yates on the previous order (the shuffles compound across iterations)
    for (int i = nefc - 1; i > 0; --i) {
      const int j = static_cast<int>(rng.next() % static_cast<std::uint32_t>(i + 1));
      const int t = c.order[i];
      c.order[i] = c.order[j];
      c.order[j] = t;
    }
    Scalar improvement = Scalar(0);
    for (int s = 0; s < nefc; ++s) {
      const int i = c.order[s];
      const Scalar res = c.b[i] + c.row_dot(i, f, nefc);
      const Scalar old = f[i];
      f[i] -= res * c.ARinv[i];
      pgs_project(m, d, f[i], i);
      // the cost change, with the diagonal as 1 / ARinv (not AR's own entry, for MuJoCo's bits);
      // an update that raises the cost by more than 1e-10 is undone
      const Scalar A = Scalar(1) / c.ARinv[i];
      const Scalar delta = f[i] - old;
      Scalar change = Scalar(0.5) * delta * delta * A + delta * res;
      if (change > Scalar(1e-10)) {
        f[i] = old;
        change = Scalar(0);
      }
      improvement -= change;
    }
    improvement *= scale;
    // gradient restart (O'Donoghue and Candes): when the sweep's correction opposes the
    // extrapolation, the momentum starts over
    bool restart = false;
    if (iter > 0) {
      Scalar dot = Scalar(0);
      for (int i = 0; i < nefc; ++i) dot += (f[i] - c.force_momentum[i]) * (c.force_momentum[i] - c.force_prev[i]);
      restart = dot < Scalar(0);
    }
    k = restart ? 0 : k + 1;
    ++iter;
    if (improvement < m.tolerance) break;
  }
  d.solver_niter = iter;
  pgs_state(m, d);
  // qfrc_constraint = J' f over the rows with force (as mju_mulMatTVec), qacc = M^-1 qfrc + qacc_smooth
  for (int i = 0; i < nefc; ++i) {
    const Scalar fi = f[i];
    if (fi == Scalar(0)) continue;
    for (int j = 0; j < nv; ++j) d.qfrc_constraint[j] += d.efc_J[i][j] * fi;
  }
  for (int j = 0; j < nv; ++j) d.qacc[j] = d.qfrc_constraint[j];
  solve_inertia(m, d, d.qacc);
  for (int j = 0; j < nv; ++j) d.qacc[j] += d.qacc_smooth[j];
}

}  // namespace detail

/// @brief Solves for the constrained acceleration (MuJoCo's mj_fwdConstraint) with the model's
/// solver, and writes d.qacc, d.efc_force, d.efc_state, d.qfrc_constraint, d.solver_niter and
/// d.solver_neval. Without rows: qacc = qacc_smooth. Needs qM and its factor qLDL/qLDiagInv
/// (factor_inertia), qfrc_smooth, qacc_smooth and the rows (make_constraint, reference_constraint).
///
/// Newton (mj_solNewton): starts from qacc_warmstart or qacc_smooth, whichever has the lower total
/// cost, and runs at most opt.iterations Newton steps of at most opt.ls_iterations line-search
/// evaluations. With islands enabled (MuJoCo's default) it solves each constraint island on its
/// own as MuJoCo 3.12 does: a model of one kinematic tree has one island, a model of several
/// (dims_ntree) as many as the rows connect, each over its own dofs and rows with its tolerances
/// scaled by 1 / the trace of its M, and the dofs no row touches keep qacc_smooth. With islands
/// disabled it solves all rows at once with tolerances scaled by 1 / (meaninertia * nv).
/// solver_niter is then the sum of the islands' Newton steps.
///
/// PGS (mj_solPGS): starts from the forces of the rows at qacc_warmstart (or none, when the dual
/// cost of those is positive) and runs at most opt.iterations sweeps over the rows in a shuffled
/// order, stopping when a sweep's cost decrease, scaled by 1 / (meaninertia * nv) with or without
/// islands, is below opt.tolerance. solver_neval stays 0. Its stack holds the nefc x nefc matrix AR.
template <class Scalar, class Dims>
RLK_HOST_DEVICE RLK_DEVICE_NOINLINE void solve_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  constexpr int nv = Dims::nv;
  static_assert(!(dims_pgs<Dims> && dims_ntree<Dims> > 1),
                "rlkernels::physics: PGS on a model of several kinematic trees (its island-local solves) is not supported");
  for (int i = 0; i < nv; ++i) d.qfrc_constraint[i] = Scalar(0);
  d.solver_niter = 0;
  d.solver_neval = 0;
  if (d.nefc == 0) {
    for (int i = 0; i < nv; ++i) d.qacc[i] = d.qacc_smooth[i];
    return;
  }
  if (m.solver == solver_kind::pgs) {
    // PGS's nefc x nefc matrix is only compiled in (and on a GPU only reserved on the thread's
    // stack) for Dims that declare the solver (generated PGS models, dims_with_pgs): a Newton
    // model's kernel does not pay for it
    if constexpr (dims_pgs<Dims>) {
      detail::pgs_solve(m, d);
    } else {
      d.warning |= warning_bad_solver;
      for (int i = 0; i < nv; ++i) d.qacc[i] = d.qacc_smooth[i];
    }
  } else {
    detail::newton_solve(m, d);
  }
}

}  // namespace physics
}  // namespace rlkernels
