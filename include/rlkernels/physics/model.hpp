// rlkernels/physics/model.hpp
// The constants of one articulated-body model, as MuJoCo's compiler leaves them in an mjModel, for
// the subset of MJCF the engine supports (free, ball, hinge and slide joints, planes, spheres and
// capsules, fixed tendons, motor actuators on joints, soft contacts and joint limits). A model is a plain value: arrays sized
// at compile time by a `Dims` type, no pointers, so it can live in an env's Params and be passed by
// value into a CUDA kernel. Models are generated from MJCF by scripts/mjcf_to_header.py (never
// written by hand); field names and layouts follow mjModel's, so every value can be compared with
// the compiled mjModel one to one.
#pragma once

#include "../core/config.hpp"

#include <cstring>
#include <type_traits>

namespace rlkernels {
namespace physics {

/// Joint types, numbered as MuJoCo's mjtJoint. A free joint has 7 qpos (position, then the
/// orientation quaternion w, x, y, z) and 6 dofs (linear velocity in the world frame, then angular
/// velocity in the body frame); a ball joint 4 qpos (a quaternion) and 3 dofs (angular velocity in
/// the body frame); hinge and slide joints one of each.
enum class joint_type : int { free = 0, ball = 1, slide = 2, hinge = 3 };

/// Geom types, numbered as MuJoCo's mjtGeom (the subset the collision functions support).
enum class geom_type : int { plane = 0, sphere = 2, capsule = 3, cylinder = 5, box = 6 };

/// Integrators, numbered as MuJoCo's mjtIntegrator (implicit ones are not supported).
enum class integrator_kind : int { euler = 0, rk4 = 1 };

/// Constraint solvers, numbered as MuJoCo's mjtSolver: the dual projected Gauss-Seidel (PGS) and
/// the primal Newton solver are implemented; CG is not (the generator refuses it).
enum class solver_kind : int { pgs = 0, cg = 1, newton = 2 };

/// Constraint row types, numbered as MuJoCo's mjtConstraint (the supported ones: dry friction of
/// a dof, joint limits, condim-1 contacts, and condim 3, 4 and 6 contacts with the pyramidal cone).
enum class constraint_type : int { friction_dof = 1, limit_joint = 3, contact_frictionless = 5, contact_pyramidal = 6 };

/// Constraint row states, numbered as MuJoCo's mjtConstraintState (the ones the supported rows
/// take: a friction-loss row is quadratic inside its Huber zone, else linear at -/+ its bound).
enum constraint_state : int { state_satisfied = 0, state_quadratic = 1, state_linear_neg = 2, state_linear_pos = 3 };

/// Bits of model::disableflags, numbered as MuJoCo's mjtDisableBit (the ones the engine honours).
enum disable_bits : int {
  disable_constraint = 1 << 0,  ///< the whole constraint stage (no contacts, no rows)
  disable_frictionloss = 1 << 2,  ///< dof friction-loss rows
  disable_limit = 1 << 3,       ///< joint limit rows
  disable_contact = 1 << 4,     ///< contacts
  disable_spring = 1 << 5,      ///< joint springs (passive)
  disable_damper = 1 << 6,      ///< dof dampers (passive, and Euler's implicit damping)
  disable_gravity = 1 << 7,     ///< gravity (the base acceleration of the bias forces)
  disable_clampctrl = 1 << 8,   ///< clamping ctrl to ctrlrange
  disable_warmstart = 1 << 9,   ///< the solver's warm start (it starts from qacc_smooth)
  disable_actuation = 1 << 11,  ///< actuator forces
  disable_refsafe = 1 << 12,    ///< raising a standard solref[0] to at least 2*timestep
  disable_eulerdamp = 1 << 15,  ///< Euler's implicit treatment of damping
  disable_autoreset = 1 << 16,  ///< resetting the data on a bad qpos/qvel/qacc
  disable_sensor = 1 << 13,     ///< sensors (sensordata is then left as it was)
  disable_island = 1 << 18      ///< constraint islands (the solver then scales its tolerances by meaninertia*nv, not the island's trace of M)
};

/// MuJoCo's mjtSameFrame: how a frame relates to its body's frames (the kinematics copy instead
/// of computing when a frame coincides, exactly as MuJoCo does).
enum sameframe : int {
  sameframe_none = 0,        ///< no alignment: compute position and orientation
  sameframe_body = 1,        ///< same as the body frame
  sameframe_inertia = 2,     ///< same as the body's inertial frame
  sameframe_bodyrot = 3,     ///< orientation of the body frame, own position
  sameframe_inertiarot = 4   ///< orientation of the inertial frame, own position
};

namespace detail {
template <class Dims, class = void>
struct dims_ntendon { static constexpr int ntendon = 0, nwrap = 0; };
template <class Dims>
struct dims_ntendon<Dims, decltype(void(Dims::ntendon + Dims::nwrap))> {
  static constexpr int ntendon = Dims::ntendon, nwrap = Dims::nwrap;
};
}  // namespace detail

/// Fixed tendons (ntendon) and their joint entries (nwrap) of a Dims type: its `ntendon` and
/// `nwrap` members, or 0 and 0 for a Dims written before tendons existed.
template <class Dims>
constexpr int dims_ntendon = detail::dims_ntendon<Dims>::ntendon;
/// See dims_ntendon: the Dims type's `nwrap`, or 0.
template <class Dims>
constexpr int dims_nwrap = detail::dims_ntendon<Dims>::nwrap;

namespace detail {
template <class Dims, class = void>
struct dims_nsite_of { static constexpr int value = 0; };
template <class Dims>
struct dims_nsite_of<Dims, decltype(void(Dims::nsite))> { static constexpr int value = Dims::nsite; };
}  // namespace detail

/// Sites (frames fixed in bodies, MJCF's `<site>`) of a Dims type: its `nsite` member, or 0 for a
/// Dims without one. A model with sites has their frames in the workspace (data::site_xpos,
/// data::site_xmat) after the position stage; a model without has no site arrays at all.
template <class Dims>
constexpr int dims_nsite = detail::dims_nsite_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_nsensor_of {
  static constexpr int nsensor = 0;
  static constexpr int nsensordata = 0;
};
template <class Dims>
struct dims_nsensor_of<Dims, decltype(void(Dims::nsensor))> {
  static constexpr int nsensor = Dims::nsensor;
  static constexpr int nsensordata = Dims::nsensordata;
};
}  // namespace detail

/// Sensors of a Dims type: its `nsensor` member (with `nsensordata`, the length of sensordata),
/// which the generator writes for a model with sensors of the supported kinds (physics/sensor.hpp),
/// or 0. A model with sensors carries their constants (sensor_type, ..., sensor_cutoff) and its
/// workspace data::sensordata, filled by the forward pass as MuJoCo's mj_sensorPos and
/// mj_sensorVel fill mjData's.
template <class Dims>
constexpr int dims_nsensor = detail::dims_nsensor_of<Dims>::nsensor;
/// See dims_nsensor: the Dims type's `nsensordata`, or 0.
template <class Dims>
constexpr int dims_nsensordata = detail::dims_nsensor_of<Dims>::nsensordata;

/// Sensor kinds, numbered as MuJoCo's mjtSensor (the ones the engine computes).
enum sensor_kind : int {
  sensor_velocimeter = 2,     ///< a site's linear velocity in its frame (3)
  sensor_gyro = 3,            ///< a site's angular velocity in its frame (3)
  sensor_jointpos = 9,        ///< a hinge or slide joint's position (1)
  sensor_jointvel = 10,       ///< its velocity (1)
  sensor_framepos = 26,       ///< an object's position, world frame (3)
  sensor_framequat = 27,      ///< its orientation quaternion (4)
  sensor_framexaxis = 28,     ///< its frame's x axis in the world (3)
  sensor_frameyaxis = 29,     ///< y axis (3)
  sensor_framezaxis = 30,     ///< z axis (3)
  sensor_framelinvel = 31,    ///< its linear velocity, world frame (3)
  sensor_frameangvel = 32,    ///< its angular velocity, world frame (3)
  sensor_subtreecom = 35,     ///< a body's subtree centre of mass (3)
  sensor_subtreelinvel = 36,  ///< its centre-of-mass velocity (3)
  sensor_clock = 45           ///< the simulation time (1)
};

/// Object kinds a sensor reads, numbered as MuJoCo's mjtObj.
enum object_kind : int {
  object_body = 1,   ///< a body's inertial frame (xipos, ximat)
  object_xbody = 2,  ///< a body's own frame (xpos, xmat)
  object_geom = 5,   ///< a geom's frame
  object_site = 6    ///< a site's frame
};

namespace detail {
template <class Dims, class = void>
struct dims_fluid_of { static constexpr bool value = false; };
template <class Dims>
struct dims_fluid_of<Dims, decltype(void(Dims::fluid))> { static constexpr bool value = Dims::fluid != 0; };
}  // namespace detail

/// True when a Dims type declares fluid forces (`static constexpr int fluid = 1`, as the generator
/// writes for a model whose `<option>` sets density, viscosity or wind): only then does the model
/// carry mjOption's density, viscosity and wind and the passive stage compute MuJoCo's inertia-box
/// fluid model. A Dims without `fluid` has none.
template <class Dims>
constexpr bool dims_fluid = detail::dims_fluid_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_actuator_bias_of { static constexpr bool value = false; };
template <class Dims>
struct dims_actuator_bias_of<Dims, decltype(void(Dims::actuator_bias))> {
  static constexpr bool value = Dims::actuator_bias != 0;
};
}  // namespace detail

