// tests/physics/mujoco_fixture.hpp
// Shared by the tests that compare rlkernels' physics with MuJoCo's C library (tests/physics/
// mujoco_*_test.cpp, one executable linking the mujoco wheel's libmujoco): loading Gymnasium's
// model files, owning mjModel/mjData, and moving state between MuJoCo and physics::data.
#pragma once

#include <mujoco/mujoco.h>

#include <rlkernels/envs/mujoco/models/ant.hpp>
#include <rlkernels/envs/mujoco/models/half_cheetah.hpp>
#include <rlkernels/envs/mujoco/models/hopper.hpp>
#include <rlkernels/envs/mujoco/models/humanoid.hpp>
#include <rlkernels/envs/mujoco/models/inverted_double_pendulum.hpp>
#include <rlkernels/envs/mujoco/models/inverted_pendulum.hpp>
#include <rlkernels/envs/mujoco/models/pusher.hpp>
#include <rlkernels/envs/mujoco/models/reacher.hpp>
#include <rlkernels/envs/mujoco/models/swimmer.hpp>
#include <rlkernels/envs/mujoco/models/walker2d.hpp>
#include <rlkernels/physics/data.hpp>

#include "physics/models/box_crawler.hpp"  // generated from tests/reference/mujoco_box_crawler.xml
#include "physics/models/friction_quad.hpp"  // generated from tests/reference/mujoco_friction_quad.xml
#include "physics/models/friction_islands.hpp"  // generated from tests/reference/mujoco_friction_islands.xml
#include "physics/models/sensor_robot.hpp"  // generated from tests/reference/mujoco_sensor_robot.xml
#include "../examples/my_robot/my_robot_model.hpp"  // generated from examples/my_robot/my_robot.xml

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#ifndef RLK_GYMNASIUM_ASSETS
#error "RLK_GYMNASIUM_ASSETS (Gymnasium's envs/mujoco/assets directory) must be defined"
#endif

namespace rlk_test {

struct mj_model_deleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct mj_data_deleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using mj_model_ptr = std::unique_ptr<mjModel, mj_model_deleter>;
using mj_data_ptr = std::unique_ptr<mjData, mj_data_deleter>;

/// Path of a model file: the test-only models (mujoco_*.xml) are in tests/reference/, the others in
/// Gymnasium's asset directory.
inline std::string model_file(const std::string& file) {
  if (file.rfind("mujoco_", 0) == 0) return std::string(RLK_REFERENCE_DIR) + "/" + file;
  if (file.rfind("my_robot", 0) == 0) return std::string(RLK_REFERENCE_DIR) + "/../../examples/my_robot/" + file;
  return std::string(RLK_GYMNASIUM_ASSETS) + "/" + file;
}

/// Compiles an MJCF file with MuJoCo; fails the test with MuJoCo's message if it cannot.
inline mj_model_ptr load_mj_model(const std::string& path) {
  char error[1024] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  INFO("mj_loadXML(" << path << "): " << error);
  REQUIRE(m != nullptr);
  return mj_model_ptr(m);
}

inline mj_data_ptr make_mj_data(const mjModel* m) {
  mjData* d = mj_makeData(m);
  REQUIRE(d != nullptr);
  return mj_data_ptr(d);
}

/// The three Gymnasium models: generated constants and the XML they came from.
struct hopper_case {
  using lean_dims = rlkernels::models::hopper_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "hopper";
  static constexpr const char* xml = "hopper.xml";
  static constexpr bool all_pairs_reachable = true;  // every candidate pair occurs along random motion
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::hopper<Scalar>(); }
};
struct walker2d_case {
  using lean_dims = rlkernels::models::walker2d_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "walker2d";
  static constexpr const char* xml = "walker2d_v5.xml";
  static constexpr bool all_pairs_reachable = true;  // every candidate pair occurs along random motion
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::walker2d<Scalar>(); }
};
struct half_cheetah_case {
  using lean_dims = rlkernels::models::half_cheetah_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "half_cheetah";
  static constexpr const char* xml = "half_cheetah.xml";
  static constexpr bool all_pairs_reachable = true;  // every candidate pair occurs along random motion
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::half_cheetah<Scalar>(); }
};

