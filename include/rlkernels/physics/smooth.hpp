// rlkernels/physics/smooth.hpp
// The smooth dynamics of MuJoCo's forward pass for hinge and slide joints: kinematics, the
// com-based frames, the mass matrix by composite rigid bodies (plus armature) and its dense
// Cholesky factor, velocities, bias forces by recursive Newton-Euler, passive forces, motor
// actuators and the unconstrained acceleration. Each stage follows MuJoCo 3.12's algorithm and
// its order of floating-point operations (the mass matrix is factorised as MuJoCo does, L^T D L
// over the tree), so that in double, built without FP contraction, the results are MuJoCo's bit
// for bit (tests/physics/mujoco_smooth_test.cpp measures it: all errors 0 at 3,000 random states
// per model, and along 500-step constraint-free RK4 and Euler trajectories).
#pragma once

#include "../core/config.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"

#include <cmath>

namespace rlkernels {
namespace physics {
namespace detail {

/// MuJoCo's mju_isBad: NaN or beyond +-1e10 (mjMAXVAL).
template <class S> RLK_INLINE bool is_bad(S x) { return x != x || x > max_value<S>() || x < -max_value<S>(); }

/// Spatial operations in MuJoCo's exact order of operations (its mju_/mji_ functions), so that
/// the engine rounds as MuJoCo does. Motion and force vectors are (rotation, translation); a
/// com-based inertia is 10 numbers: the 3x3 rotational inertia as (xx, yy, zz, xy, xz, yz), then
/// mass times the offset of the centre of mass (3), then the mass.
namespace spatial {

/// r = q v q* (MuJoCo's rotVecQuat: v + 2 q_xyz x (q_w v + q_xyz x v); identity copies).
template <class S> RLK_INLINE void rot_vec_quat(S* r, const S* v, const S* q) {
  if (q[0] == S(1) && q[1] == S(0) && q[2] == S(0) && q[3] == S(0)) {
    r[0] = v[0]; r[1] = v[1]; r[2] = v[2];
    return;
  }
  const S t0 = q[0] * v[0] + q[2] * v[2] - q[3] * v[1];
  const S t1 = q[0] * v[1] + q[3] * v[0] - q[1] * v[2];
  const S t2 = q[0] * v[2] + q[1] * v[1] - q[2] * v[0];
  r[0] = v[0] + S(2) * (q[2] * t2 - q[3] * t1);
  r[1] = v[1] + S(2) * (q[3] * t0 - q[1] * t2);
  r[2] = v[2] + S(2) * (q[1] * t1 - q[2] * t0);
}

/// r = a * b (Hamilton product; r may alias a or b).
template <class S> RLK_INLINE void mul_quat(S* r, const S* a, const S* b) {
  S t[4];
  detail::mul_quat(t, a, b);
  r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3];
}

/// MuJoCo's normalize4: a near-zero quaternion becomes the identity; one already of unit length
/// (within mjMINVAL) is left untouched.
template <class S> RLK_INLINE void normalize4(S* q) {
  const S n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (n < min_value<S>()) {
    q[0] = S(1); q[1] = S(0); q[2] = S(0); q[3] = S(0);
  } else if (std::fabs(n - S(1)) > min_value<S>()) {
    const S inv = S(1) / n;
    q[0] *= inv; q[1] *= inv; q[2] *= inv; q[3] *= inv;
  }
}

/// Unit quaternion of a rotation by `angle` about the unit axis (a zero angle gives the identity).
template <class S> RLK_INLINE void axis_angle_quat(S* q, const S* axis, S angle) {
  if (angle == S(0)) {
    q[0] = S(1); q[1] = S(0); q[2] = S(0); q[3] = S(0);
    return;
  }
  const S s = std::sin(angle * S(0.5));
  q[0] = std::cos(angle * S(0.5));
  q[1] = axis[0] * s;
  q[2] = axis[1] * s;
  q[3] = axis[2] * s;
}

/// Rotation matrix of a unit quaternion (the identity quaternion gives the exact identity).
template <class S> RLK_INLINE void quat_mat(S* M, const S* q) {
  if (q[0] == S(1) && q[1] == S(0) && q[2] == S(0) && q[3] == S(0)) {
    for (int i = 0; i < 9; ++i) M[i] = (i % 4 == 0) ? S(1) : S(0);
    return;
  }
  detail::quat_to_mat(M, q);
}

/// MuJoCo's dot of two 6-vectors: ((0 + 2) + (1 + 3)) + (4 + 5), the order of its unrolled mju_dot.
template <class S> RLK_INLINE S dot6(const S* a, const S* b) {
  return ((a[0] * b[0] + a[2] * b[2]) + (a[1] * b[1] + a[3] * b[3])) + (a[4] * b[4] + a[5] * b[5]);
}

/// r = vel x v for motion vectors (r may not alias).
template <class S> RLK_INLINE void cross_motion(S* r, const S* vel, const S* v) {
  r[0] = -vel[2] * v[1] + vel[1] * v[2];
  r[1] = vel[2] * v[0] - vel[0] * v[2];
  r[2] = -vel[1] * v[0] + vel[0] * v[1];
  r[3] = -vel[2] * v[4] + vel[1] * v[5];
  r[4] = vel[2] * v[3] - vel[0] * v[5];
  r[5] = -vel[1] * v[3] + vel[0] * v[4];
  r[3] += -vel[5] * v[1] + vel[4] * v[2];
  r[4] += vel[5] * v[0] - vel[3] * v[2];
  r[5] += -vel[4] * v[0] + vel[3] * v[1];
}

/// r = vel x* f for force vectors (r may not alias).
template <class S> RLK_INLINE void cross_force(S* r, const S* vel, const S* f) {
  r[0] = -vel[2] * f[1] + vel[1] * f[2];
  r[1] = vel[2] * f[0] - vel[0] * f[2];
  r[2] = -vel[1] * f[0] + vel[0] * f[1];
  r[3] = -vel[2] * f[4] + vel[1] * f[5];
  r[4] = vel[2] * f[3] - vel[0] * f[5];
  r[5] = -vel[1] * f[3] + vel[0] * f[4];
  r[0] += -vel[5] * f[4] + vel[4] * f[5];
  r[1] += vel[5] * f[3] - vel[3] * f[5];
  r[2] += -vel[4] * f[3] + vel[3] * f[4];
}

/// r = I v for a com-based inertia I (10 numbers) and a motion vector v (r may not alias).
template <class S> RLK_INLINE void mul_inert_vec(S* r, const S* i, const S* v) {
  r[0] = i[0] * v[0] + i[3] * v[1] + i[4] * v[2] - i[8] * v[4] + i[7] * v[5];
  r[1] = i[3] * v[0] + i[1] * v[1] + i[5] * v[2] + i[8] * v[3] - i[6] * v[5];
  r[2] = i[4] * v[0] + i[5] * v[1] + i[2] * v[2] - i[7] * v[3] + i[6] * v[4];
  r[3] = i[8] * v[1] - i[7] * v[2] + i[9] * v[3];
  r[4] = i[6] * v[2] - i[8] * v[0] + i[9] * v[4];
  r[5] = i[7] * v[0] - i[6] * v[1] + i[9] * v[5];
}

/// The com-based inertia of a body: principal moments `inert` in the frame `mat` (local to
/// global), centre of mass at `dif` from the com-frame origin, mass `mass`.
template <class S> RLK_INLINE void inert_com(S* r, const S* inert, const S* mat, const S* dif, S mass) {
  const S t[9] = {mat[0] * inert[0], mat[3] * inert[0], mat[6] * inert[0],
                  mat[1] * inert[1], mat[4] * inert[1], mat[7] * inert[1],
                  mat[2] * inert[2], mat[5] * inert[2], mat[8] * inert[2]};
  r[0] = mat[0] * t[0] + mat[1] * t[3] + mat[2] * t[6];
  r[1] = mat[3] * t[1] + mat[4] * t[4] + mat[5] * t[7];
  r[2] = mat[6] * t[2] + mat[7] * t[5] + mat[8] * t[8];
  r[3] = mat[0] * t[1] + mat[1] * t[4] + mat[2] * t[7];
  r[4] = mat[0] * t[2] + mat[1] * t[5] + mat[2] * t[8];
  r[5] = mat[3] * t[2] + mat[4] * t[5] + mat[5] * t[8];
  // parallel-axis term
  r[0] += mass * (dif[1] * dif[1] + dif[2] * dif[2]);
  r[1] += mass * (dif[0] * dif[0] + dif[2] * dif[2]);
  r[2] += mass * (dif[0] * dif[0] + dif[1] * dif[1]);
  r[3] -= mass * dif[0] * dif[1];
  r[4] -= mass * dif[0] * dif[2];
  r[5] -= mass * dif[1] * dif[2];
  r[6] = mass * dif[0];
  r[7] = mass * dif[1];
  r[8] = mass * dif[2];
  r[9] = mass;
}

/// r = sum_k dof_k * vec[k] over n motion vectors (MuJoCo's mulDofVec: n = 1 scales, n = 0
/// zeros, n > 1 accumulates the non-zero terms in order).
template <class S> RLK_INLINE void mul_dof_vec(S* r, const S (*dof)[6], const S* vec, int n) {
  if (n == 1) {
    for (int k = 0; k < 6; ++k) r[k] = dof[0][k] * vec[0];
    return;
  }
  for (int k = 0; k < 6; ++k) r[k] = S(0);
  for (int j = 0; j < n; ++j) {
    const S s = vec[j];
    if (s != S(0))
      for (int k = 0; k < 6; ++k) r[k] += dof[j][k] * s;
  }
}

/// A frame fixed in a body (pos, quat relative to the body) in world coordinates, with MuJoCo's
/// shortcuts when it coincides with the body or inertial frame (mj_local2Global).
template <class S, class D>
RLK_INLINE void local_to_global(const data<S, D>& d, S* xpos, S* xmat, const S* pos, const S* quat, int body,
                                int same) {
  switch (same) {
    case sameframe_body: copy3(xpos, d.xpos[body]); break;
    case sameframe_inertia: copy3(xpos, d.xipos[body]); break;
    default:  // none, bodyrot, inertiarot
      mul_mat_vec3(xpos, d.xmat[body], pos);
      xpos[0] += d.xpos[body][0]; xpos[1] += d.xpos[body][1]; xpos[2] += d.xpos[body][2];
      break;
  }
  switch (same) {
    case sameframe_none: {
      S q[4];
      detail::mul_quat(q, d.xquat[body], quat);
      quat_mat(xmat, q);
      break;
    }
    case sameframe_body:
    case sameframe_bodyrot:
      for (int k = 0; k < 9; ++k) xmat[k] = d.xmat[body][k];
      break;
    default:  // inertia, inertiarot
      for (int k = 0; k < 9; ++k) xmat[k] = d.ximat[body][k];
      break;
  }
}

}  // namespace spatial

/// @brief MuJoCo's L^T D L factorisation (mj_factorI) of a symmetric positive definite matrix
/// with the tree sparsity of the mass matrix (entry (i, j), j < i, non-zero only when dof j is an
/// ancestor of dof i, ancestors from dof_parentid), in place on the lower triangle: afterwards
/// the strict lower triangle holds L (unit diagonal implied), the diagonal D, and invD = 1 / D.
/// Same operations in the same order as MuJoCo's sparse version, so the results are MuJoCo's
/// bit for bit. (Tree sparsity means no fill-in: only ancestor entries are touched.)
template <class S, int N>
RLK_HOST_DEVICE void ldl_factor_tree(S (&A)[N][N], S* invD, const int* dof_parentid) {
  for (int k = N - 1; k >= 0; --k) {
    const S inv = S(1) / A[k][k];
    invD[k] = inv;
    for (int i = dof_parentid[k]; i >= 0; i = dof_parentid[i]) {  // ancestors, nearest first
      const S s = -A[k][i] * inv;
      for (int c = i; c >= 0; c = dof_parentid[c]) A[i][c] += A[k][c] * s;
    }
    for (int c = dof_parentid[k]; c >= 0; c = dof_parentid[c]) A[k][c] *= inv;
  }
}

/// @brief x = (L^T D L)^-1 x in place with the factor of ldl_factor_tree (MuJoCo's mj_solveLD,
/// same order of operations, including its dot products over each row's ancestors).
template <class S, int N>
RLK_HOST_DEVICE void ldl_solve_tree(const S (&L)[N][N], const S* invD, const int* dof_parentid, S* x) {
  for (int i = N - 1; i >= 0; --i) {  // x <- L^-T x
    const S xi = x[i];
    if (xi == S(0)) continue;
    for (int c = dof_parentid[i]; c >= 0; c = dof_parentid[c]) x[c] -= L[i][c] * xi;
  }
  for (int i = 0; i < N; ++i) x[i] *= invD[i];  // x <- D^-1 x
  for (int i = 0; i < N; ++i) {                  // x <- L^-1 x
    int cols[N];
    int n = 0;
    for (int c = dof_parentid[i]; c >= 0; c = dof_parentid[c]) cols[n++] = c;
    if (n == 0) continue;
    // MuJoCo's mju_dotSparse over the columns in increasing order: blocks of 4 in 4 partial sums
    // combined as (0 + 2) + (1 + 3), then the rest one by one
    S r0 = S(0), r1 = S(0), r2 = S(0), r3 = S(0);
    int t = 0;
    for (; t <= n - 4; t += 4) {
      r0 += L[i][cols[n - 1 - t]] * x[cols[n - 1 - t]];
      r1 += L[i][cols[n - 2 - t]] * x[cols[n - 2 - t]];
      r2 += L[i][cols[n - 3 - t]] * x[cols[n - 3 - t]];
      r3 += L[i][cols[n - 4 - t]] * x[cols[n - 4 - t]];
    }
    S r = (r0 + r2) + (r1 + r3);
    for (; t < n; ++t) r += L[i][cols[n - 1 - t]] * x[cols[n - 1 - t]];
    x[i] -= r;
  }
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Position stage
// ------------------------------------------------------------------------------------------------

/// @brief Forward kinematics (MuJoCo's mj_kinematics for hinge and slide joints): body frames
/// (xpos, xquat, xmat), inertial frames (xipos, ximat), joint anchors and axes, geom frames.
/// Joint angles are measured from qpos0, as MuJoCo does.
template <class S, class D>
RLK_HOST_DEVICE void kinematics(const model<S, D>& m, data<S, D>& d) {
  using namespace detail;
  // world
  for (int k = 0; k < 3; ++k) { d.xpos[0][k] = S(0); d.xipos[0][k] = S(0); }
  d.xquat[0][0] = S(1); d.xquat[0][1] = S(0); d.xquat[0][2] = S(0); d.xquat[0][3] = S(0);
  for (int k = 0; k < 9; ++k) { d.xmat[0][k] = (k % 4 == 0) ? S(1) : S(0); d.ximat[0][k] = d.xmat[0][k]; }

  for (int i = 1; i < D::nbody; ++i) {
    const int pid = m.body_parentid[i];
    S xpos[3], xquat[4];
    const int j0 = m.body_jntadr[i];
    if (m.body_jntnum[i] == 1 && m.jnt_type[j0] == joint_type::free) {
      // a free joint: position and orientation straight from qpos (the quaternion normalised,
      // and once more below, as MuJoCo does)
      const S* q = d.qpos + m.jnt_qposadr[j0];
      copy3(xpos, q);
      for (int k = 0; k < 4; ++k) xquat[k] = q[3 + k];
      spatial::normalize4(xquat);
      copy3(d.xanchor[j0], xpos);
      copy3(d.xaxis[j0], m.jnt_axis[j0]);
      spatial::normalize4(xquat);
      for (int k = 0; k < 4; ++k) d.xquat[i][k] = xquat[k];
      copy3(d.xpos[i], xpos);
      spatial::quat_mat(d.xmat[i], xquat);
      continue;
    }
    if (pid) {
      mul_mat_vec3(xpos, d.xmat[pid], m.body_pos[i]);
      xpos[0] += d.xpos[pid][0]; xpos[1] += d.xpos[pid][1]; xpos[2] += d.xpos[pid][2];
      detail::mul_quat(xquat, d.xquat[pid], m.body_quat[i]);
    } else {
      copy3(xpos, m.body_pos[i]);
      for (int k = 0; k < 4; ++k) xquat[k] = m.body_quat[i][k];
    }
    for (int j = j0; j < j0 + m.body_jntnum[i]; ++j) {
      const int qadr = m.jnt_qposadr[j];
      S xaxis[3], xanchor[3];
      spatial::rot_vec_quat(xaxis, m.jnt_axis[j], xquat);
      spatial::rot_vec_quat(xanchor, m.jnt_pos[j], xquat);
      xanchor[0] += xpos[0]; xanchor[1] += xpos[1]; xanchor[2] += xpos[2];
      if (m.jnt_type[j] == joint_type::slide) {
        add_scaled3(xpos, xaxis, d.qpos[qadr] - m.qpos0[qadr]);
      } else {  // hinge or ball: rotate about the anchor
        S qloc[4], v[3];
        if (D::nq >= 4 && m.jnt_type[j] == joint_type::ball) {  // (a ball joint has 4 coordinates)
          for (int k = 0; k < 4; ++k) qloc[k] = d.qpos[qadr + k];
          spatial::normalize4(qloc);
        } else {
          spatial::axis_angle_quat(qloc, m.jnt_axis[j], d.qpos[qadr] - m.qpos0[qadr]);
        }
        spatial::mul_quat(xquat, xquat, qloc);
        spatial::rot_vec_quat(v, m.jnt_pos[j], xquat);
        sub3(xpos, xanchor, v);
      }
      copy3(d.xanchor[j], xanchor);
      copy3(d.xaxis[j], xaxis);
    }
    spatial::normalize4(xquat);
    for (int k = 0; k < 4; ++k) d.xquat[i][k] = xquat[k];
    copy3(d.xpos[i], xpos);
    spatial::quat_mat(d.xmat[i], xquat);
  }

  for (int i = 1; i < D::nbody; ++i)
    spatial::local_to_global(d, d.xipos[i], d.ximat[i], m.body_ipos[i], m.body_iquat[i], i, m.body_sameframe[i]);
  for (int g = 0; g < D::ngeom; ++g)
    spatial::local_to_global(d, d.geom_xpos[g], d.geom_xmat[g], m.geom_pos[g], m.geom_quat[g], m.geom_bodyid[g],
                             m.geom_sameframe[g]);
  if constexpr (dims_nsite<D> > 0) {
    for (int i = 0; i < dims_nsite<D>; ++i)
      spatial::local_to_global(d, d.site_xpos[i], d.site_xmat[i], m.site_pos[i], m.site_quat[i], m.site_bodyid[i],
                               m.site_sameframe[i]);
  }
}

/// @brief MuJoCo's mj_comPos: subtree centres of mass, the com-based inertias (cinert, about the
/// subtree com of each body's root) and the com-based motion axes of the dofs (cdof).
template <class S, class D>
RLK_HOST_DEVICE void com_pos(const model<S, D>& m, data<S, D>& d) {
  using namespace detail;
  for (int i = 0; i < D::nbody; ++i) scale3(d.subtree_com[i], d.xipos[i], m.body_mass[i]);
  for (int i = D::nbody - 1; i > 0; --i) {
    S* p = d.subtree_com[m.body_parentid[i]];
    p[0] += d.subtree_com[i][0]; p[1] += d.subtree_com[i][1]; p[2] += d.subtree_com[i][2];
  }
  for (int i = 0; i < D::nbody; ++i) {
    if (m.body_subtreemass[i] < min_value<S>())
      copy3(d.subtree_com[i], d.xipos[i]);
    else
      scale3(d.subtree_com[i], d.subtree_com[i], S(1) / m.body_subtreemass[i]);
  }

  for (int k = 0; k < 10; ++k) d.cinert[0][k] = S(0);
  for (int i = 1; i < D::nbody; ++i) {
    S off[3];
    sub3(off, d.xipos[i], d.subtree_com[m.body_rootid[i]]);
    spatial::inert_com(d.cinert[i], m.body_inertia[i], d.ximat[i], off, m.body_mass[i]);
  }

  for (int i = 1; i < D::nbody; ++i) {
    const int j0 = m.body_jntadr[i];
    for (int j = j0; j < j0 + m.body_jntnum[i]; ++j) {
      S* cdof = d.cdof[m.jnt_dofadr[j]];
      const S* axis = d.xaxis[j];
      S off[3];
      sub3(off, d.subtree_com[m.body_rootid[i]], d.xanchor[j]);
      switch (m.jnt_type[j]) {
        case joint_type::slide:
          cdof[0] = S(0); cdof[1] = S(0); cdof[2] = S(0);
          copy3(cdof + 3, axis);
          break;
        case joint_type::hinge:
          copy3(cdof, axis);
          cross3(cdof + 3, axis, off);
          break;
        case joint_type::free:  // three translations along the world axes, then a ball
          for (int k = 0; k < 18; ++k) cdof[k] = S(0);
          cdof[3] = S(1);
          cdof[6 + 4] = S(1);
          cdof[12 + 5] = S(1);
          cdof += 18;
          // fall through
        case joint_type::ball:  // rotations about the body frame's axes (the columns of xmat)
          for (int k = 0; k < 3; ++k) {
            const S ax[3] = {d.xmat[i][k], d.xmat[i][k + 3], d.xmat[i][k + 6]};
            copy3(cdof + 6 * k, ax);
            cross3(cdof + 6 * k + 3, ax, off);
          }
          break;
      }
    }
  }
}

/// @brief MuJoCo's mj_tendon for fixed tendons: ten_length = sum of coef * qpos over the tendon's
/// joints (in their order, from 0) and the dense Jacobian ten_J (coef at each joint's dof).
template <class S, class D>
RLK_HOST_DEVICE void tendon(const model<S, D>& m, data<S, D>& d) {
  for (int t = 0; t < model<S, D>::ntendon; ++t) {
    S length = S(0);
    for (int v = 0; v < D::nv; ++v) d.ten_J[t][v] = S(0);
    for (int k = m.tendon_adr[t]; k < m.tendon_adr[t] + m.tendon_num[t]; ++k) {
      const int j = m.wrap_objid[k];
      length += m.wrap_prm[k] * d.qpos[m.jnt_qposadr[j]];
      d.ten_J[t][m.jnt_dofadr[j]] += m.wrap_prm[k];
    }
    d.ten_length[t] = length;
  }
}

/// @brief ten_velocity = ten_J qvel, each a sum over the Jacobian's non-zeros in dof order as
/// MuJoCo's sparse dot product adds them (four partial sums over blocks of 4, then the rest).
template <class S, class D>
RLK_HOST_DEVICE void tendon_velocity(const model<S, D>& m, data<S, D>& d) {
  (void)m;
  for (int t = 0; t < model<S, D>::ntendon; ++t) {
    S a[D::nv], b[D::nv];
    int n = 0;
    for (int v = 0; v < D::nv; ++v)
      if (d.ten_J[t][v] != S(0)) {
        a[n] = d.ten_J[t][v];
        b[n] = d.qvel[v];
        ++n;
      }
    S r0 = S(0), r1 = S(0), r2 = S(0), r3 = S(0);
    int i = 0;
    for (; i <= n - 4; i += 4) {
      r0 += a[i] * b[i];
      r1 += a[i + 1] * b[i + 1];
      r2 += a[i + 2] * b[i + 2];
      r3 += a[i + 3] * b[i + 3];
    }
    S r = (r0 + r2) + (r1 + r3);
    for (; i < n; ++i) r += a[i] * b[i];
    d.ten_velocity[t] = r;
  }
}

/// @brief MuJoCo's mj_crb (mj_makeM): composite rigid-body inertias (crb) and the joint-space
/// mass matrix, stored dense and symmetric in d.qM (what mj_fullM returns), armature included.
template <class S, class D>
RLK_HOST_DEVICE void crb(const model<S, D>& m, data<S, D>& d) {
  using namespace detail;
  for (int i = 0; i < D::nbody; ++i)
    for (int k = 0; k < 10; ++k) d.crb[i][k] = d.cinert[i][k];
  for (int i = D::nbody - 1; i >= 0; --i) {
    const int p = m.body_parentid[i];
    if (p > 0)
      for (int k = 0; k < 10; ++k) d.crb[p][k] += d.crb[i][k];
  }
  for (int i = 0; i < D::nv; ++i)
    for (int j = 0; j < D::nv; ++j) d.qM[i][j] = S(0);
  for (int i = 0; i < D::nv; ++i) {
    if (m.dof_simplenum[i]) {
      d.qM[i][i] = m.dof_M0[i];
      continue;
    }
    S buf[6];
    spatial::mul_inert_vec(buf, d.crb[m.dof_bodyid[i]], d.cdof[i]);
    d.qM[i][i] = m.dof_armature[i];
    for (int j = i; j >= 0; j = m.dof_parentid[j]) {
      d.qM[i][j] += spatial::dot6(d.cdof[j], buf);
      d.qM[j][i] = d.qM[i][j];
    }
  }
}

/// @brief Factorises d.qM as MuJoCo does (mj_factorM: L^T D L with the tree's sparsity) into
/// d.qLDL / d.qLDiagInv, which solve_inertia uses, so that M^-1 is MuJoCo's to the last bit. A
/// matrix that is not positive definite leaves inf or NaN in the factor, which the step's
/// acceleration check catches (MuJoCo's factorisation is unchecked too).
template <class S, class D>
RLK_HOST_DEVICE void factor_inertia(const model<S, D>& m, data<S, D>& d) {
  for (int i = 0; i < D::nv; ++i)
    for (int j = 0; j < D::nv; ++j) d.qLDL[i][j] = d.qM[i][j];
  detail::ldl_factor_tree(d.qLDL, d.qLDiagInv, m.dof_parentid);
}

/// @brief x = M^-1 x in place with MuJoCo's factor of factor_inertia (MuJoCo's mj_solveM).
template <class S, class D>
RLK_HOST_DEVICE void solve_inertia(const model<S, D>& m, const data<S, D>& d, S* x) {
  detail::ldl_solve_tree(d.qLDL, d.qLDiagInv, m.dof_parentid, x);
}

// ------------------------------------------------------------------------------------------------
// Velocity stage
// ------------------------------------------------------------------------------------------------

/// @brief MuJoCo's mj_comVel: com-based body velocities (cvel) and the time derivatives of the
/// motion axes (cdof_dot = cvel x cdof, with the velocity before the dof's own contribution).
template <class S, class D>
RLK_HOST_DEVICE void com_vel(const model<S, D>& m, data<S, D>& d) {
  using namespace detail;
  for (int k = 0; k < 6; ++k) d.cvel[0][k] = S(0);
  for (int i = 1; i < D::nbody; ++i) {
    S cvel[6];
    for (int k = 0; k < 6; ++k) cvel[k] = d.cvel[m.body_parentid[i]][k];
    const int bda = m.body_dofadr[i];
    for (int j = 0; j < m.body_dofnum[i]; ++j) {
      S tmp[6];
      const joint_type type = m.jnt_type[m.dof_jntid[bda + j]];
      if (D::nv >= 3 && (type == joint_type::free || type == joint_type::ball)) {  // (3 or 6 dofs)
        if (D::nv >= 6 && type == joint_type::free) {  // translations: no cdof_dot
          for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 6; ++k) d.cdof_dot[bda + j + r][k] = S(0);
          spatial::mul_dof_vec(tmp, d.cdof + bda + j, d.qvel + bda + j, 3);
          for (int k = 0; k < 6; ++k) cvel[k] += tmp[k];
          j += 3;
        }
        // the three rotations' cdof_dot from the same velocity, then the velocity
        for (int r = 0; r < 3; ++r) spatial::cross_motion(d.cdof_dot[bda + j + r], cvel, d.cdof[bda + j + r]);
        spatial::mul_dof_vec(tmp, d.cdof + bda + j, d.qvel + bda + j, 3);
        for (int k = 0; k < 6; ++k) cvel[k] += tmp[k];
        j += 2;
        continue;
      }
      spatial::cross_motion(d.cdof_dot[bda + j], cvel, d.cdof[bda + j]);
      for (int k = 0; k < 6; ++k) tmp[k] = d.cdof[bda + j][k] * d.qvel[bda + j];
      for (int k = 0; k < 6; ++k) cvel[k] += tmp[k];
    }
    for (int k = 0; k < 6; ++k) d.cvel[i][k] = cvel[k];
  }
}

/// @brief MuJoCo's mj_rne with flg_acc = 0: the bias forces C(q, qdot) qdot + gravity into
/// `result` (nv), gravity entering as the world's acceleration -g (unless disable_gravity).
template <class S, class D>
RLK_HOST_DEVICE void rne(const model<S, D>& m, const data<S, D>& d, S* result) {
  using namespace detail;
  S cacc[D::nbody][6];
  S cfrc[D::nbody][6];
  for (int k = 0; k < 6; ++k) cacc[0][k] = S(0);
  if (!(m.disableflags & disable_gravity)) scale3(cacc[0] + 3, m.gravity, S(-1));
  for (int i = 1; i < D::nbody; ++i) {
    const int n = m.body_dofnum[i];
    S tmp[6];
    if (n > 0)
      spatial::mul_dof_vec(tmp, d.cdof_dot + m.body_dofadr[i], d.qvel + m.body_dofadr[i], n);
    else
      for (int k = 0; k < 6; ++k) tmp[k] = S(0);
    for (int k = 0; k < 6; ++k) cacc[i][k] = cacc[m.body_parentid[i]][k] + tmp[k];
    spatial::mul_inert_vec(cfrc[i], d.cinert[i], cacc[i]);
    spatial::mul_inert_vec(tmp, d.cinert[i], d.cvel[i]);
    S tmp1[6];
    spatial::cross_force(tmp1, d.cvel[i], tmp);
    for (int k = 0; k < 6; ++k) cfrc[i][k] += tmp1[k];
  }
  for (int k = 0; k < 6; ++k) cfrc[0][k] = S(0);
  for (int i = D::nbody - 1; i > 0; --i) {
    const int p = m.body_parentid[i];
    if (p)
      for (int k = 0; k < 6; ++k) cfrc[p][k] += cfrc[i][k];
  }
  for (int v = 0; v < D::nv; ++v) result[v] = spatial::dot6(d.cdof[v], cfrc[m.dof_bodyid[v]]);
}

namespace detail {

/// MuJoCo's mju_transformSpatial for a motion vector (flg_force = 0) with a rotation: the 6D
/// velocity vec (rotation, translation) at oldpos, moved to newpos and expressed in the frame whose
/// axes are rot's columns.
template <class S>
RLK_INLINE void transform_motion(S* res, const S* vec, const S* newpos, const S* oldpos, const S* rot) {
  S dif[3], cros[3], tran[6];
  for (int k = 0; k < 6; ++k) tran[k] = vec[k];
  sub3(dif, newpos, oldpos);
  cross3(cros, dif, vec);
  sub3(tran + 3, vec + 3, cros);
  mul_mat_t_vec3(res, rot, tran);
  mul_mat_t_vec3(res + 3, rot, tran + 3);
}

/// Translational Jacobian (3 x nv, row-major, jacp[k][dof]) of a point fixed to a body, as mj_jac:
/// column j = cdof_lin + cdof_ang x (point - subtree_com of the body's root), along the dof chain.
template <class Scalar, class Dims>
RLK_INLINE void point_jacobian(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, const Scalar* point,
                               int body, Scalar (*jacp)[Dims::nv]) {
  constexpr int nv = Dims::nv;
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < nv; ++j) jacp[k][j] = Scalar(0);
  Scalar offset[3];
  sub3(offset, point, d.subtree_com[m.body_rootid[body]]);
  const int weld = m.body_weldid[body];
  if (m.body_dofnum[weld] == 0) return;
  for (int i = m.body_dofadr[weld] + m.body_dofnum[weld] - 1; i >= 0; i = m.dof_parentid[i]) {
    const Scalar* cdof = d.cdof[i];
    Scalar rot[3];
    cross3(rot, cdof, offset);
    jacp[0][i] = cdof[3] + rot[0];
    jacp[1][i] = cdof[4] + rot[1];
    jacp[2][i] = cdof[5] + rot[2];
  }
}

/// The rotational Jacobian of `body` (mj_jac's jacr: the rotation part of the cdofs along the
/// chain of its weld body, zero elsewhere).
template <class Scalar, class Dims>
RLK_INLINE void rotation_jacobian(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, int body,
                                  Scalar (*jacr)[Dims::nv]) {
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < Dims::nv; ++j) jacr[k][j] = Scalar(0);
  const int weld = m.body_weldid[body];
  if (m.body_dofnum[weld] == 0) return;
  for (int i = m.body_dofadr[weld] + m.body_dofnum[weld] - 1; i >= 0; i = m.dof_parentid[i])
    for (int k = 0; k < 3; ++k) jacr[k][i] = d.cdof[i][k];
}

/// MuJoCo's mj_applyFT for the dense case: qfrc += jacp' force, then qfrc += jacr' torque, with mj_jac's
/// Jacobians of `point` on `body` (point_jacobian; the rotational one is the cdofs' rotations along the
/// same chain), each product summed over the rows as mju_mulMatTVec does (a zero row of force or torque
/// skipped), then added.
template <class S, class D>
RLK_INLINE void apply_force_torque(const model<S, D>& m, const data<S, D>& d, const S* force, const S* torque,
                                   const S* point, int body, S* qfrc) {
  constexpr int nv = D::nv;
  S jacp[3][nv], jacr[3][nv];
  point_jacobian(m, d, point, body, jacp);
  rotation_jacobian(m, d, body, jacr);
  const S* vec[2] = {force, torque};
  const S(*jac[2])[nv] = {jacp, jacr};
  for (int part = 0; part < 2; ++part) {
    S q[nv];
    for (int j = 0; j < nv; ++j) q[j] = S(0);
    for (int r = 0; r < 3; ++r) {
      const S f = vec[part][r];
      if (f != S(0))
        for (int j = 0; j < nv; ++j) q[j] += jac[part][r][j] * f;
    }
    for (int j = 0; j < nv; ++j) qfrc[j] += q[j];
  }
}

/// MuJoCo's mj_inertiaBoxFluidModel for body i (of a model with dims_fluid): the body's inertia as a
/// box of uniform density, its velocity relative to the wind in its inertial frame, Stokes drag of the
/// box's mean-diameter sphere (viscosity) and quadratic drag of the box's faces (density); the force
/// and torque act at the body's centre of mass and are added to qfrc.
template <class S, class D>
RLK_INLINE void inertia_box_fluid(const model<S, D>& m, const data<S, D>& d, int i, S* qfrc) {
  const S* inertia = m.body_inertia[i];
  const S mass = m.body_mass[i];
  const S eps = min_value<S>();
  S box[3];  // sqrt(mju_max(mjMINVAL, I_j + I_k - I_i) / mass * 6)
  for (int k = 0; k < 3; ++k) {
    const int j = k == 0 ? 1 : 0, l = k == 2 ? 1 : 2;  // the other two axes, in MuJoCo's order
    const S e = inertia[j] + inertia[l] - inertia[k];
    box[k] = std::sqrt((eps >= e ? eps : e) / mass * S(6));
  }
  // mj_objectVelocity(mjOBJ_BODY, local): com-centred velocity in the inertial frame
  S lvel[6];
  const S* root_com = d.subtree_com[m.body_rootid[i]];
  if (m.body_dofnum[m.body_weldid[i]] == 0) {
    for (int k = 0; k < 6; ++k) lvel[k] = S(0);
  } else {
    transform_motion(lvel, d.cvel[i], d.xipos[i], root_com, d.ximat[i]);
  }
  // the wind in the same frame, subtracted from the translational velocity
  const S wind[6] = {S(0), S(0), S(0), m.wind[0], m.wind[1], m.wind[2]};
  S lwind[6];
  transform_motion(lwind, wind, d.xipos[i], root_com, d.ximat[i]);
  for (int k = 3; k < 6; ++k) lvel[k] -= lwind[k];
  S lfrc[6] = {S(0), S(0), S(0), S(0), S(0), S(0)};
  const S pi = S(3.14159265358979323846);
  if (m.viscosity > S(0)) {
    const S diam = (box[0] + box[1] + box[2]) / S(3);
    scale3(lfrc, lvel, -pi * diam * diam * diam * m.viscosity);
    scale3(lfrc + 3, lvel + 3, S(-3.0 * 3.14159265358979323846) * diam * m.viscosity);
  }
  if (m.density > S(0)) {
    const S rho = m.density;
    lfrc[3] -= S(0.5) * rho * box[1] * box[2] * std::fabs(lvel[3]) * lvel[3];
    lfrc[4] -= S(0.5) * rho * box[0] * box[2] * std::fabs(lvel[4]) * lvel[4];
    lfrc[5] -= S(0.5) * rho * box[0] * box[1] * std::fabs(lvel[5]) * lvel[5];
    const S b4[3] = {box[0] * box[0] * box[0] * box[0], box[1] * box[1] * box[1] * box[1],
                     box[2] * box[2] * box[2] * box[2]};
    lfrc[0] -= rho * box[0] * (b4[1] + b4[2]) * std::fabs(lvel[0]) * lvel[0] / S(64);
    lfrc[1] -= rho * box[1] * (b4[0] + b4[2]) * std::fabs(lvel[1]) * lvel[1] / S(64);
    lfrc[2] -= rho * box[2] * (b4[0] + b4[1]) * std::fabs(lvel[2]) * lvel[2] / S(64);
  }
  S bfrc[6];
  mul_mat_vec3(bfrc, d.ximat[i], lfrc);
  mul_mat_vec3(bfrc + 3, d.ximat[i], lfrc + 3);
  apply_force_torque(m, d, bfrc + 3, bfrc, d.xipos[i], i, qfrc);
}

}  // namespace detail