/// True when a Dims type declares actuators with an affine bias (`static constexpr int
/// actuator_bias = 1`, as the generator writes for a model with position or velocity servos or
/// `<general biastype="affine">`): only then does the model carry actuator_biasprm and the
/// actuation add bias = biasprm[0] + biasprm[1] * length + biasprm[2] * velocity to each force.
template <class Dims>
constexpr bool dims_actuator_bias = detail::dims_actuator_bias_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_ntree_of { static constexpr int value = 1; };
template <class Dims>
struct dims_ntree_of<Dims, decltype(void(Dims::ntree))> { static constexpr int value = Dims::ntree; };
}  // namespace detail

/// The number of kinematic trees (mjModel's ntree: the subtrees under the world body that have
/// degrees of freedom) of a Dims type: its `ntree` member, which the generator writes only when
/// it is above 1, or 1. With several trees the model carries body_treeid and dof_treeid, and the
/// Newton solver splits the rows into constraint islands as MuJoCo's mj_island does.
template <class Dims>
constexpr int dims_ntree = detail::dims_ntree_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_ccd_iterations_of { static constexpr int value = 0; };
template <class Dims>
struct dims_ccd_iterations_of<Dims, decltype(void(Dims::ccd_iterations))> {
  static constexpr int value = Dims::ccd_iterations;
};
}  // namespace detail