struct ant_case {
  using lean_dims = rlkernels::models::ant_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "ant";
  static constexpr const char* xml = "ant.xml";
  static constexpr bool all_pairs_reachable = true;  // every candidate pair occurs along random motion
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::ant<Scalar>(); }
};

struct humanoid_case {
  using lean_dims = rlkernels::models::humanoid_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "humanoid";
  static constexpr const char* xml = "humanoid.xml";
  static constexpr bool all_pairs_reachable = false;  // 126 candidate pairs, many self-contacts random motion never makes
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::humanoid<Scalar>(); }
};

/// A test-only robot for the plane-box collider: a free box hull with a capsule mast and two
/// hinged box flippers over a floor and a tilted ramp (tests/reference/mujoco_box_crawler.xml).
struct box_crawler_case {
  using lean_dims = rlkernels::models::box_crawler_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "box_crawler";
  static constexpr const char* xml = "mujoco_box_crawler.xml";
  static constexpr bool all_pairs_reachable = true;
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::box_crawler<Scalar>(); }
};

/// A test-only robot for dry friction and condim 4/6 contacts: a free box torso with a ball-jointed
/// head and four two-hinge legs on position servos, frictionloss on ten dofs, feet of condim 6, 4,
/// 3 and 1 (tests/reference/mujoco_friction_quad.xml).
struct friction_quad_case {
  using lean_dims = rlkernels::models::friction_quad_dims;
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;
  static constexpr const char* name = "friction_quad";
  static constexpr const char* xml = "mujoco_friction_quad.xml";
  static constexpr bool all_pairs_reachable = false;  // thigh-ramp and similar pairs need poses random motion seldom makes
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::friction_quad<Scalar>(); }
};

/// A test-only scene of three kinematic trees for friction-loss rows in constraint islands: a
/// two-hinge arm with frictionloss, a free ball (condim 6) and a free capsule with frictionloss on
/// its free joint (tests/reference/mujoco_friction_islands.xml).
struct friction_islands_case {
  using lean_dims = rlkernels::models::friction_islands_dims;
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;
  static constexpr const char* name = "friction_islands";
  static constexpr const char* xml = "mujoco_friction_islands.xml";
  static constexpr bool all_pairs_reachable = false;
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::friction_islands<Scalar>(); }
};

/// A test-only robot with one sensor of each kind the engine computes, on every kind of object
/// (tests/reference/mujoco_sensor_robot.xml: a free body, two hinges and a slide, four sites).
struct sensor_robot_case {
  using lean_dims = rlkernels::models::sensor_robot_dims;
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;
  static constexpr const char* name = "sensor_robot";
  static constexpr const char* xml = "mujoco_sensor_robot.xml";
  static constexpr bool all_pairs_reachable = false;
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::sensor_robot<Scalar>(); }
};

/// MuJoCo's sensors that the generator kept (the ones the engine computes), in order: the header's
/// sensor k is mjModel's sensor kept_sensors(m)[k].
inline std::vector<int> kept_sensors(const mjModel* m) {
  std::vector<int> kept;
  for (int i = 0; i < m->nsensor; ++i)
    if (m->sensor_type[i] != mjSENS_ACCELEROMETER && m->sensor_type[i] != mjSENS_TOUCH) kept.push_back(i);
  return kept;
}