/// @brief MuJoCo's mj_passive for the supported subset: joint springs towards qpos_spring
/// (-stiffness * (q - qpos_spring)) and dof dampers (-damping * qdot), into d.qfrc_passive; for a
/// model with fluid forces (dims_fluid) and a nonzero density or viscosity, then MuJoCo's inertia-box
/// fluid model of every body with mass (mj_fluid), added after the springs and dampers.
/// (The generator refuses polynomial stiffness/damping, actuator damping, gravcomp and the ellipsoid
/// fluid model.)
template <class S, class D>
RLK_HOST_DEVICE void passive(const model<S, D>& m, data<S, D>& d) {
  S spring[D::nv], damper[D::nv];
  for (int i = 0; i < D::nv; ++i) { spring[i] = S(0); damper[i] = S(0); d.qfrc_passive[i] = S(0); }
  const bool no_spring = (m.disableflags & disable_spring) != 0;
  const bool no_damper = (m.disableflags & disable_damper) != 0;
  if (no_spring && no_damper) return;
  if (!no_spring)
    for (int j = 0; j < D::njnt; ++j) {
      const S k = m.jnt_stiffness[j];
      if (k == S(0)) continue;
      const int padr = m.jnt_qposadr[j];
      const S x = d.qpos[padr] - m.qpos_spring[padr];
      spring[m.jnt_dofadr[j]] = -x * k;
    }
  if (!no_damper)
    for (int i = 0; i < D::nv; ++i) {
      const S b = m.dof_damping[i];
      if (b != S(0)) damper[i] = -d.qvel[i] * b;
    }
  for (int i = 0; i < D::nv; ++i) d.qfrc_passive[i] = spring[i] + damper[i];
  if constexpr (dims_fluid<D>) {
    if (m.viscosity != S(0) || m.density != S(0)) {
      S fluid[D::nv];
      for (int i = 0; i < D::nv; ++i) fluid[i] = S(0);
      for (int b = 0; b < D::nbody; ++b)
        if (!(m.body_mass[b] < detail::min_value<S>())) detail::inertia_box_fluid(m, d, b, fluid);
      for (int i = 0; i < D::nv; ++i) d.qfrc_passive[i] += fluid[i];
    }
  }
}