/// The iterations of the general convex collider (mjOption's ccd_iterations) of a Dims type: its
/// `ccd_iterations` member, which the generator writes only for a model with a pair that MuJoCo
/// sends to its GJK/EPA collider (capsule-cylinder, cylinder-cylinder), or 0 for none. It bounds
/// GJK's and EPA's iterations and sizes EPA's polytope (5 + N vertices, 6 N faces) on the stack;
/// with it the model carries ccd_tolerance.
template <class Dims>
constexpr int dims_ccd_iterations = detail::dims_ccd_iterations_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_frictionloss_of { static constexpr bool value = false; };
template <class Dims>
struct dims_frictionloss_of<Dims, decltype(void(Dims::frictionloss))> {
  static constexpr bool value = Dims::frictionloss != 0;
};
template <class Dims, class = void>
struct dims_max_condim_of { static constexpr int value = 3; };
template <class Dims>
struct dims_max_condim_of<Dims, decltype(void(Dims::max_condim))> {
  static constexpr int value = Dims::max_condim;
};
}  // namespace detail

/// True when a Dims type declares dry friction on dofs (`static constexpr int frictionloss = 1`, as
/// the generator writes for a model with a joint whose `frictionloss` is > 0): only then does the
/// model carry dof_frictionloss, dof_solref and dof_solimp and the constraint stage make MuJoCo's
/// friction-loss rows (mjCNSTR_FRICTION_DOF: one per dof with friction loss, before the limits,
/// Huber cost in Newton, box bounds in PGS).
template <class Dims>
constexpr bool dims_frictionloss = detail::dims_frictionloss_of<Dims>::value;

/// The largest condim a contact of a Dims type's model can have: its `max_condim` member (4 or 6),
/// which the generator writes only for a model with a pair that mixes to condim 4 (torsional
/// friction) or 6 (torsional and rolling), else 3. Above 3 the constraint stage also computes
/// the contacts' rotational Jacobians (2 (condim - 1) pyramid edges: 6 rows for condim 4, 10 for 6).
template <class Dims>
constexpr int dims_max_condim = detail::dims_max_condim_of<Dims>::value;

namespace detail {
template <class Dims, class = void>
struct dims_solver { static constexpr int value = 2; };
template <class Dims>
struct dims_solver<Dims, decltype(void(Dims::solver))> { static constexpr int value = Dims::solver; };
}  // namespace detail

/// True when a Dims type declares the PGS solver (`static constexpr int solver = 0`, mjtSolver's
/// number, as the generator writes for a PGS model): only then does the workspace make room for
/// PGS's nefc x nefc matrix. A Dims without `solver` is a Newton model's.
template <class Dims>
constexpr bool dims_pgs = detail::dims_solver<Dims>::value == 0;