/// InvertedPendulum-v5's cart-pole (two limited joints, RK4, no contacts).
struct inverted_pendulum_case {
  using lean_dims = rlkernels::models::inverted_pendulum_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "inverted_pendulum";
  static constexpr const char* xml = "inverted_pendulum.xml";
  static constexpr bool all_pairs_reachable = true;  // no pairs
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::inverted_pendulum<Scalar>(); }
};
/// InvertedDoublePendulum-v5's cart with two poles and a site at the tip (RK4, a limited slider).
struct inverted_double_pendulum_case {
  using lean_dims = rlkernels::models::inverted_double_pendulum_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "inverted_double_pendulum";
  static constexpr const char* xml = "inverted_double_pendulum.xml";
  static constexpr bool all_pairs_reachable = true;  // no pairs
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() {
    return rlkernels::models::inverted_double_pendulum<Scalar>();
  }
};

/// Swimmer-v5's three-link swimmer (fluid forces: density 4000, viscosity 0.1; RK4, two limited
/// hinges, no contacts).
struct swimmer_case {
  using lean_dims = rlkernels::models::swimmer_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "swimmer";
  static constexpr const char* xml = "swimmer.xml";
  static constexpr bool all_pairs_reachable = true;  // no pairs
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::swimmer<Scalar>(); }
};

/// Reacher-v5's two-link arm and its target: two kinematic trees (the target on two limited
/// slides), so a limit row makes a constraint island of 2 of the 4 dofs (RK4, no contacts).
struct reacher_case {
  using lean_dims = rlkernels::models::reacher_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "reacher";
  static constexpr const char* xml = "reacher.xml";
  static constexpr bool all_pairs_reachable = true;  // no pairs
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::reacher<Scalar>(); }
};

/// Pusher-v5's seven-joint arm, its object and its goal: three kinematic trees; the object (a
/// cylinder on two slides) rests on the table (plane-cylinder contacts) and the wrist's capsules
/// push it (capsule-cylinder: MuJoCo's GJK/EPA with multiCCD). Euler, no gravity.
struct pusher_case {
  using lean_dims = rlkernels::models::pusher_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "pusher";
  static constexpr const char* xml = "pusher_v5.xml";
  static constexpr bool all_pairs_reachable = true;  // random arm motion reaches the table and the object
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::pusher<Scalar>(); }
};

/// examples/my_robot's quadruped: a free joint, eight position servos (kp, kv), sphere feet and a
/// capsule torso on the floor, eight limited hinges (Euler with implicit damping).
struct my_robot_case {
  using lean_dims = rlkernels::models::my_robot_dims;  // the env kernels' workspace
  using dims = rlkernels::physics::dims_with_efc_terms<lean_dims>;  // keeps the rows' terms to compare
  static constexpr const char* name = "my_robot";
  static constexpr const char* xml = "my_robot.xml";
  static constexpr bool all_pairs_reachable = true;
  template <class Scalar>
  static rlkernels::physics::model<Scalar, dims> model() { return rlkernels::physics::rebind<dims>(lean_model<Scalar>()); }
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, lean_dims> lean_model() { return rlkernels::models::my_robot<Scalar>(); }
};

