// rlkernels/physics/forward.hpp
// MuJoCo's mj_forward and mj_step for the supported subset: the position, velocity and acceleration
// stages in MuJoCo's order, the constraint stage (collision, rows, Newton solve), MuJoCo's checks of
// the state with its reset on instability, and the Euler (with implicit damping) and RK4 integrators.
#pragma once

#include "../core/config.hpp"
#include "collision.hpp"
#include "constraint.hpp"
#include "data.hpp"
#include "model.hpp"
#include "sensor.hpp"
#include "smooth.hpp"
#include "solver.hpp"

namespace rlkernels {
namespace physics {
namespace detail {

/// mj_forward without touching d.warning (step() accumulates the bits of all its passes); with
/// sensors false, mj_forwardSkip's skipsensor (RK4's later stages: sensordata stays the first
/// pass's, as in MuJoCo).
template <class S, class D>
RLK_HOST_DEVICE RLK_DEVICE_NOINLINE void forward_pass(const model<S, D>& m, data<S, D>& d, bool sensors = true) {
  (void)sensors;
  const int flags = m.disableflags;
  // position stage (mj_fwdPosition)
  kinematics(m, d);
  com_pos(m, d);
  tendon(m, d);
  crb(m, d);
  factor_inertia(m, d);
  if (!(flags & (disable_constraint | disable_contact)))
    collide(m, d);
  else
    d.ncon = 0;
  if (!(flags & disable_constraint)) {
    make_constraint(m, d);
  } else {
    d.nf = 0;
    d.nl = 0;
    d.nefc = 0;
  }
  d.ncon_peak = d.ncon > d.ncon_peak ? d.ncon : d.ncon_peak;
  d.nefc_peak = d.nefc > d.nefc_peak ? d.nefc : d.nefc_peak;
  if constexpr (dims_nsensor<D> > 0) {
    if (sensors) sensor_pos(m, d);
  }
  // velocity stage (mj_fwdVelocity)
  tendon_velocity(m, d);
  com_vel(m, d);
  passive(m, d);
  if (d.nefc > 0) reference_constraint(m, d);
  rne(m, d, d.qfrc_bias);
  if constexpr (dims_nsensor<D> > 0) {
    if (sensors) sensor_vel(m, d);
  }
  // acceleration stage (mj_fwdActuation, mj_fwdAcceleration, mj_fwdConstraint)
  actuation(m, d);
  smooth_acceleration(m, d);
  if (d.nefc > 0) {
    solve_constraint(m, d);
  } else {
    for (int i = 0; i < D::nv; ++i) {
      d.qfrc_constraint[i] = S(0);
      d.qacc[i] = d.qacc_smooth[i];
    }
    d.solver_niter = 0;
    d.solver_neval = 0;
  }
}

/// MuJoCo's mj_resetData as far as this data holds it: time 0, qpos = qpos0, zero qvel, ctrl and
/// warm start (every other field is recomputed by the next forward pass).
template <class S, class D>
RLK_HOST_DEVICE void reset_data(const model<S, D>& m, data<S, D>& d) {
  d.time = S(0);
  for (int i = 0; i < D::nq; ++i) d.qpos[i] = m.qpos0[i];
  for (int i = 0; i < D::nv; ++i) { d.qvel[i] = S(0); d.qacc_warmstart[i] = S(0); }
  for (int i = 0; i < data<S, D>::nu_; ++i) d.ctrl[i] = S(0);
}

/// MuJoCo's mj_checkPos / mj_checkVel / mj_checkAcc: on the first bad value, set the bit and,
/// unless disable_autoreset, reset the data (after a bad qacc, run forward again).
template <class S, class D>
RLK_HOST_DEVICE void check_pos(const model<S, D>& m, data<S, D>& d) {
  for (int i = 0; i < D::nq; ++i)
    if (is_bad(d.qpos[i])) {
      d.warning |= warning_bad_qpos;
      if (!(m.disableflags & disable_autoreset)) reset_data(m, d);
      return;
    }
}

template <class S, class D>
RLK_HOST_DEVICE void check_vel(const model<S, D>& m, data<S, D>& d) {
  for (int i = 0; i < D::nv; ++i)
    if (is_bad(d.qvel[i])) {
      d.warning |= warning_bad_qvel;
      if (!(m.disableflags & disable_autoreset)) reset_data(m, d);
      return;
    }
}

template <class S, class D>
RLK_HOST_DEVICE void check_acc(const model<S, D>& m, data<S, D>& d) {
  for (int i = 0; i < D::nv; ++i)
    if (is_bad(d.qacc[i])) {
      d.warning |= warning_bad_qacc;
      if (!(m.disableflags & disable_autoreset)) {
        reset_data(m, d);
        forward_pass(m, d);
      }
      return;
    }
}

/// MuJoCo's mju_quatIntegrate: rotates the quaternion q (normalised first) by the angular
/// velocity w (in the frame q rotates to) over time h: q = normalise(q) * (cos(a/2), n sin(a/2))
/// with n = w / |w| (x axis when |w| < mjMINVAL) and a = h |w|; no normalisation after the product.
template <class S>
RLK_HOST_DEVICE void quat_integrate(S* q, const S* w, S h) {
  S axis[3] = {w[0], w[1], w[2]};
  const S angle = h * normalize3(axis);
  S rot[4];
  spatial::axis_angle_quat(rot, axis, angle);
  spatial::normalize4(q);
  spatial::mul_quat(q, q, rot);
}

/// MuJoCo's mj_integratePos: qpos "+" h qvel joint by joint: free joints add h v to the position
/// and integrate the quaternion with the angular velocity (body frame), ball joints integrate the
/// quaternion, hinge and slide joints add h v.
template <class S, class D>
RLK_HOST_DEVICE void integrate_pos(const model<S, D>& m, S* qpos, const S* qvel, S h) {
  for (int j = 0; j < D::njnt; ++j) {
    int padr = m.jnt_qposadr[j], vadr = m.jnt_dofadr[j];
    switch (m.jnt_type[j]) {
      case joint_type::free:
        for (int k = 0; k < 3; ++k) qpos[padr + k] += h * qvel[vadr + k];
        padr += 3;
        vadr += 3;
        // fall through
      case joint_type::ball:
        quat_integrate(qpos + padr, qvel + vadr, h);
        break;
      default:
        qpos[padr] += h * qvel[vadr];
        break;
    }
  }
}

/// MuJoCo's mj_advance: qvel += h qacc, then qpos "+"= h v (integrate_pos) with v = vel if given,
/// else the new qvel (semi-implicit); time += h; qacc_warmstart = d.qacc.
template <class S, class D>
RLK_HOST_DEVICE void advance(const model<S, D>& m, data<S, D>& d, const S* qacc, const S* vel) {
  const S h = m.timestep;
  for (int i = 0; i < D::nv; ++i) d.qvel[i] += qacc[i] * h;
  integrate_pos(m, d.qpos, vel ? vel : d.qvel, h);
  d.time += h;
  for (int i = 0; i < D::nv; ++i) d.qacc_warmstart[i] = d.qacc[i];
}

/// MuJoCo's mj_Euler (mj_EulerSkip): when any dof has damping or its joint an actuator with
/// damping (jnt_actuatorid != -1), and neither disable_eulerdamp nor disable_damper is set, the
/// velocity update is implicit in the damping: qacc = (M + h diag(damping))^-1 (qfrc_smooth +
/// qfrc_constraint) with MuJoCo's L^T D L factor of that matrix; otherwise qacc = d.qacc.
template <class S, class D>
RLK_HOST_DEVICE void euler(const model<S, D>& m, data<S, D>& d) {
  constexpr int nv = D::nv;
  bool damped = false;
  if (!(m.disableflags & (disable_eulerdamp | disable_damper)))
    for (int i = 0; i < nv; ++i)
      if (m.dof_damping[i] > S(0) || m.jnt_actuatorid[m.dof_jntid[i]] != -1) {
        damped = true;
        break;
      }
  S qacc[nv];
  if (!damped) {
    for (int i = 0; i < nv; ++i) qacc[i] = d.qacc[i];
  } else {
    // M + h diag(damping), factorised where M's factor was: the step needs M's no more (MuJoCo
    // keeps both, in qLD and qH; here qLDL holds H's factor after such a step), and a GPU thread's
    // stack needs no second nv x nv matrix
    auto& qH = d.qLDL;
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < nv; ++j) qH[i][j] = d.qM[i][j];
    for (int i = 0; i < nv; ++i) qH[i][i] += m.timestep * m.dof_damping[i];
    ldl_factor_tree(qH, d.qLDiagInv, m.dof_parentid);
    for (int i = 0; i < nv; ++i) qacc[i] = d.qfrc_smooth[i] + d.qfrc_constraint[i];
    ldl_solve_tree(qH, d.qLDiagInv, m.dof_parentid, qacc);
  }
  advance(m, d, qacc, static_cast<const S*>(nullptr));
}

/// MuJoCo's mj_RungeKutta with N = 4 (classic tableau; the forward passes at the intermediate
/// stages are full mj_forward passes, collisions and solver included). The final update starts
/// from the initial qpos/qvel/time with the B-weighted velocity and acceleration; qacc_warmstart
/// becomes the qacc of the last stage, and d's other fields are those of the last stage.
template <class S, class D>
RLK_HOST_DEVICE void runge_kutta4(const model<S, D>& m, data<S, D>& d) {
  constexpr int nq = D::nq, nv = D::nv, N = 4;
  const S A[(N - 1) * (N - 1)] = {S(0.5), S(0), S(0), S(0), S(0.5), S(0), S(0), S(0), S(1)};
  const S B[N] = {S(1.0 / 6.0), S(1.0 / 3.0), S(1.0 / 3.0), S(1.0 / 6.0)};
  const S h = m.timestep, time = d.time;
  S Xq[N][nq], Xv[N][nv], F[N][nv], dXv[nv], dXa[nv];

  S T[N - 1];
  for (int i = 1; i < N; ++i) {
    S c = S(0);
    for (int j = 0; j < i; ++j) c += A[(i - 1) * (N - 1) + j];
    T[i - 1] = d.time + c * h;
  }
  for (int k = 0; k < nq; ++k) Xq[0][k] = d.qpos[k];
  for (int k = 0; k < nv; ++k) { Xv[0][k] = d.qvel[k]; F[0][k] = d.qacc[k]; }

  for (int i = 1; i < N; ++i) {
    for (int k = 0; k < nv; ++k) { dXv[k] = S(0); dXa[k] = S(0); }
    for (int j = 0; j < i; ++j) {
      const S a = A[(i - 1) * (N - 1) + j];
      for (int k = 0; k < nv; ++k) dXv[k] += Xv[j][k] * a;
      for (int k = 0; k < nv; ++k) dXa[k] += F[j][k] * a;
    }
    for (int k = 0; k < nq; ++k) Xq[i][k] = Xq[0][k];
    for (int k = 0; k < nv; ++k) Xv[i][k] = Xv[0][k];
    integrate_pos(m, Xq[i], dXv, h);
    for (int k = 0; k < nv; ++k) Xv[i][k] += dXa[k] * h;

    for (int k = 0; k < nq; ++k) d.qpos[k] = Xq[i][k];
    for (int k = 0; k < nv; ++k) d.qvel[k] = Xv[i][k];
    d.time = T[i - 1];
    forward_pass(m, d, false);
    for (int k = 0; k < nv; ++k) F[i][k] = d.qacc[k];
  }

  for (int k = 0; k < nv; ++k) { dXv[k] = S(0); dXa[k] = S(0); }
  for (int j = 0; j < N; ++j) {
    for (int k = 0; k < nv; ++k) dXv[k] += Xv[j][k] * B[j];
    for (int k = 0; k < nv; ++k) dXa[k] += F[j][k] * B[j];
  }
  d.time = time;
  for (int k = 0; k < nq; ++k) d.qpos[k] = Xq[0][k];
  for (int k = 0; k < nv; ++k) d.qvel[k] = Xv[0][k];
  advance(m, d, dXa, dXv);
}

}  // namespace detail

/// @brief Everything mj_forward computes (positions, velocities, forces, contacts, constraint
/// solve) from d.qpos, d.qvel, d.ctrl and d.qacc_warmstart, into d's other fields. Clears
/// d.warning first. Honours disable_constraint, disable_contact and disable_limit by skipping the
/// stages (as mj_collision and mj_makeConstraint do), and the passive/actuation/gravity flags.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void forward(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  d.warning = warning_none;
  detail::forward_pass(m, d);
}