/// @brief Checks a Dims type: the compile-time sizes of a model, as the generator writes them:
/// @code
/// struct hopper_dims {
///   static constexpr int nq = 6, nv = 6, nu = 3, nbody = 5, njnt = 6, ngeom = 5;  // mjModel's sizes
///   static constexpr int npair = 7;  // candidate geom pairs (after contype/conaffinity/parent filters)
///   static constexpr int ncon = 6;   // contact slots (at most the sum over pairs of pair_maxcon)
///   static constexpr int nefc = 20;  // constraint-row slots (at most 2 per limited joint + each contact slot's rows)
///   static constexpr int ntendon = 0, nwrap = 0;  // fixed tendons and their joint entries (optional members)
/// };
/// @endcode
/// The generator writes one member a line, each with its comment; ncon and nefc are capacities
/// (`--max-contacts`, `--max-rows`: docs/physics.md). A Dims type holds only these `static constexpr int` members (and, for a PGS model, `solver`:
/// see dims_pgs); every size is > 0 except npair, ncon, nefc, which may be 0 (the arrays then have
/// one unused element).
///
/// model<Scalar, Dims> instantiates this check: a Dims with nq, nv, njnt or ngeom <= 0, no body
/// besides the world, or a negative nu, npair, ncon or nefc fails to compile with a message.
/// @tparam Dims the sizes
template <class Dims>
struct dims_check {
  static_assert(Dims::nq > 0 && Dims::nv > 0 && Dims::nbody > 1 && Dims::njnt > 0 && Dims::ngeom > 0,
                "rlkernels::physics: a model needs nq, nv, njnt, ngeom > 0 and a body besides the world");
  static_assert(Dims::nu >= 0 && Dims::npair >= 0 && Dims::ncon >= 0 && Dims::nefc >= 0,
                "rlkernels::physics: nu, npair, ncon and nefc must be >= 0");
  static constexpr bool value = true;  ///< true (instantiating the struct is the check)
};

namespace detail {
/// Array length for a size that may be 0 (C++ has no zero-length arrays).
constexpr int at_least_one(int n) { return n > 0 ? n : 1; }
}  // namespace detail

namespace detail {
/// The site constants of a model with NSite > 0 sites (mjModel's site_* fields); empty for none.
template <class Scalar, int NSite>
struct model_sites {
  int site_bodyid[NSite];      ///< body the site is fixed in
  int site_sameframe[NSite];   ///< mjModel's site_sameframe: site frame vs body frames (sameframe)
  Scalar site_pos[NSite][3];   ///< position in the body frame
  Scalar site_quat[NSite][4];  ///< orientation in the body frame (w, x, y, z)
};
template <class Scalar>
struct model_sites<Scalar, 0> {};

/// mjOption's medium of a model with fluid forces (dims_fluid); empty for none.
template <class Scalar, bool Fluid>
struct model_fluid {
  Scalar density;    ///< opt.density: density of the medium (inertia-box model's drag)
  Scalar viscosity;  ///< opt.viscosity: viscosity of the medium (Stokes drag of the equivalent sphere)
  Scalar wind[3];    ///< opt.wind: velocity of the medium (world frame)
};
template <class Scalar>
struct model_fluid<Scalar, false> {};

/// The affine bias of the actuators of a model with dims_actuator_bias; empty for none.
template <class Scalar, int NU, bool Bias>
struct model_actuator_bias {
  /// mjModel's biasprm[0..2] of each actuator: bias = [0] + [1] * length + [2] * velocity (a
  /// position servo has [0, -kp, -kv], a velocity servo [0, 0, -kv]; 0 for a motor)
  Scalar actuator_biasprm[NU][3];
};
template <class Scalar, int NU>
struct model_actuator_bias<Scalar, NU, false> {};

/// The tree ids of a model with NTree > 1 kinematic trees (mjModel's body_treeid, dof_treeid);
/// empty for one tree.
template <int NTree, int NBody, int NV>
struct model_trees {
  int body_treeid[NBody];  ///< kinematic tree of the body, -1 for a static body (welded to the world)
  int dof_treeid[NV];      ///< kinematic tree of the dof
};
template <int NBody, int NV>
struct model_trees<1, NBody, NV> {};

/// The sensor constants of a model with NSensor > 0 sensors (mjModel's sensor_* fields for the
/// supported kinds); empty for none.
template <class Scalar, int NSensor>
struct model_sensors {
  int sensor_type[NSensor];      ///< sensor_kind (mjtSensor)
  int sensor_datatype[NSensor];  ///< mjtDataType: 0 real, 1 positive, 2 axis, 3 quaternion (the cutoff applies to 0 and 1)
  int sensor_objtype[NSensor];   ///< object_kind of the object read (joint sensors: mjOBJ_JOINT, 3)
  int sensor_objid[NSensor];     ///< the object's id
  int sensor_reftype[NSensor];   ///< object_kind of the reference frame of a frame sensor (0 and refid -1: the world)
  int sensor_refid[NSensor];     ///< the reference frame's object id, -1 for the world frame
  int sensor_dim[NSensor];       ///< values it writes
  int sensor_adr[NSensor];       ///< its first value in data::sensordata
  Scalar sensor_cutoff[NSensor]; ///< cutoff (0: none)
};
template <class Scalar>
struct model_sensors<Scalar, 0> {};

/// mjOption's tolerance of the general convex collider of a model with convex pairs
/// (dims_ccd_iterations > 0); empty for none.
template <class Scalar, bool Convex>
struct model_ccd {
  Scalar ccd_tolerance;  ///< opt.ccd_tolerance: GJK's and EPA's convergence tolerance
};
template <class Scalar>
struct model_ccd<Scalar, false> {};

/// The dry friction of the dofs of a model with dims_frictionloss (mjModel's dof_frictionloss,
/// dof_solref, dof_solimp: the joint's frictionloss, solreffriction, solimpfriction); empty for none.
template <class Scalar, int NV, bool FrictionLoss>
struct model_frictionloss {
  Scalar dof_frictionloss[NV];  ///< the most force (or torque) the dof's dry friction can exert (0: none, no row)
  Scalar dof_solref[NV][2];     ///< solref of its friction-loss row
  Scalar dof_solimp[NV][5];     ///< solimp of its friction-loss row
};
template <class Scalar, int NV>
struct model_frictionloss<Scalar, NV, false> {};
}  // namespace detail