/// The smooth-dynamics constants of a compiled mjModel as a physics::model (what the generator
/// writes, for the fields the smooth stages, tendons and integrators read; no collision pairs),
/// so that the tests can take any MJCF string (ball joints, tendons) without a generated header.
/// Requires Dims to match the model's sizes.
template <class Dims>
std::unique_ptr<rlkernels::physics::model<double, Dims>> model_from_mujoco(const mjModel* m) {
  namespace ph = rlkernels::physics;
  REQUIRE(m->nq == Dims::nq);
  REQUIRE(m->nv == Dims::nv);
  REQUIRE(m->nu == Dims::nu);
  REQUIRE(m->nbody == Dims::nbody);
  REQUIRE(m->njnt == Dims::njnt);
  REQUIRE(m->ngeom == Dims::ngeom);
  REQUIRE(m->ntendon == ph::dims_ntendon<Dims>);
  REQUIRE(m->nwrap == ph::dims_nwrap<Dims>);
  auto o = std::make_unique<ph::model<double, Dims>>();
  ph::model<double, Dims>& r = *o;
  r.timestep = m->opt.timestep;
  for (int k = 0; k < 3; ++k) r.gravity[k] = m->opt.gravity[k];
  r.impratio = m->opt.impratio;
  r.tolerance = m->opt.tolerance;
  r.ls_tolerance = m->opt.ls_tolerance;
  r.o_margin = m->opt.o_margin;
  r.integrator = m->opt.integrator == mjINT_RK4 ? ph::integrator_kind::rk4 : ph::integrator_kind::euler;
  r.iterations = m->opt.iterations;
  r.ls_iterations = m->opt.ls_iterations;
  r.disableflags = m->opt.disableflags;
  r.enableflags = m->opt.enableflags;
  r.meaninertia = m->stat.meaninertia;
  for (int b = 0; b < m->nbody; ++b) {
    r.body_parentid[b] = m->body_parentid[b];
    r.body_rootid[b] = m->body_rootid[b];
    r.body_weldid[b] = m->body_weldid[b];
    r.body_jntnum[b] = m->body_jntnum[b];
    r.body_jntadr[b] = m->body_jntadr[b];
    r.body_dofnum[b] = m->body_dofnum[b];
    r.body_dofadr[b] = m->body_dofadr[b];
    r.body_sameframe[b] = m->body_sameframe[b];
    for (int k = 0; k < 3; ++k) {
      r.body_pos[b][k] = m->body_pos[3 * b + k];
      r.body_ipos[b][k] = m->body_ipos[3 * b + k];
      r.body_inertia[b][k] = m->body_inertia[3 * b + k];
    }
    for (int k = 0; k < 4; ++k) {
      r.body_quat[b][k] = m->body_quat[4 * b + k];
      r.body_iquat[b][k] = m->body_iquat[4 * b + k];
    }
    for (int k = 0; k < 2; ++k) r.body_invweight0[b][k] = m->body_invweight0[2 * b + k];
    r.body_mass[b] = m->body_mass[b];
    r.body_subtreemass[b] = m->body_subtreemass[b];
  }
  for (int j = 0; j < m->njnt; ++j) {
    r.jnt_type[j] = static_cast<ph::joint_type>(m->jnt_type[j]);
    r.jnt_qposadr[j] = m->jnt_qposadr[j];
    r.jnt_dofadr[j] = m->jnt_dofadr[j];
    r.jnt_bodyid[j] = m->jnt_bodyid[j];
    r.jnt_limited[j] = m->jnt_limited[j];
    r.jnt_actuatorid[j] = m->jnt_actuatorid[j];
    for (int k = 0; k < 3; ++k) {
      r.jnt_pos[j][k] = m->jnt_pos[3 * j + k];
      r.jnt_axis[j][k] = m->jnt_axis[3 * j + k];
    }
    for (int k = 0; k < 2; ++k) r.jnt_range[j][k] = m->jnt_range[2 * j + k];
    r.jnt_stiffness[j] = m->jnt_stiffness[j];
    r.jnt_margin[j] = m->jnt_margin[j];
    for (int k = 0; k < mjNREF; ++k) r.jnt_solref[j][k] = m->jnt_solref[mjNREF * j + k];
    for (int k = 0; k < mjNIMP; ++k) r.jnt_solimp[j][k] = m->jnt_solimp[mjNIMP * j + k];
  }
  for (int v = 0; v < m->nv; ++v) {
    r.dof_bodyid[v] = m->dof_bodyid[v];
    r.dof_jntid[v] = m->dof_jntid[v];
    r.dof_parentid[v] = m->dof_parentid[v];
    r.dof_armature[v] = m->dof_armature[v];
    r.dof_damping[v] = m->dof_damping[v];
    r.dof_invweight0[v] = m->dof_invweight0[v];
    r.dof_simplenum[v] = m->dof_simplenum[v];
    r.dof_M0[v] = m->dof_M0[v];
  }
  for (int i = 0; i < m->nq; ++i) {
    r.qpos0[i] = m->qpos0[i];
    r.qpos_spring[i] = m->qpos_spring[i];
  }
  for (int g = 0; g < m->ngeom; ++g) {
    r.geom_type_[g] = static_cast<ph::geom_type>(m->geom_type[g]);
    r.geom_bodyid[g] = m->geom_bodyid[g];
    r.geom_sameframe[g] = m->geom_sameframe[g];
    for (int k = 0; k < 3; ++k) {
      r.geom_pos[g][k] = m->geom_pos[3 * g + k];
      r.geom_size[g][k] = m->geom_size[3 * g + k];
    }
    for (int k = 0; k < 4; ++k) r.geom_quat[g][k] = m->geom_quat[4 * g + k];
  }
  for (int t = 0; t < m->ntendon; ++t) {
    r.tendon_adr[t] = m->tendon_adr[t];
    r.tendon_num[t] = m->tendon_num[t];
  }
  for (int w = 0; w < m->nwrap; ++w) {
    r.wrap_objid[w] = m->wrap_objid[w];
    r.wrap_prm[w] = m->wrap_prm[w];
  }
  for (int a = 0; a < m->nu; ++a) {
    r.actuator_trnid[a] = m->actuator_trnid[2 * a];
    r.actuator_ctrllimited[a] = m->actuator_ctrllimited[a];
    r.actuator_forcelimited[a] = m->actuator_forcelimited[a];
    r.actuator_gear[a] = m->actuator_gear[6 * a];
    r.actuator_gainprm[a] = m->actuator_gainprm[mjNGAIN * a];
    if constexpr (ph::dims_actuator_bias<Dims>)
      for (int k = 0; k < 3; ++k) r.actuator_biasprm[a][k] = m->actuator_biasprm[mjNBIAS * a + k];
    for (int k = 0; k < 2; ++k) {
      r.actuator_ctrlrange[a][k] = m->actuator_ctrlrange[2 * a + k];
      r.actuator_forcerange[a][k] = m->actuator_forcerange[2 * a + k];
    }
  }
  return o;
}

