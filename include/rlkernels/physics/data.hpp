// rlkernels/physics/data.hpp
// The per-environment workspace of one forward pass: what MuJoCo keeps in mjData for the supported
// subset, with mjData's names and layouts (so each quantity can be compared with MuJoCo's). It lives
// on the stack of the thread that steps one env (fixed sizes, no allocation); only qpos, qvel and
// qacc_warmstart persist between steps (an env's State holds them).
#pragma once

#include "../core/config.hpp"
#include "model.hpp"

namespace rlkernels {
namespace physics {

/// @brief One contact, as MuJoCo's mjContact for the supported subset.
template <class Scalar>
struct contact {
  Scalar dist;           ///< signed distance (negative: penetration)
  Scalar pos[3];         ///< position (midpoint between the surfaces)
  Scalar frame[9];       ///< rows: normal (from geom1 to geom2), then two tangents
  Scalar includemargin;  ///< the sum of the two geoms' margins: the contact makes rows while dist < includemargin
                         ///< (MuJoCo 3.12: the gaps only widen detection, to margin + gap)
  Scalar friction[5];    ///< mixed friction (tangent1, tangent2, spin, roll1, roll2)
                         ///< (the mixed solref and solimp: data::con_solref, con_solimp, kept only with dims_with_efc_terms)
  Scalar mu;             ///< friction of the regularized cone, friction[0]*sqrt(1/impratio) (set by make_constraint, as mj_makeImpedance does)
  int dim;               ///< condim (1, 3, 4 or 6)
  int exclude;           ///< 1 if dist >= includemargin (in the gap: the contact makes no rows), else 0
  int geom1;             ///< the first geom (as in the pair; the normal points from it to geom2)
  int geom2;             ///< the second geom (as in the pair)
  int efc_address;       ///< first constraint row, -1 if none
};

/// Status bits of a forward pass or step (data::warning, OR-ed over the step); any set bit means
/// the step could not be computed as MuJoCo would or its result must not be used (envs end the
/// episode). On bad_qpos, bad_qvel and bad_qacc the step resets the data as MuJoCo does (see step()).
enum warning_bits : int {
  warning_none = 0,
  warning_bad_qpos = 1,     ///< a qpos was NaN or above 1e10 in magnitude (MuJoCo's mj_checkPos): data reset
  warning_bad_qvel = 2,     ///< the same for qvel (mj_checkVel): data reset
  warning_bad_qacc = 4,     ///< the same for qacc (mj_checkAcc): data reset and forward again
  warning_contact_full = 8, ///< a pair produced more contacts than its slots (cannot happen for the supported pairs)
  warning_efc_full = 16,    ///< more constraint rows than the slots
  warning_bad_ctrl = 32,    ///< a (clamped) ctrl was NaN or above 1e10: all controls taken as 0 (MuJoCo's mjWARN_BADCTRL)
  warning_bad_state = 64,   ///< the integrated qpos/qvel are bad (MuJoCo finds it at the next step's check and resets there)
  warning_bad_solver = 128  ///< the model asks for PGS but its Dims have no room for it (physics::dims_with_pgs): not solved
};

namespace detail {
/// The site frames of a workspace whose model has NSite > 0 sites; empty for none.
template <class Scalar, int NSite>
struct data_sites {
  Scalar site_xpos[NSite][3];  ///< site positions (world), from the position stage (mj_kinematics)
  Scalar site_xmat[NSite][9];  ///< site orientations (world, row-major)
};
template <class Scalar>
struct data_sites<Scalar, 0> {};

/// The sensor values of a workspace whose model has sensors (NSensorData values); empty for none.
template <class Scalar, int NSensorData>
struct data_sensors {
  Scalar sensordata[NSensorData];  ///< mjData's sensordata: each sensor's values at its sensor_adr (physics/sensor.hpp)
};
template <class Scalar>
struct data_sensors<Scalar, 0> {};
}  // namespace detail

/// @brief The workspace of one forward pass (mjData's fields for the supported subset).
template <class Scalar, class Dims>
struct data : detail::data_sites<Scalar, dims_nsite<Dims>>, detail::data_sensors<Scalar, dims_nsensordata<Dims>> {
  using model_type = model<Scalar, Dims>;     ///< the model this workspace belongs to
  static constexpr int nq = Dims::nq;         ///< position coordinates
  static constexpr int nv = Dims::nv;         ///< degrees of freedom
  static constexpr int nbody = Dims::nbody;   ///< bodies, the world (body 0) included
  static constexpr int njnt = Dims::njnt;     ///< joints
  static constexpr int ngeom = Dims::ngeom;   ///< geoms
  static constexpr int nsite = dims_nsite<Dims>;  ///< sites (site_xpos, site_xmat when > 0)
  static constexpr int nu_ = detail::at_least_one(Dims::nu);      ///< length of the actuator arrays: max(nu, 1)
  static constexpr int ntendon_ = model_type::ntendon_;           ///< length of the tendon arrays: max(ntendon, 1)
  static constexpr int ncon_ = detail::at_least_one(Dims::ncon);  ///< contact slots: max(Dims::ncon, 1)
  static constexpr int nefc_ = detail::at_least_one(Dims::nefc);  ///< constraint-row slots: max(Dims::nefc, 1)
  static constexpr bool efc_terms = dims_efc_terms<Dims>;    ///< whether the rows' intermediate terms are kept (dims_with_efc_terms)
  static constexpr int nefc_terms_ = efc_terms ? nefc_ : 1;  ///< rows of the term arrays (1 unused element without them)
  static constexpr int ncon_terms_ = efc_terms ? ncon_ : 1;  ///< contacts of con_solref and con_solimp