/// @brief The constants of one model (MuJoCo's mjModel fields for the supported subset, same names,
/// same units, same layout; body 0 is the world). Generated, trivially copyable.
/// @tparam Scalar float or double: the type the engine computes in (the generator writes the
///         values as double literals; float models round them once)
/// @tparam Dims the sizes (see dims_check)
template <class Scalar, class Dims>
struct model : detail::model_sites<Scalar, dims_nsite<Dims>>,
               detail::model_fluid<Scalar, dims_fluid<Dims>>,
               detail::model_actuator_bias<Scalar, detail::at_least_one(Dims::nu), dims_actuator_bias<Dims>>,
               detail::model_trees<dims_ntree<Dims>, Dims::nbody, Dims::nv>,
               detail::model_ccd<Scalar, (dims_ccd_iterations<Dims> > 0)>,
               detail::model_sensors<Scalar, dims_nsensor<Dims>>,
               detail::model_frictionloss<Scalar, Dims::nv, dims_frictionloss<Dims>> {
  static_assert(dims_check<Dims>::value, "");
  static_assert(dims_max_condim<Dims> == 3 || dims_max_condim<Dims> == 4 || dims_max_condim<Dims> == 6,
                "rlkernels::physics: max_condim must be 3, 4 or 6");
  using scalar_type = Scalar;  ///< the engine's number type
  using dims = Dims;           ///< the sizes
  static constexpr int nq = Dims::nq;        ///< position coordinates
  static constexpr int nv = Dims::nv;        ///< degrees of freedom
  static constexpr int nu = Dims::nu;        ///< actuators (controls)
  static constexpr int nbody = Dims::nbody;  ///< bodies, the world (body 0) included
  static constexpr int njnt = Dims::njnt;    ///< joints
  static constexpr int ngeom = Dims::ngeom;  ///< geoms
  static constexpr int npair = Dims::npair;  ///< candidate collision pairs
  static constexpr int ncon = Dims::ncon;    ///< contact slots
  static constexpr int nefc = Dims::nefc;    ///< constraint-row slots
  static constexpr int ntendon = dims_ntendon<Dims>;  ///< fixed tendons
  static constexpr int nwrap = dims_nwrap<Dims>;      ///< joint entries of the fixed tendons
  static constexpr int nsite = dims_nsite<Dims>;      ///< sites (their constants: site_bodyid, site_sameframe, site_pos, site_quat, when > 0)
  static constexpr bool fluid = dims_fluid<Dims>;     ///< fluid forces (the constants density, viscosity, wind, when true)
  static constexpr bool actuator_bias = dims_actuator_bias<Dims>;  ///< actuators with an affine bias (actuator_biasprm, when true)
  static constexpr int ntree = dims_ntree<Dims>;      ///< kinematic trees (body_treeid, dof_treeid, when > 1)
  static constexpr int ccd_iterations = dims_ccd_iterations<Dims>;  ///< the convex collider's iterations (ccd_tolerance, when > 0)
  static constexpr int nsensor = dims_nsensor<Dims>;          ///< sensors (their constants, and data::sensordata, when > 0)
  static constexpr int nsensordata = dims_nsensordata<Dims>;  ///< values of all sensors (data::sensordata's length)
  static constexpr bool frictionloss = dims_frictionloss<Dims>;  ///< dry friction on dofs (dof_frictionloss, dof_solref, dof_solimp, when true)
  static constexpr int max_condim = dims_max_condim<Dims>;       ///< the largest contact condim (3, 4 or 6)
  static constexpr int nu_ = detail::at_least_one(nu);            ///< length of the actuator arrays: max(nu, 1)
  static constexpr int npair_ = detail::at_least_one(npair);      ///< length of the pair arrays: max(npair, 1)
  static constexpr int ntendon_ = detail::at_least_one(ntendon);  ///< length of the tendon arrays: max(ntendon, 1)
  static constexpr int nwrap_ = detail::at_least_one(nwrap);      ///< length of the wrap arrays: max(nwrap, 1)

  // ---- mjOption ----
  Scalar timestep;           ///< opt.timestep (s)
  Scalar gravity[3];         ///< opt.gravity
  Scalar impratio;           ///< opt.impratio (pyramidal cone: scales the friction rows' regularizer)
  Scalar tolerance;          ///< opt.tolerance (stop when the scaled improvement, or for Newton the gradient, is below)
  Scalar ls_tolerance;       ///< opt.ls_tolerance
  Scalar o_margin;           ///< opt.o_margin (unused unless the override flag is set; generator refuses it)
  integrator_kind integrator;  ///< opt.integrator
  solver_kind solver;        ///< opt.solver (pgs or newton)
  int iterations;            ///< opt.iterations (solver iterations, at most)
  int ls_iterations;         ///< opt.ls_iterations (line-search iterations, at most)
  int disableflags;          ///< opt.disableflags (mjtDisableBit)
  int enableflags;           ///< opt.enableflags (mjtEnableBit; the generator refuses any it does not support)
  Scalar meaninertia;        ///< stat.meaninertia (scales the solver's tolerances)

  // ---- bodies (nbody; body 0 = world) ----
  int body_parentid[nbody];   ///< parent body
  int body_rootid[nbody];     ///< top-level ancestor below the world
  int body_weldid[nbody];     ///< the body this one is welded to (no joints in between)
  int body_jntnum[nbody];     ///< joints of the body
  int body_jntadr[nbody];     ///< first joint (-1 if none)
  int body_dofnum[nbody];     ///< degrees of freedom of the body
  int body_dofadr[nbody];     ///< first dof (-1 if none)
  Scalar body_pos[nbody][3];      ///< position in the parent frame
  Scalar body_quat[nbody][4];     ///< orientation in the parent frame (w, x, y, z)
  Scalar body_ipos[nbody][3];     ///< centre of mass in the body frame
  Scalar body_iquat[nbody][4];    ///< principal-axes frame of inertia in the body frame
  Scalar body_mass[nbody];        ///< mass
  Scalar body_inertia[nbody][3];  ///< principal moments of inertia
  Scalar body_invweight0[nbody][2];  ///< mean inverse inertia at qpos0 (translation, rotation)
  int body_sameframe[nbody];      ///< mjModel's body_sameframe: inertial frame vs body frame (sameframe)
  Scalar body_subtreemass[nbody]; ///< mass of the subtree rooted at the body (the compiler's sum)

  // ---- joints (njnt) ----
  joint_type jnt_type[Dims::njnt];  ///< free, ball, hinge or slide
  int jnt_qposadr[Dims::njnt];      ///< first qpos coordinate
  int jnt_dofadr[Dims::njnt];       ///< first dof
  int jnt_bodyid[Dims::njnt];       ///< body the joint moves
  int jnt_limited[Dims::njnt];      ///< 1 if the joint has a range constraint (hinge and slide only)
  int jnt_actuatorid[Dims::njnt];   ///< mjModel's jnt_actuatorid (-1 unless an actuator contributes damping/armature)
  Scalar jnt_pos[Dims::njnt][3];    ///< anchor in the body frame
  Scalar jnt_axis[Dims::njnt][3];   ///< axis in the body frame
  Scalar jnt_range[Dims::njnt][2];  ///< range (rad or m), when limited
  Scalar jnt_stiffness[Dims::njnt]; ///< spring stiffness (towards qpos_spring)
  Scalar jnt_margin[Dims::njnt];    ///< limit margin (a limit row is active when dist < margin)
  Scalar jnt_solref[Dims::njnt][2]; ///< solref of the limit
  Scalar jnt_solimp[Dims::njnt][5]; ///< solimp of the limit

  // ---- degrees of freedom (nv) ----
  int dof_bodyid[nv];         ///< body of the dof
  int dof_jntid[nv];          ///< joint of the dof
  int dof_parentid[nv];       ///< previous dof in the tree (-1 at a root)
  Scalar dof_armature[nv];    ///< armature inertia added to M's diagonal
  Scalar dof_damping[nv];     ///< viscous damping
  Scalar dof_invweight0[nv];  ///< diagonal of M^-1 at qpos0 (for diagApprox of limit rows)
  int dof_simplenum[nv];      ///< consecutive simple dofs from this one (MuJoCo: M(i,i) = dof_M0, no coupling)
  Scalar dof_M0[nv];          ///< diagonal of M at qpos0 (used for simple dofs)

  Scalar qpos0[nq];        ///< reference configuration (joint angle offsets are measured from it)
  Scalar qpos_spring[nq];  ///< spring rest positions

  // ---- geoms (ngeom) ----
  geom_type geom_type_[Dims::ngeom];  ///< mjModel's geom_type (trailing _: the enum has the name)
  int geom_bodyid[Dims::ngeom];       ///< body the geom is attached to
  int geom_contype[Dims::ngeom];      ///< contact type bits
  int geom_conaffinity[Dims::ngeom];  ///< contact affinity bits
  int geom_condim[Dims::ngeom];       ///< contact dimensionality (1, 3, 4 or 6; at most dims_max_condim)
  int geom_priority[Dims::ngeom];     ///< contact parameter priority
  Scalar geom_solmix[Dims::ngeom];    ///< solref/solimp mixing weight
  Scalar geom_solref[Dims::ngeom][2]; ///< contact solref
  Scalar geom_solimp[Dims::ngeom][5]; ///< contact solimp
  Scalar geom_margin[Dims::ngeom];    ///< contact margin
  Scalar geom_gap[Dims::ngeom];       ///< contact gap
  Scalar geom_friction[Dims::ngeom][3];  ///< sliding, torsional, rolling friction
  Scalar geom_size[Dims::ngeom][3];   ///< plane: half sizes (0 = infinite); sphere: radius; capsule: radius, half length
  Scalar geom_pos[Dims::ngeom][3];    ///< position in the body frame
  Scalar geom_quat[Dims::ngeom][4];   ///< orientation in the body frame
  int geom_sameframe[Dims::ngeom];    ///< mjModel's geom_sameframe: geom frame vs body frames (sameframe)

  // ---- candidate collision pairs (generated: MuJoCo's broadphase filters applied to all geom pairs) ----
  int pair_geom1[npair_];   ///< first geom (MuJoCo's order: the geom with the lower type first, as mj_collision orders them)
  int pair_geom2[npair_];   ///< second geom
  int pair_maxcon[npair_];  ///< contact slots the pair's collision function can fill (plane-sphere 1, plane-capsule 2, capsule-capsule 2)
  int pair_conadr[npair_];  ///< first contact slot of the pair

  // ---- fixed tendons (ntendon): length = sum of coef * qpos over the tendon's joints ----
  int tendon_adr[ntendon_];   ///< first entry of the tendon in wrap_*
  int tendon_num[ntendon_];   ///< entries of the tendon
  int wrap_objid[nwrap_];     ///< joint of the entry (a hinge or slide)
  Scalar wrap_prm[nwrap_];    ///< coefficient of the entry

  // ---- actuators (nu): motors on joints (gaintype fixed, biastype none, dyntype none) ----
  int actuator_trnid[nu_];           ///< joint the actuator drives
  int actuator_ctrllimited[nu_];     ///< 1 if ctrl is clamped to ctrlrange
  int actuator_forcelimited[nu_];    ///< 1 if the force is clamped to forcerange
  Scalar actuator_gear[nu_];         ///< gear[0] (the joint transmission's moment)
  Scalar actuator_gainprm[nu_];      ///< gainprm[0] (force = gainprm[0] * ctrl for a motor)
  Scalar actuator_ctrlrange[nu_][2]; ///< control range
  Scalar actuator_forcerange[nu_][2];///< force range
};