/// Copies qpos, qvel, ctrl, qacc_warmstart and time from our data into MuJoCo's.
template <class Scalar, class Dims>
void copy_state_to_mujoco(const rlkernels::physics::data<Scalar, Dims>& ours, const mjModel* m, mjData* d) {
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = double(ours.qpos[i]);
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = double(ours.qvel[i]);
  for (int i = 0; i < m->nv; ++i) d->qacc_warmstart[i] = double(ours.qacc_warmstart[i]);
  for (int i = 0; i < m->nu; ++i) d->ctrl[i] = double(ours.ctrl[i]);
  d->time = double(ours.time);
}

/// Copies qpos, qvel, ctrl, qacc_warmstart and time from MuJoCo's data into ours (the rest of
/// ours is zeroed first).
template <class Scalar, class Dims>
void copy_state_from_mujoco(const mjModel* m, const mjData* d, rlkernels::physics::data<Scalar, Dims>& ours) {
  ours = rlkernels::physics::data<Scalar, Dims>{};
  for (int i = 0; i < m->nq; ++i) ours.qpos[i] = Scalar(d->qpos[i]);
  for (int i = 0; i < m->nv; ++i) ours.qvel[i] = Scalar(d->qvel[i]);
  for (int i = 0; i < m->nv; ++i) ours.qacc_warmstart[i] = Scalar(d->qacc_warmstart[i]);
  for (int i = 0; i < m->nu; ++i) ours.ctrl[i] = Scalar(d->ctrl[i]);
  ours.time = Scalar(d->time);
}