/// @brief MuJoCo's mj_fwdActuation for motors on hinge/slide joints: a local copy of ctrl is
/// clamped to ctrlrange where ctrllimited (unless disable_clampctrl; d.ctrl itself is left
/// unchanged, as in MuJoCo); if any control is then NaN or beyond 1e10 all are taken as 0 and
/// warning_bad_ctrl is set (MuJoCo's mjWARN_BADCTRL); actuator_force = gainprm[0] * ctrl, clamped
/// to forcerange where forcelimited; qfrc_actuator = sum of gear * force per dof.
template <class S, class D>
RLK_HOST_DEVICE void actuation(const model<S, D>& m, data<S, D>& d) {
  constexpr int nu = D::nu;
  constexpr int nu_ = data<S, D>::nu_;
  for (int i = 0; i < D::nv; ++i) d.qfrc_actuator[i] = S(0);
  for (int i = 0; i < nu_; ++i) d.actuator_force[i] = S(0);
  if (nu == 0 || (m.disableflags & disable_actuation)) return;
  S ctrl[nu_];
  for (int i = 0; i < nu; ++i) ctrl[i] = d.ctrl[i];
  if (!(m.disableflags & disable_clampctrl))
    for (int i = 0; i < nu; ++i)
      if (m.actuator_ctrllimited[i]) {
        const S lo = m.actuator_ctrlrange[i][0], hi = m.actuator_ctrlrange[i][1];
        ctrl[i] = ctrl[i] < lo ? lo : (ctrl[i] > hi ? hi : ctrl[i]);
      }
  for (int i = 0; i < nu; ++i)
    if (detail::is_bad(ctrl[i])) {
      d.warning |= warning_bad_ctrl;
      for (int k = 0; k < nu; ++k) ctrl[k] = S(0);
      break;
    }
  for (int i = 0; i < nu; ++i) {
    S f = m.actuator_gainprm[i] * ctrl[i];
    if constexpr (dims_actuator_bias<D>) {
      // bias = b0 + b1 * length + b2 * velocity, with the joint transmission's length gear * q and
      // velocity gear * qdot (mj_transmission, mj_fwdVelocity)
      const int j = m.actuator_trnid[i];
      const S length = d.qpos[m.jnt_qposadr[j]] * m.actuator_gear[i];
      const S velocity = m.actuator_gear[i] * d.qvel[m.jnt_dofadr[j]];
      const S* b = m.actuator_biasprm[i];
      f += b[0] + b[1] * length + b[2] * velocity;
    } else {
      f += S(0);  // MuJoCo adds the (zero) bias of a motor
    }
    if (m.actuator_forcelimited[i]) {
      const S lo = m.actuator_forcerange[i][0], hi = m.actuator_forcerange[i][1];
      f = f < lo ? lo : (f > hi ? hi : f);
    }
    d.actuator_force[i] = f;
  }
  for (int i = 0; i < nu; ++i) {
    const S f = d.actuator_force[i];
    if (f == S(0)) continue;
    d.qfrc_actuator[m.jnt_dofadr[m.actuator_trnid[i]]] += m.actuator_gear[i] * f;
  }
}