/// @brief One mj_step: checks qpos and qvel, forward, checks qacc, then integrates with the model's
/// integrator (d.time advances by m.timestep; qacc_warmstart becomes the last forward pass's qacc).
///
/// Instability, as MuJoCo 3.12 handles it: a qpos or qvel that is NaN or beyond 1e10 (checked
/// before the forward pass), or such a qacc (after it), sets warning_bad_qpos / _qvel / _qacc in
/// d.warning and, unless the model disables autoreset, resets the data (time 0, qpos = qpos0, zero
/// qvel, ctrl and warm start; after a bad qacc, forward runs again on the reset data) and the step
/// goes on from there: the result is then one step from qpos0. Unlike MuJoCo, whose reset clears
/// its warning counters, the bits of one step accumulate. In addition, if the integrated qpos or
/// qvel is bad (which MuJoCo only notices at the next step's check), warning_bad_state is set and
/// the state is left as MuJoCo leaves it. d.warning is cleared at the start of each step.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void step(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  d.warning = warning_none;
  detail::check_pos(m, d);
  detail::check_vel(m, d);
  detail::forward_pass(m, d);
  detail::check_acc(m, d);
  if (m.integrator == integrator_kind::rk4)
    detail::runge_kutta4(m, d);
  else
    detail::euler(m, d);
  bool bad = false;
  for (int i = 0; i < Dims::nq; ++i) bad = bad || detail::is_bad(d.qpos[i]);
  for (int i = 0; i < Dims::nv; ++i) bad = bad || detail::is_bad(d.qvel[i]);
  if (bad) d.warning |= warning_bad_state;
}

}  // namespace physics
}  // namespace rlkernels