/// @brief Dims with other contact and constraint-row capacities: the workspace (physics::data)
/// holds `NCon` contacts and `NEfc` rows instead of Dims' own. A step that would need more sets
/// warning_contact_full or warning_efc_full (and an env ends the episode and counts it); below
/// the capacities the results are the same bits as with any larger ones.
template <class Dims, int NCon, int NEfc>
struct dims_with_capacity : Dims {
  static_assert(NCon >= 0 && NEfc >= 0, "rlkernels::physics::dims_with_capacity: capacities must be >= 0");
  static constexpr int ncon = NCon;  ///< contact capacity
  static constexpr int nefc = NEfc;  ///< constraint-row capacity
};

namespace detail {
template <class Dims, class = void>
struct full_capacity_of {  // Dims without ncon_full / nefc_full: its capacities are already full
  static constexpr int ncon = Dims::ncon;
  static constexpr int nefc = Dims::nefc;
};
template <class Dims>
struct full_capacity_of<Dims, std::void_t<decltype(Dims::ncon_full), decltype(Dims::nefc_full)>> {
  static constexpr int ncon = Dims::ncon > Dims::ncon_full ? Dims::ncon : Dims::ncon_full;
  static constexpr int nefc = Dims::nefc > Dims::nefc_full ? Dims::nefc : Dims::nefc_full;
};
}  // namespace detail