  // ---- state and control ----
  Scalar time;                ///< simulation time
  Scalar qpos[nq];            ///< positions
  Scalar qvel[nv];            ///< velocities
  Scalar ctrl[nu_];           ///< controls (clamped to ctrlrange when the actuator is ctrllimited)
  Scalar qacc_warmstart[nv];  ///< the previous step's acceleration (solver warm start)
  int warning;                ///< warning_bits of the last step

  // ---- position stage ----
  Scalar xpos[nbody][3];        ///< body frame origin (world)
  Scalar xquat[nbody][4];       ///< body orientation (w, x, y, z)
  Scalar xmat[nbody][9];        ///< body orientation, row-major 3x3
  Scalar xipos[nbody][3];       ///< centre of mass
  Scalar ximat[nbody][9];       ///< principal inertia frame
  Scalar xanchor[njnt][3];      ///< joint anchor (world)
  Scalar xaxis[njnt][3];        ///< joint axis (world)
  Scalar geom_xpos[ngeom][3];   ///< geom position
  Scalar geom_xmat[ngeom][9];   ///< geom orientation
  Scalar subtree_com[nbody][3]; ///< centre of mass of each subtree
  Scalar cinert[nbody][10];     ///< com-based body inertia (mjData layout: 6 of I at subtree_com of the root, 3 of m*offset, m)
  Scalar cdof[nv][6];           ///< com-based motion axis of each dof (rotation, translation)
  Scalar crb[nbody][10];        ///< composite rigid-body inertia
  Scalar qM[nv][nv];            ///< joint-space mass matrix, dense and symmetric, armature included
  Scalar qLDL[nv][nv];          ///< MuJoCo's own factor M = L^T D L (mj_factorM; lower triangle: L's strict part, D on the diagonal): solve_inertia(); after an Euler step with implicit damping, the factor of M + h diag(damping)
  Scalar qLDiagInv[nv];         ///< 1 / D of qLDL
  Scalar ten_length[ntendon_];  ///< tendon lengths (fixed tendons: sum of coef * qpos)
  Scalar ten_J[ntendon_][nv];   ///< tendon Jacobians (dense; MuJoCo stores them sparse)

  // ---- contacts and constraints ----
  int ncon;                       ///< contacts found
  contact<Scalar> con[ncon_];     ///< the contacts
  Scalar con_solref[ncon_terms_][2];  ///< each contact's mixed solref (mjContact::solref): with dims_with_efc_terms only
  Scalar con_solimp[ncon_terms_][5];  ///< each contact's mixed solimp (mjContact::solimp): with dims_with_efc_terms only
  int nf;                         ///< friction-loss rows (they come first, as in MuJoCo: dof friction, limits, contacts)
  int nl;                         ///< limit rows (after the friction-loss rows)
  int nefc;                       ///< constraint rows
  int ncon_peak;                  ///< the most contacts any forward pass found since the caller last set it to 0 (sizes capacities: never reset by the engine)
  int nefc_peak;                  ///< the same for constraint rows
  int efc_type[nefc_];            ///< constraint_type of each row
  int efc_id[nefc_];              ///< dof (friction loss), joint (limit) or contact index
  Scalar efc_J[nefc_][nv];        ///< constraint Jacobian (dense)
  Scalar efc_R[nefc_];            ///< regularizer
  Scalar efc_D[nefc_];            ///< 1/R
  Scalar efc_aref[nefc_];         ///< reference acceleration
  Scalar efc_force[nefc_];        ///< constraint force
  // the rows' intermediate terms, kept only with dims_with_efc_terms (else computed where used)
  Scalar efc_pos[nefc_terms_];         ///< constraint position (distance)
  Scalar efc_margin[nefc_terms_];      ///< inclusion margin
  Scalar efc_diagApprox[nefc_terms_];  ///< approximation of the diagonal of J M^-1 J^T (from invweight0)
  Scalar efc_KBIP[nefc_terms_][4];     ///< stiffness, damping, impedance, impedance derivative
  Scalar efc_vel[nefc_terms_];         ///< J qvel
  int efc_state[nefc_];           ///< solver state of the row (MuJoCo's mjtConstraintState)

  // ---- velocity stage ----
  Scalar cvel[nbody][6];          ///< com-based velocity (rotation, translation)
  Scalar cdof_dot[nv][6];         ///< time derivative of cdof
  Scalar ten_velocity[ntendon_];  ///< tendon velocities (ten_J qvel)
  Scalar qfrc_bias[nv];           ///< C(q, qdot) + gravity (RNE)
  Scalar qfrc_passive[nv];        ///< springs and dampers
  Scalar actuator_force[nu_];     ///< actuator forces
  Scalar qfrc_actuator[nv];       ///< actuator forces in joint space

  // ---- acceleration stage ----
  Scalar qfrc_smooth[nv];         ///< passive - bias + actuator
  Scalar qacc_smooth[nv];         ///< M^-1 qfrc_smooth
  Scalar qfrc_constraint[nv];     ///< J^T efc_force
  Scalar qacc[nv];                ///< acceleration
  Scalar cfrc_ext[nbody][6];      ///< com-based external force on each body (torque, force), from the contacts: rne_post_constraint() only
  int solver_niter;               ///< iterations of the last solve (Newton steps or PGS sweeps)
  int solver_neval;               ///< Newton's line-search cost evaluations in them (the sum of MuJoCo's solver[i].neval; 0 for PGS)
};

}  // namespace physics
}  // namespace rlkernels