/// @brief The contact part of MuJoCo's mj_rnePostConstraint: cfrc_ext, the com-based external
/// force (torque, force about the subtree com of each body's root) that the contacts with
/// constraint rows exert on each body, from the solved efc_force (pyramid edges decoded into the
/// normal force and mu-scaled tangential differences, as mj_contactForce); geom1's body receives
/// the opposite. The world's row stays 0. Call it after step() or forward(): Gymnasium's MuJoCo
/// envs read cfrc_ext so after mj_step, from the contacts and forces of the last forward pass
/// (the last RK4 stage). cacc and cfrc_int, which no Gymnasium env reads, are not computed.
template <class S, class D>
RLK_HOST_DEVICE void rne_post_constraint(const model<S, D>& m, data<S, D>& d) {
  using namespace detail;
  for (int b = 0; b < D::nbody; ++b)
    for (int k = 0; k < 6; ++k) d.cfrc_ext[b][k] = S(0);
  for (int i = 0; i < d.ncon; ++i) {
    const contact<S>& c = d.con[i];
    if (c.efc_address < 0) continue;
    // contact-frame force (normal, tangent 1, tangent 2); no torques for condim <= 3
    S lfrc[6] = {S(0), S(0), S(0), S(0), S(0), S(0)};
    const S* f = d.efc_force + c.efc_address;
    if (c.dim == 1) {
      lfrc[0] = f[0];
    } else {
      for (int r = 0; r < 2 * (c.dim - 1); ++r) lfrc[0] += f[r];
      for (int r = 0; r < c.dim - 1; ++r) lfrc[r + 1] = (f[2 * r] - f[2 * r + 1]) * c.friction[r];
    }
    lfrc[0] -= S(0);  // MuJoCo subtracts the (zero) adhesion
    // world-oriented (torque, force)
    S cfrc[6];
    mul_mat_t_vec3(cfrc, c.frame, lfrc + 3);
    mul_mat_t_vec3(cfrc + 3, c.frame, lfrc);
    for (int side = 0; side < 2; ++side) {
      const int body = m.geom_bodyid[side == 0 ? c.geom1 : c.geom2];
      if (!body) continue;
      // move the force's point of application from the contact to the com frame
      S dif[3], cros[3], com[6];
      sub3(dif, d.subtree_com[m.body_rootid[body]], c.pos);
      cross3(cros, dif, cfrc + 3);
      sub3(com, cfrc, cros);
      copy3(com + 3, cfrc + 3);
      for (int k = 0; k < 6; ++k) d.cfrc_ext[body][k] = side == 0 ? d.cfrc_ext[body][k] - com[k] : d.cfrc_ext[body][k] + com[k];
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Acceleration stage
// ------------------------------------------------------------------------------------------------

/// @brief MuJoCo's mj_fwdAcceleration: qfrc_smooth = passive - bias + actuator (no applied
/// forces), qacc_smooth = M^-1 qfrc_smooth (needs factor_inertia's qLDL).
template <class S, class D>
RLK_HOST_DEVICE void smooth_acceleration(const model<S, D>& m, data<S, D>& d) {
  for (int i = 0; i < D::nv; ++i) {
    d.qfrc_smooth[i] = d.qfrc_passive[i] - d.qfrc_bias[i];
    d.qfrc_smooth[i] += d.qfrc_actuator[i];
    d.qacc_smooth[i] = d.qfrc_smooth[i];
  }
  solve_inertia(m, d, d.qacc_smooth);
}

}  // namespace physics
}  // namespace rlkernels
