// rlkernels/physics/sensor.hpp
// MuJoCo's mj_sensorPos and mj_sensorVel for the sensors that read the position and velocity
// stages: joint position and velocity, frame position, orientation and axes, frame linear and
// angular velocity, gyro, velocimeter, subtree centre of mass and linear velocity, and the clock,
// of bodies (inertial frame or body frame), geoms and sites, in the world frame or a reference
// frame (another such object); with MuJoCo's cutoff. Same formulas and order of operations as MuJoCo 3.12 (mj_objectVelocity,
// mju_transformSpatial, mj_subtreeVel), so that in double the values are mjData's sensordata bit
// for bit (tests/physics/mujoco_smooth_test.cpp). A model without sensors compiles none of this.
#pragma once

#include "../core/config.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"
#include "smooth.hpp"

namespace rlkernels {
namespace physics {
namespace detail {

/// MuJoCo's mju_transformSpatial for a motion vector, without rotation (rot null: the world frame)
/// or with it (see transform_motion).
template <class S>
RLK_INLINE void transform_motion_world(S* res, const S* vec, const S* newpos, const S* oldpos) {
  S dif[3], cros[3];
  for (int k = 0; k < 6; ++k) res[k] = vec[k];
  sub3(dif, newpos, oldpos);
  cross3(cros, dif, vec);
  sub3(res + 3, vec + 3, cros);
}

/// The frame (position, orientation) of a sensor's object (MuJoCo's get_xpos_xmat).
template <class S, class D>
RLK_INLINE void sensor_frame(const model<S, D>& m, const data<S, D>& d, int objtype, int id, const S*& xpos,
                             const S*& xmat) {
  if (objtype == object_xbody) {
    xpos = d.xpos[id];
    xmat = d.xmat[id];
  } else if (objtype == object_body) {
    xpos = d.xipos[id];
    xmat = d.ximat[id];
  } else if (objtype == object_geom) {
    xpos = d.geom_xpos[id];
    xmat = d.geom_xmat[id];
  } else {
    if constexpr (dims_nsite<D> > 0) {
      xpos = d.site_xpos[id];
      xmat = d.site_xmat[id];
    }
  }
  (void)m;
}

/// MuJoCo's mj_objectVelocity: the object's 6D velocity (rotation, translation) at its origin, in
/// the world frame or (local) its own.
template <class S, class D>
RLK_INLINE void object_velocity(const model<S, D>& m, const data<S, D>& d, int objtype, int id, S* res, bool local) {
  int body = id;
  if (objtype == object_geom) body = m.geom_bodyid[id];
  if constexpr (dims_nsite<D> > 0) {
    if (objtype == object_site) body = m.site_bodyid[id];
  }
  const S *pos, *mat;
  sensor_frame(m, d, objtype, id, pos, mat);
  if (m.body_dofnum[m.body_weldid[body]] == 0) {
    for (int k = 0; k < 6; ++k) res[k] = S(0);
    return;
  }
  const S* root_com = d.subtree_com[m.body_rootid[body]];
  if (local)
    transform_motion(res, d.cvel[body], pos, root_com, mat);
  else
    transform_motion_world(res, d.cvel[body], pos, root_com);
}

/// An object's orientation quaternion (MuJoCo's get_xquat).
template <class S, class D>
RLK_INLINE void object_quat(const model<S, D>& m, const data<S, D>& d, int objtype, int id, S* quat) {
  if (objtype == object_xbody) {
    for (int k = 0; k < 4; ++k) quat[k] = d.xquat[id][k];
  } else if (objtype == object_body) {
    spatial::mul_quat(quat, d.xquat[id], m.body_iquat[id]);
  } else if (objtype == object_geom) {
    spatial::mul_quat(quat, d.xquat[m.geom_bodyid[id]], m.geom_quat[id]);
  } else {
    if constexpr (dims_nsite<D> > 0) spatial::mul_quat(quat, d.xquat[m.site_bodyid[id]], m.site_quat[id]);
  }
}

/// MuJoCo's cutoff: a real-valued sensor clipped to +-cutoff, a positive one to at most cutoff.
template <class S, class D>
RLK_INLINE void sensor_cutoff(const model<S, D>& m, int i, S* out) {
  const S cutoff = m.sensor_cutoff[i];
  if (cutoff <= S(0)) return;
  for (int j = 0; j < m.sensor_dim[i]; ++j) {
    if (m.sensor_datatype[i] == 0) {
      out[j] = out[j] < -cutoff ? -cutoff : (out[j] > cutoff ? cutoff : out[j]);
    } else if (m.sensor_datatype[i] == 1) {
      out[j] = cutoff < out[j] ? cutoff : out[j];
    }
  }
}

/// MuJoCo's mj_subtreeVel, the linear part: each subtree's centre-of-mass velocity.
template <class S, class D>
RLK_HOST_DEVICE void subtree_linvel(const model<S, D>& m, const data<S, D>& d, S (*linvel)[3]) {
  for (int i = 0; i < D::nbody; ++i) {
    S vel[6];
    object_velocity(m, d, object_body, i, vel, false);
    scale3(linvel[i], vel + 3, m.body_mass[i]);
  }
  for (int i = D::nbody - 1; i >= 0; --i) {
    if (i) {
      S* p = linvel[m.body_parentid[i]];
      p[0] += linvel[i][0];
      p[1] += linvel[i][1];
      p[2] += linvel[i][2];
    }
    const S mass = m.body_subtreemass[i];
    scale3(linvel[i], linvel[i], S(1) / (min_value<S>() > mass ? min_value<S>() : mass));
  }
}

}  // namespace detail

/// @brief MuJoCo's mj_sensorPos for the supported sensors: joint position, frame position,
/// orientation (w, x, y, z) and axes, subtree centre of mass and the clock, into d.sensordata at
/// each sensor's address, then its cutoff. Needs the position stage (kinematics, com_pos). Skipped
/// under disable_sensor, as in MuJoCo.
template <class S, class D>
RLK_HOST_DEVICE void sensor_pos(const model<S, D>& m, data<S, D>& d) {
  if constexpr (dims_nsensor<D> > 0) {
    using namespace detail;
    if (m.disableflags & disable_sensor) return;
    for (int i = 0; i < dims_nsensor<D>; ++i) {
      const int type = m.sensor_type[i], objtype = m.sensor_objtype[i], id = m.sensor_objid[i];
      const int refid = m.sensor_refid[i];
      S* out = d.sensordata + m.sensor_adr[i];
      const S *xpos, *xmat;
      switch (type) {
        case sensor_jointpos:
          out[0] = d.qpos[m.jnt_qposadr[id]];
          break;
        case sensor_framepos:
        case sensor_framexaxis:
        case sensor_frameyaxis:
        case sensor_framezaxis: {
          sensor_frame(m, d, objtype, id, xpos, xmat);
          const int offset = type - sensor_framexaxis;  // (x, y, z axis: the matrix's column)
          if (refid < 0) {
            if (type == sensor_framepos) {
              copy3(out, xpos);
            } else {
              out[0] = xmat[offset];
              out[1] = xmat[offset + 3];
              out[2] = xmat[offset + 6];
            }
          } else {  // in the reference frame
            const S *xpos_ref, *xmat_ref;
            sensor_frame(m, d, m.sensor_reftype[i], refid, xpos_ref, xmat_ref);
            S v[3];
            if (type == sensor_framepos) {
              sub3(v, xpos, xpos_ref);
            } else {
              v[0] = xmat[offset];
              v[1] = xmat[offset + 3];
              v[2] = xmat[offset + 6];
            }
            mul_mat_t_vec3(out, xmat_ref, v);
          }
          break;
        }
        case sensor_framequat: {
          if (refid < 0) {
            object_quat(m, d, objtype, id, out);
          } else {  // relative to the reference: conj(ref) * obj
            S objquat[4], refquat[4];
            object_quat(m, d, objtype, id, objquat);
            object_quat(m, d, m.sensor_reftype[i], refid, refquat);
            refquat[1] = -refquat[1];
            refquat[2] = -refquat[2];
            refquat[3] = -refquat[3];
            spatial::mul_quat(out, refquat, objquat);
          }
          break;
        }
        case sensor_subtreecom:
          copy3(out, d.subtree_com[id]);
          break;
        case sensor_clock:
          out[0] = d.time;
          break;
        default:
          continue;  // a velocity-stage sensor
      }
      detail::sensor_cutoff(m, i, out);
    }
  } else {
    (void)m;
    (void)d;
  }
}

/// @brief MuJoCo's mj_sensorVel for the supported sensors: joint velocity, gyro and velocimeter (a
/// site's angular and linear velocity in its own frame), frame linear and angular velocity (world
/// frame) and subtree linear velocity (mj_subtreeVel), then each one's cutoff. Needs the velocity
/// stage (com_vel). Skipped under disable_sensor.
template <class S, class D>
RLK_HOST_DEVICE void sensor_vel(const model<S, D>& m, data<S, D>& d) {
  if constexpr (dims_nsensor<D> > 0) {
    using namespace detail;
    if (m.disableflags & disable_sensor) return;
    bool have_subtree = false;
    S linvel[D::nbody][3];
    for (int i = 0; i < dims_nsensor<D>; ++i) {
      const int type = m.sensor_type[i], objtype = m.sensor_objtype[i], id = m.sensor_objid[i];
      S* out = d.sensordata + m.sensor_adr[i];
      S xvel[6];
      switch (type) {
        case sensor_jointvel:
          out[0] = d.qvel[m.jnt_dofadr[id]];
          break;
        case sensor_gyro:
        case sensor_velocimeter:
          detail::object_velocity(m, d, object_site, id, xvel, true);
          copy3(out, type == sensor_gyro ? xvel : xvel + 3);
          break;
        case sensor_framelinvel:
        case sensor_frameangvel:
          detail::object_velocity(m, d, objtype, id, xvel, false);
          if (m.sensor_refid[i] >= 0) {  // relative to the reference frame, in its axes
            const int reftype = m.sensor_reftype[i], refid = m.sensor_refid[i];
            const S *xpos, *xmat, *xpos_ref, *xmat_ref;
            sensor_frame(m, d, objtype, id, xpos, xmat);
            sensor_frame(m, d, reftype, refid, xpos_ref, xmat_ref);
            S xvel_ref[6], rel_vel[6], cross[3], rvec[3];
            detail::object_velocity(m, d, reftype, refid, xvel_ref, false);
            for (int k = 0; k < 6; ++k) rel_vel[k] = xvel[k] - xvel_ref[k];
            sub3(rvec, xpos, xpos_ref);
            cross3(cross, rvec, xvel_ref);
            rel_vel[3] += cross[0];
            rel_vel[4] += cross[1];
            rel_vel[5] += cross[2];
            mul_mat_t_vec3(xvel, xmat_ref, rel_vel);
            mul_mat_t_vec3(xvel + 3, xmat_ref, rel_vel + 3);
          }
          copy3(out, type == sensor_frameangvel ? xvel : xvel + 3);
          break;
        case sensor_subtreelinvel:
          if (!have_subtree) {
            detail::subtree_linvel(m, d, linvel);
            have_subtree = true;
          }
          copy3(out, linvel[id]);
          break;
        default:
          continue;  // a position-stage sensor
      }
      detail::sensor_cutoff(m, i, out);
    }
  } else {
    (void)m;
    (void)d;
  }
}

/// @brief The sensors alone from d.qpos, d.qvel and d.time: the stages they read (kinematics,
/// com_pos, com_vel) and then sensor_pos and sensor_vel, as mj_forward would give them (its other
/// stages change none of these sensors). For an observation that reads sensors at a state: after
/// mj_step, MuJoCo's sensordata are those of the step's first forward pass instead.
template <class S, class D>
RLK_HOST_DEVICE void sensors(const model<S, D>& m, data<S, D>& d) {
  kinematics(m, d);
  com_pos(m, d);
  com_vel(m, d);
  sensor_pos(m, d);
  sensor_vel(m, d);
}

}  // namespace physics
}  // namespace rlkernels