/// @brief Dims with room for every contact the candidate pairs can make and every row they and
/// the model can need, so that no step overflows: Dims itself where its capacities are already
/// those (the generator writes `ncon_full` and `nefc_full` into a Dims only when --max-contacts or
/// --max-rows set smaller capacities), dims_with_capacity<Dims, ncon_full, nefc_full> otherwise.
/// E.g. `rlkernels::humanoid<float, true, true, true, true, true,
/// physics::dims_full_capacity<models::humanoid_dims>>` (190 contacts, 311 rows instead of 16 and 36).
template <class Dims>
using dims_full_capacity =
    std::conditional_t<detail::full_capacity_of<Dims>::ncon == Dims::ncon && detail::full_capacity_of<Dims>::nefc == Dims::nefc,
                       Dims, dims_with_capacity<Dims, detail::full_capacity_of<Dims>::ncon, detail::full_capacity_of<Dims>::nefc>>;

/// @brief Dims whose workspace has room for the PGS solver (see dims_pgs), so that a Newton
/// model can be switched to PGS (`m.solver = solver_kind::pgs` on rebind<dims_with_pgs<Dims>>(m)).
template <class Dims>
struct dims_with_pgs : Dims {
  static constexpr int solver = 0;  ///< mjtSolver's mjSOL_PGS
};

