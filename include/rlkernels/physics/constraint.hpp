// rlkernels/physics/constraint.hpp
// Constraint rows (dof friction loss, joint limits, then contacts: frictionless or with the
// pyramidal friction cone of condim 3, 4 or 6)
// and MuJoCo's soft-constraint parameters: Jacobians as mj_jac, diagApprox from invweight0,
// impedance from solimp, stiffness/damping from solref (mj_makeConstraint, mj_makeImpedance,
// mj_referenceConstraint for the supported subset; dense Jacobian, as MuJoCo uses for nv < 60).
#pragma once

#include "../core/config.hpp"
#include "collision.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"
#include "smooth.hpp"

namespace rlkernels {
namespace physics {
namespace detail {

/// a^b with MuJoCo's shortcuts for b = 1 and b = 2 (bit-identical results in the common cases).
template <class S> RLK_INLINE S solimp_power(S a, S b) {
  if (b == S(1)) return a;
  if (b == S(2)) return a * a;
  return std::pow(a, b);
}

/// Impedance and its derivative at violation pos - margin (MuJoCo's getimpedance).
template <class S>
RLK_INLINE void impedance(const S* solimp, S pos, S margin, S& imp, S& imp_deriv) {
  if (solimp[0] == solimp[1] || solimp[2] <= min_value<S>()) {
    imp = S(0.5) * (solimp[0] + solimp[1]);
    imp_deriv = S(0);
    return;
  }
  S x = (pos - margin) / solimp[2];
  S sgn = S(1);
  if (x < S(0)) {
    x = -x;
    sgn = S(-1);
  }
  if (x >= S(1) || x <= S(0)) {
    imp = x >= S(1) ? solimp[1] : solimp[0];
    imp_deriv = S(0);
    return;
  }
  S y, dy;
  if (solimp[4] == S(1)) {
    y = x;
    dy = S(1);
  } else if (x <= solimp[3]) {
    const S a = S(1) / solimp_power(solimp[3], solimp[4] - S(1));
    y = a * solimp_power(x, solimp[4]);
    dy = solimp[4] * a * solimp_power(x, solimp[4] - S(1));
  } else {
    const S b = S(1) / solimp_power(S(1) - solimp[3], solimp[4] - S(1));
    y = S(1) - b * solimp_power(S(1) - x, solimp[4]);
    dy = solimp[4] * b * solimp_power(S(1) - x, solimp[4] - S(1));
  }
  imp = solimp[0] + y * (solimp[1] - solimp[0]);
  imp_deriv = dy * sgn * (solimp[1] - solimp[0]) / solimp[2];
}

template <class S> RLK_INLINE S max_s(S a, S b) { return a > b ? a : b; }
template <class S> RLK_INLINE S min_s(S a, S b) { return a < b ? a : b; }

/// The reference acceleration of a row (mj_referenceConstraint): -B vel - K I (pos - margin).
template <class S>
RLK_INLINE S reference_acceleration(S K, S B, S I, S vel, S pos, S margin) {
  return -B * vel - K * I * (pos - margin);
}

/// R of `count` rows starting at `row` that share one solref/solimp and position (one limit side,
/// one frictionless contact, or all rows of one pyramid), whose diagonal approximations are
/// diag[0..count), as mj_makeImpedance's first loop; then, with dims_with_efc_terms, their stored
/// terms (efc_pos, efc_margin, efc_diagApprox, efc_KBIP; reference_constraint makes aref from
/// them), else their reference accelerations right away (the rows' Jacobians and qvel are final).
/// A friction-loss row (friction = true) has no stiffness: K = 0 (mj_makeImpedance).
template <class Scalar, class Dims>
RLK_INLINE void row_impedance(const model<Scalar, Dims>& m, data<Scalar, Dims>& d, int row, int count, Scalar pos,
                              Scalar margin, const Scalar* diag, const Scalar* solref_in, const Scalar* solimp_in,
                              bool friction = false) {
  Scalar ref[2] = {solref_in[0], solref_in[1]};
  Scalar imp_p[5];
  for (int i = 0; i < 5; ++i) imp_p[i] = solimp_in[i];
  // standard (both > 0) and direct (both <= 0) references cannot mix: MuJoCo's default then
  if ((ref[0] > Scalar(0)) != (ref[1] > Scalar(0))) {
    ref[0] = Scalar(0.02);
    ref[1] = Scalar(1);
  }
  if (!(m.disableflags & disable_refsafe) && ref[0] > Scalar(0)) ref[0] = max_s(ref[0], Scalar(2) * m.timestep);
  const Scalar lo = Scalar(0.0001), hi = Scalar(0.9999);  // mjMINIMP, mjMAXIMP
  imp_p[0] = min_s(hi, max_s(lo, imp_p[0]));
  imp_p[1] = min_s(hi, max_s(lo, imp_p[1]));
  imp_p[2] = max_s(Scalar(0), imp_p[2]);
  imp_p[3] = min_s(hi, max_s(lo, imp_p[3]));
  imp_p[4] = max_s(Scalar(1), imp_p[4]);
  Scalar imp, imp_deriv;
  impedance(imp_p, pos, margin, imp, imp_deriv);
  const Scalar tiny = min_value<Scalar>();
  const Scalar dmax2 = imp_p[1] * imp_p[1];
  const Scalar K = friction        ? Scalar(0)
                   : ref[0] > Scalar(0) ? Scalar(1) / max_s(tiny, dmax2 * ref[0] * ref[0] * ref[1] * ref[1])
                                      : -ref[0] / max_s(tiny, dmax2);
  const Scalar B = ref[1] > Scalar(0) ? Scalar(2) / max_s(tiny, imp_p[1] * ref[0]) : -ref[1] / max_s(tiny, imp_p[1]);
  for (int j = row; j < row + count; ++j) {
    d.efc_R[j] = max_s(tiny, (Scalar(1) - imp) * diag[j - row] / imp);
    if constexpr (data<Scalar, Dims>::efc_terms) {
      d.efc_pos[j] = pos;
      d.efc_margin[j] = margin;
      d.efc_diagApprox[j] = diag[j - row];
      d.efc_KBIP[j][0] = K;
      d.efc_KBIP[j][1] = B;
      d.efc_KBIP[j][2] = imp;
      d.efc_KBIP[j][3] = imp_deriv;
    } else {
      const Scalar vel = mj_dot(d.efc_J[j], d.qvel, Dims::nv);
      d.efc_aref[j] = reference_acceleration(K, B, imp, vel, pos, margin);
    }
  }
}

/// Rows the current limits and contacts need (to check the slots before writing any).
template <class Scalar, class Dims>
RLK_INLINE int count_rows(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d) {
  int n = 0;
  if constexpr (dims_frictionloss<Dims>) {
    if (!(m.disableflags & disable_frictionloss))
      for (int v = 0; v < Dims::nv; ++v) n += m.dof_frictionloss[v] != Scalar(0);
  }
  if (!(m.disableflags & disable_limit)) {
    for (int j = 0; j < Dims::njnt; ++j) {
      if (!m.jnt_limited[j]) continue;
      const Scalar q = d.qpos[m.jnt_qposadr[j]];
      if (q - m.jnt_range[j][0] < m.jnt_margin[j]) ++n;
      if (m.jnt_range[j][1] - q < m.jnt_margin[j]) ++n;
    }
  }
  if (!(m.disableflags & disable_contact)) {
    for (int i = 0; i < d.ncon; ++i) {
      if (d.con[i].exclude) continue;
      const int dim = d.con[i].dim < dims_max_condim<Dims> ? d.con[i].dim : dims_max_condim<Dims>;  // see make_constraint
      n += dim == 1 ? 1 : 2 * (dim - 1);
    }
  }
  return n;
}

}  // namespace detail

/// @brief Builds the constraint rows of the position stage (MuJoCo's mj_makeConstraint with
/// mj_diagApprox and mj_makeImpedance): d.nf, d.nl, d.nefc, efc_type, efc_id, efc_J, efc_R, efc_D, and
/// each contact's efc_address and mu; with dims_with_efc_terms also efc_pos, efc_margin,
/// efc_diagApprox (MuJoCo's efc_diagA: after the call R = (1-imp)/imp * diagApprox, as MuJoCo
/// leaves it) and efc_KBIP, else already efc_aref (which needs qvel: the velocity stage's
/// reference_constraint computes it from those terms when they are kept).
/// Rows: with dims_frictionloss, one friction-loss row per dof with dof_frictionloss != 0 (J the
/// unit vector of the dof, no stiffness, solref/solimp the dof's); joint limits (each limited
/// hinge/slide: lower side then upper side, active while dist < jnt_margin); then the non-excluded
/// contacts in order (condim 1: one frictionless row; condim 3, 4, 6: 2 (condim - 1) pyramid edges
/// J_n + mu_k J_k, J_n - mu_k J_k for k = 1 .. condim - 1: the two tangents' sliding, then, from
/// the rotational Jacobian, spin about the normal (4, 6) and rolling about the tangents (6)).
/// Needs the kinematics (cdof, subtree_com) and the contacts (collide). If the rows do not fit in
/// the model's nefc slots, sets warning_efc_full and makes none.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void make_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  constexpr int nv = Dims::nv;
  d.nf = 0;
  d.nl = 0;
  d.nefc = 0;
  for (int i = 0; i < d.ncon; ++i) {
    d.con[i].efc_address = -1;
    d.con[i].mu = Scalar(0);
  }
  if (m.disableflags & disable_constraint) return;
  if (detail::count_rows(m, d) > Dims::nefc) {
    d.warning |= warning_efc_full;
    return;
  }
  int r = 0;
  // ---- dof friction loss ----
  if constexpr (dims_frictionloss<Dims>) {
    if (!(m.disableflags & disable_frictionloss)) {
      for (int v = 0; v < nv; ++v) {
        if (m.dof_frictionloss[v] == Scalar(0)) continue;
        for (int k = 0; k < nv; ++k) d.efc_J[r][k] = Scalar(0);
        d.efc_J[r][v] = Scalar(1);
        d.efc_type[r] = static_cast<int>(constraint_type::friction_dof);
        d.efc_id[r] = v;
        const Scalar diag = m.dof_invweight0[v];
        detail::row_impedance(m, d, r, 1, Scalar(0), Scalar(0), &diag, m.dof_solref[v], m.dof_solimp[v], true);
        ++r;
      }
    }
  }
  d.nf = r;
  // ---- joint limits ----
  if (!(m.disableflags & disable_limit)) {
    for (int j = 0; j < Dims::njnt; ++j) {
      if (!m.jnt_limited[j]) continue;
      const Scalar q = d.qpos[m.jnt_qposadr[j]];
      for (int side = -1; side <= 1; side += 2) {
        const Scalar dist = side < 0 ? q - m.jnt_range[j][0] : m.jnt_range[j][1] - q;
        if (!(dist < m.jnt_margin[j])) continue;
        for (int k = 0; k < nv; ++k) d.efc_J[r][k] = Scalar(0);
        d.efc_J[r][m.jnt_dofadr[j]] = Scalar(-side);
        d.efc_type[r] = static_cast<int>(constraint_type::limit_joint);
        d.efc_id[r] = j;
        const Scalar diag = m.dof_invweight0[m.jnt_dofadr[j]];
        detail::row_impedance(m, d, r, 1, dist, m.jnt_margin[j], &diag, m.jnt_solref[j], m.jnt_solimp[j]);
        ++r;
      }
    }
  }
  d.nl = r - d.nf;
  // ---- contacts ----
  if (!(m.disableflags & disable_contact)) {
    for (int i = 0; i < d.ncon; ++i) {
      contact<Scalar>& c = d.con[i];
      if (c.exclude) continue;
      const int b1 = m.geom_bodyid[c.geom1], b2 = m.geom_bodyid[c.geom2];
      constexpr int maxdim = dims_max_condim<Dims>;
      // the generator bounds every pair's condim by maxdim; this bound only keeps a hand-made
      // model inside the arrays
      const int dim = c.dim < maxdim ? c.dim : maxdim;
      Scalar jac1[3][nv], jac2[3][nv], jc[maxdim > 3 ? 6 : 3][nv];
      detail::point_jacobian(m, d, c.pos, b1, jac1);
      detail::point_jacobian(m, d, c.pos, b2, jac2);
      for (int k = 0; k < 3; ++k)
        for (int v = 0; v < nv; ++v) jac2[k][v] = jac2[k][v] - jac1[k][v];
      // rotate into the contact frame: jc[a] = sum_k frame[a][k] * (jac2 - jac1)[k]
      const int nrot = dim > 1 ? 3 : 1;
      for (int a = 0; a < nrot; ++a)
        for (int v = 0; v < nv; ++v)
          jc[a][v] = c.frame[3 * a] * jac2[0][v] + c.frame[3 * a + 1] * jac2[1][v] + c.frame[3 * a + 2] * jac2[2][v];
      if constexpr (maxdim > 3) {
        if (dim > 3) {
          // the rotational Jacobians' difference (mj_jac's jacr: the cdofs' rotations along each
          // body's chain), rotated into the first dim - 3 frame axes: spin, then rolling
          detail::rotation_jacobian(m, d, b1, jac1);
          detail::rotation_jacobian(m, d, b2, jac2);
          for (int k = 0; k < 3; ++k)
            for (int v = 0; v < nv; ++v) jac2[k][v] = jac2[k][v] - jac1[k][v];
          for (int a = 0; a < dim - 3; ++a)
            for (int v = 0; v < nv; ++v)
              jc[3 + a][v] =
                  c.frame[3 * a] * jac2[0][v] + c.frame[3 * a + 1] * jac2[1][v] + c.frame[3 * a + 2] * jac2[2][v];
        }
      }
      Scalar tran = Scalar(0), rot = Scalar(0);
      tran += m.body_invweight0[b1][0];
      rot += m.body_invweight0[b1][1];
      tran += m.body_invweight0[b2][0];
      rot += m.body_invweight0[b2][1];
      c.efc_address = r;
      Scalar solref[2], solimp[5];
      detail::contact_solver_params(m, c.geom1, c.geom2, solref, solimp);
      if (dim == 1) {
        for (int v = 0; v < nv; ++v) d.efc_J[r][v] = jc[0][v];
        d.efc_type[r] = static_cast<int>(constraint_type::contact_frictionless);
        d.efc_id[r] = i;
        detail::row_impedance(m, d, r, 1, c.dist, c.includemargin, &tran, solref, solimp);
        ++r;
        continue;
      }
      const int nrows = 2 * (dim - 1);
      Scalar diag[2 * (maxdim - 1)];
      for (int k = 1; k < dim; ++k) {
        const Scalar f = c.friction[k - 1];
        const int a = r + 2 * (k - 1);
        for (int v = 0; v < nv; ++v) {
          d.efc_J[a][v] = jc[0][v] + jc[k][v] * f;
          d.efc_J[a + 1][v] = jc[0][v] + jc[k][v] * (-f);
        }
        diag[a - r] = diag[a - r + 1] = tran + f * f * (k - 1 < 2 ? tran : rot);
      }
      for (int a = r; a < r + nrows; ++a) {
        d.efc_type[a] = static_cast<int>(constraint_type::contact_pyramidal);
        d.efc_id[a] = i;
      }
      detail::row_impedance(m, d, r, nrows, c.dist, c.includemargin, diag, solref, solimp);
      // the pyramid's common regularizer: R1 = R0/impratio, mu = friction*sqrt(R1/R0), R = 2 mu^2 R0
      const Scalar r1 = d.efc_R[r] / detail::max_s(detail::min_value<Scalar>(), m.impratio);
      c.mu = c.friction[0] * std::sqrt(r1 / d.efc_R[r]);
      const Scalar rpy = Scalar(2) * c.mu * c.mu * d.efc_R[r];
      for (int a = r; a < r + nrows; ++a) d.efc_R[a] = rpy;
      r += nrows;
    }
  }
  d.nefc = r;
  for (int i = 0; i < r; ++i) {
    d.efc_D[i] = Scalar(1) / d.efc_R[i];
    if constexpr (data<Scalar, Dims>::efc_terms)
      d.efc_diagApprox[i] = d.efc_R[i] * d.efc_KBIP[i][2] / (Scalar(1) - d.efc_KBIP[i][2]);
  }
}

/// @brief The velocity-stage part (MuJoCo's mj_referenceConstraint for the supported rows):
/// efc_vel = J qvel and the reference acceleration efc_aref = -B vel - K I (pos - margin), from
/// the terms that make_constraint kept (dims_with_efc_terms). Without them make_constraint has
/// already computed efc_aref from the qvel it saw (the same formula and bits) and this does nothing.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void reference_constraint(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  (void)m;
  if constexpr (data<Scalar, Dims>::efc_terms) {
    for (int i = 0; i < d.nefc; ++i) {
      d.efc_vel[i] = detail::mj_dot(d.efc_J[i], d.qvel, Dims::nv);
      d.efc_aref[i] = detail::reference_acceleration(d.efc_KBIP[i][0], d.efc_KBIP[i][1], d.efc_KBIP[i][2], d.efc_vel[i],
                                                     d.efc_pos[i], d.efc_margin[i]);
    }
  } else {
    (void)d;
  }
}

}  // namespace physics
}  // namespace rlkernels