/// Fills our data's inputs of the constraint stages (state, geom and body frames, subtree_com,
/// anchors and axes, cdof, qM, qfrc_smooth, qacc_smooth) from MuJoCo's data after mj_forward.
template <class Scalar, class Dims>
void fill_from_mujoco(const mjModel* m, const mjData* d, rlkernels::physics::data<Scalar, Dims>& ours) {
  copy_state_from_mujoco(m, d, ours);
  for (int g = 0; g < m->ngeom; ++g) {
    for (int k = 0; k < 3; ++k) ours.geom_xpos[g][k] = Scalar(d->geom_xpos[3 * g + k]);
    for (int k = 0; k < 9; ++k) ours.geom_xmat[g][k] = Scalar(d->geom_xmat[9 * g + k]);
  }
  for (int b = 0; b < m->nbody; ++b) {
    for (int k = 0; k < 3; ++k) ours.xpos[b][k] = Scalar(d->xpos[3 * b + k]);
    for (int k = 0; k < 9; ++k) ours.xmat[b][k] = Scalar(d->xmat[9 * b + k]);
    for (int k = 0; k < 3; ++k) ours.subtree_com[b][k] = Scalar(d->subtree_com[3 * b + k]);
  }
  for (int j = 0; j < m->njnt; ++j)
    for (int k = 0; k < 3; ++k) {
      ours.xanchor[j][k] = Scalar(d->xanchor[3 * j + k]);
      ours.xaxis[j][k] = Scalar(d->xaxis[3 * j + k]);
    }
  const int nv = m->nv;
  for (int i = 0; i < nv; ++i)
    for (int k = 0; k < 6; ++k) ours.cdof[i][k] = Scalar(d->cdof[6 * i + k]);
  std::unique_ptr<double[]> M(new double[nv * nv]);
  mj_fullM(m, d, M.get());
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nv; ++j) ours.qM[i][j] = Scalar(M[i * nv + j]);
  for (int i = 0; i < nv; ++i) {
    ours.qfrc_smooth[i] = Scalar(d->qfrc_smooth[i]);
    ours.qacc_smooth[i] = Scalar(d->qacc_smooth[i]);
  }
}

/// |a - b| / max(1, |b|): the error measure the physics tests report (absolute for small values,
/// relative for large ones).
inline double scaled_error(double a, double b) { return std::fabs(a - b) / std::fmax(1.0, std::fabs(b)); }

/// Max scaled_error over n values.
inline double max_scaled_error(const double* a, const double* b, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) e = std::fmax(e, std::isnan(a[i]) != std::isnan(b[i]) ? INFINITY : scaled_error(a[i], b[i]));
  return e;
}

/// The mjModel geoms a generated header keeps, in order (header geom k is mjModel geom
/// kept_geoms(m)[k]): all but the visual-only ones (contype = conaffinity = 0) that are not planes,
/// spheres, capsules or boxes, which scripts/mjcf_to_header.py drops.
inline std::vector<int> kept_geoms(const mjModel* m) {
  std::vector<int> kept;
  for (int g = 0; g < m->ngeom; ++g) {
    const int t = m->geom_type[g];
    const bool supported = t == mjGEOM_PLANE || t == mjGEOM_SPHERE || t == mjGEOM_CAPSULE || t == mjGEOM_BOX;
    if (supported || m->geom_contype[g] != 0 || m->geom_conaffinity[g] != 0) kept.push_back(g);
  }
  return kept;
}

/// MuJoCo's Newton steps in the last forward pass, summed over its constraint islands (what
/// physics::data::solver_niter counts).
inline int mj_solver_niter(const mjData* d) {
  int n = 0;
  for (int i = 0; i < std::min(std::max(d->nisland, 1), mjNISLAND); ++i) n += d->solver_niter[i];
  return n;
}

/// MuJoCo's line-search evaluations in the last forward pass, summed over its islands' Newton
/// steps (what physics::data::solver_neval counts).
inline int mj_solver_neval(const mjData* d) {
  int n = 0;
  for (int i = 0; i < std::min(std::max(d->nisland, 1), mjNISLAND); ++i)
    for (int k = 0; k < std::min(d->solver_niter[i], mjNSOLVER); ++k) n += d->solver[i * mjNSOLVER + k].neval;
  return n;
}

/// A small deterministic generator for test inputs (splitmix64 -> uniform doubles).
struct test_rng {
  std::uint64_t state;
  explicit test_rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
};

}  // namespace rlk_test