namespace detail {
template <class Dims, class = void>
struct dims_efc_terms { static constexpr bool value = false; };
template <class Dims>
struct dims_efc_terms<Dims, decltype(void(Dims::efc_terms))> { static constexpr bool value = Dims::efc_terms; };
}  // namespace detail

/// True when a Dims type asks the workspace to keep the intermediate terms of the constraint rows
/// (`static constexpr bool efc_terms = true`, see dims_with_efc_terms). By default it does not.
template <class Dims>
constexpr bool dims_efc_terms = detail::dims_efc_terms<Dims>::value;

/// @brief Dims whose workspace (physics::data) also keeps the intermediate terms of the constraint
/// rows that MuJoCo leaves in mjData: efc_pos, efc_margin, efc_diagApprox, efc_KBIP, efc_vel and
/// each contact's mixed solref/solimp (con_solref, con_solimp). Without them (the default) those
/// terms are computed where they are used and not stored, which saves 32 bytes per row and 28 per
/// contact in float (the same bits either way: both paths share every formula, and the tests
/// compare both with MuJoCo). Meant for comparing the stages with MuJoCo and for debugging.
template <class Dims>
struct dims_with_efc_terms : Dims {
  static constexpr bool efc_terms = true;  ///< keep the rows' intermediate terms in the workspace
};

/// @brief The same model under other Dims that differ only in what sizes the workspace
/// (capacities, the PGS solver, the rows' stored terms): no constant of a model depends on those, so both types have the
/// same layout and the copy is exact. Host only.
template <class NewDims, class Scalar, class Dims>
model<Scalar, NewDims> rebind(const model<Scalar, Dims>& m) {
  using result = model<Scalar, NewDims>;
  static_assert(sizeof(result) == sizeof(model<Scalar, Dims>) && std::is_trivially_copyable<result>::value,
                "rlkernels::physics::rebind: the Dims types must give models of the same layout");
  static_assert(NewDims::nq == Dims::nq && NewDims::nv == Dims::nv && NewDims::nu == Dims::nu &&
                    NewDims::nbody == Dims::nbody && NewDims::njnt == Dims::njnt && NewDims::ngeom == Dims::ngeom &&
                    NewDims::npair == Dims::npair && dims_nsite<NewDims> == dims_nsite<Dims> &&
                    dims_fluid<NewDims> == dims_fluid<Dims> &&
                    dims_actuator_bias<NewDims> == dims_actuator_bias<Dims> && dims_ntree<NewDims> == dims_ntree<Dims> &&
                    dims_ccd_iterations<NewDims> == dims_ccd_iterations<Dims> &&
                    dims_nsensor<NewDims> == dims_nsensor<Dims> && dims_nsensordata<NewDims> == dims_nsensordata<Dims> &&
                    dims_frictionloss<NewDims> == dims_frictionloss<Dims> && dims_max_condim<NewDims> == dims_max_condim<Dims>,
                "rlkernels::physics::rebind: the Dims types must describe the same model");
  if constexpr (std::is_same<NewDims, Dims>::value) {
    return m;  // the same type: nothing to rebind
  } else {
    result r;
    std::memcpy(static_cast<void*>(&r), static_cast<const void*>(&m), sizeof r);
    return r;
  }
}

/// @brief The same model with the workspace capacities of dims_with_capacity<Dims, NCon, NEfc>.
/// Host only.
template <int NCon, int NEfc, class Scalar, class Dims>
model<Scalar, dims_with_capacity<Dims, NCon, NEfc>> with_capacity(const model<Scalar, Dims>& m) {
  return rebind<dims_with_capacity<Dims, NCon, NEfc>>(m);
}

}  // namespace physics
}  // namespace rlkernels
