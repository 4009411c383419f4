// The smooth dynamics (kinematics, mass matrix, bias, passive and actuator forces, unconstrained
// acceleration) and the integrators against MuJoCo itself, constraints disabled on both sides.
// Error measure, per quantity: max over its elements and the states of |ours - MuJoCo| / max(1, |MuJoCo|).
#include <catch2/catch.hpp>
#include <mujoco/mujoco.h>

#include <rlkernels/physics/forward.hpp>

#include "physics/mujoco_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

namespace {

namespace ph = rlkernels::physics;

using rlk_test::ant_case;
using rlk_test::half_cheetah_case;
using rlk_test::humanoid_case;
using rlk_test::hopper_case;
using rlk_test::walker2d_case;
using rlk_test::inverted_pendulum_case;
using rlk_test::inverted_double_pendulum_case;
using rlk_test::swimmer_case;
using rlk_test::my_robot_case;
using rlk_test::reacher_case;
using rlk_test::pusher_case;

rlk_test::mj_model_ptr load(const char* file) { return rlk_test::load_mj_model(rlk_test::model_file(file)); }

// The generated model of a case, on the heap (a test's stack need not hold it).
template <class Case, class S = double>
std::unique_ptr<ph::model<S, typename Case::dims>> generated_model() {
  return std::make_unique<ph::model<S, typename Case::dims>>(Case::template model<S>());
}

double rel_err(double a, double b) { return std::fabs(a - b) / std::max(1.0, std::fabs(b)); }

struct errors {
  double xpos = 0, xmat = 0, geom_xpos = 0, geom_xmat = 0, site_xpos = 0, site_xmat = 0, qM = 0, bias = 0, passive = 0,
         actuator = 0, qacc_smooth = 0;
  void print(const char* name) const {
    std::printf("[smooth] %-12s max rel err: xpos %.2e xmat %.2e geom_xpos %.2e geom_xmat %.2e site_xpos %.2e "
                "site_xmat %.2e qM %.2e qfrc_bias %.2e qfrc_passive %.2e qfrc_actuator %.2e qacc_smooth %.2e\n",
                name, xpos, xmat, geom_xpos, geom_xmat, site_xpos, site_xmat, qM, bias, passive, actuator, qacc_smooth);
  }
};

template <class D>
void random_state(std::mt19937_64& rng, const mjModel* mm, double* qpos, double* qvel, double* ctrl) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int j = 0; j < mm->njnt; ++j) {
    const int a = mm->jnt_qposadr[j];
    if (mm->jnt_type[j] == mjJNT_FREE || mm->jnt_type[j] == mjJNT_BALL) {
      // position (free) and a random quaternion, not normalised (as Gymnasium's reset noise leaves it)
      const int nlin = mm->jnt_type[j] == mjJNT_FREE ? 3 : 0;
      for (int k = 0; k < nlin; ++k) qpos[a + k] = mm->qpos0[a + k] + u(rng);
      for (int k = 0; k < 4; ++k) qpos[a + nlin + k] = u(rng);
    } else if (mm->jnt_limited[j]) {
      const double lo = mm->jnt_range[2 * j], hi = mm->jnt_range[2 * j + 1];
      qpos[a] = lo + (hi - lo) * (0.5 + 0.5 * u(rng)) + 0.1 * u(rng);
    } else {
      qpos[a] = mm->qpos0[a] + 2.0 * u(rng);
    }
  }
  for (int i = 0; i < D::nv; ++i) qvel[i] = 10.0 * u(rng);
  for (int i = 0; i < D::nu; ++i) ctrl[i] = 2.0 * u(rng);  // half of them outside ctrlrange
}

template <class Case, class D = typename Case::dims>
errors compare_forward(const char* file, int nstates, bool deliberate_bug = false, int extra_flags = 0,
                       const double* wind = nullptr) {
  rlk_test::mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT | extra_flags;
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  auto m = generated_model<Case>();
  m->disableflags = mm->opt.disableflags;
  if constexpr (ph::dims_fluid<D>)
    if (wind)
      for (int k = 0; k < 3; ++k) m->wind[k] = mm->opt.wind[k] = wind[k];
  if (deliberate_bug)
    for (int i = 0; i < D::nv; ++i) m->dof_armature[i] = 0;
  auto d = std::make_unique<ph::data<double, D>>();
  std::mt19937_64 rng(17);
  errors e;
  double M[D::nv * D::nv];
  for (int s = 0; s < nstates; ++s) {
    random_state<D>(rng, mm.get(), d->qpos, d->qvel, d->ctrl);
    for (int i = 0; i < D::nq; ++i) md->qpos[i] = d->qpos[i];
    for (int i = 0; i < D::nv; ++i) { md->qvel[i] = d->qvel[i]; d->qacc_warmstart[i] = 0; }
    for (int i = 0; i < D::nu; ++i) md->ctrl[i] = d->ctrl[i];
    mj_forward(mm.get(), md.get());
    ph::forward(*m, *d);
    REQUIRE(d->warning == 0);
    for (int b = 0; b < D::nbody; ++b) {
      for (int k = 0; k < 3; ++k) e.xpos = std::max(e.xpos, rel_err(d->xpos[b][k], md->xpos[3 * b + k]));
      for (int k = 0; k < 9; ++k) e.xmat = std::max(e.xmat, rel_err(d->xmat[b][k], md->xmat[9 * b + k]));
    }
    const std::vector<int> kept = rlk_test::kept_geoms(mm.get());
    REQUIRE(int(kept.size()) == D::ngeom);
    for (int g = 0; g < D::ngeom; ++g) {
      const int mg = kept[g];  // MuJoCo's id of our geom g
      for (int k = 0; k < 3; ++k)
        e.geom_xpos = std::max(e.geom_xpos, rel_err(d->geom_xpos[g][k], md->geom_xpos[3 * mg + k]));
      for (int k = 0; k < 9; ++k)
        e.geom_xmat = std::max(e.geom_xmat, rel_err(d->geom_xmat[g][k], md->geom_xmat[9 * mg + k]));
    }
    REQUIRE(mm->nsite == ph::dims_nsite<D>);
    if constexpr (ph::dims_nsite<D> > 0) {
      for (int i = 0; i < ph::dims_nsite<D>; ++i) {
        for (int k = 0; k < 3; ++k)
          e.site_xpos = std::max(e.site_xpos, rel_err(d->site_xpos[i][k], md->site_xpos[3 * i + k]));
        for (int k = 0; k < 9; ++k)
          e.site_xmat = std::max(e.site_xmat, rel_err(d->site_xmat[i][k], md->site_xmat[9 * i + k]));
      }
    }
    mj_fullM(mm.get(), md.get(), M);
    for (int i = 0; i < D::nv; ++i)
      for (int j = 0; j < D::nv; ++j) e.qM = std::max(e.qM, rel_err(d->qM[i][j], M[i * D::nv + j]));
    for (int i = 0; i < D::nv; ++i) {
      e.bias = std::max(e.bias, rel_err(d->qfrc_bias[i], md->qfrc_bias[i]));
      e.passive = std::max(e.passive, rel_err(d->qfrc_passive[i], md->qfrc_passive[i]));
      e.actuator = std::max(e.actuator, rel_err(d->qfrc_actuator[i], md->qfrc_actuator[i]));
      e.qacc_smooth = std::max(e.qacc_smooth, rel_err(d->qacc_smooth[i], md->qacc_smooth[i]));
      CHECK(d->qacc[i] == d->qacc_smooth[i]);
    }
  }
  return e;
}

template <class Case, class D = typename Case::dims>
void check_forward(const char* name, const char* file) {
  const errors e = compare_forward<Case>(file, 3000);
  e.print(name);
  const double tol = 1e-12;
  CHECK(e.xpos <= tol);
  CHECK(e.xmat <= tol);
  CHECK(e.geom_xpos <= tol);
  CHECK(e.geom_xmat <= tol);
  CHECK(e.site_xpos <= tol);
  CHECK(e.site_xmat <= tol);
  CHECK(e.qM <= tol);
  CHECK(e.bias <= tol);
  CHECK(e.passive <= tol);
  CHECK(e.actuator <= tol);
  CHECK(e.qacc_smooth <= tol);
}

// Constraint-free trajectories with the model's own integrator; returns the max rel error of
// qpos/qvel over the first `early` steps and over all `nsteps`.
template <class Case, class D = typename Case::dims>
void compare_trajectory(const char* name, const char* file, int nsteps, int early, double* err_early,
                        double* err_all, int extra_flags = 0) {
  rlk_test::mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT | extra_flags;
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  auto m = generated_model<Case>();
  m->disableflags = mm->opt.disableflags;
  auto d = std::make_unique<ph::data<double, D>>();
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  d->time = 0;
  for (int i = 0; i < D::nq; ++i) d->qpos[i] = md->qpos[i] = mm->qpos0[i] + 0.1 * u(rng);
  for (int i = 0; i < D::nv; ++i) {
    d->qvel[i] = md->qvel[i] = 0.1 * u(rng);
    d->qacc_warmstart[i] = 0;
  }
  *err_early = 0;
  *err_all = 0;
  for (int t = 0; t < nsteps; ++t) {
    for (int i = 0; i < D::nu; ++i) d->ctrl[i] = md->ctrl[i] = 1.2 * u(rng);
    mj_step(mm.get(), md.get());
    ph::step(*m, *d);
    REQUIRE(d->warning == 0);
    double e = rel_err(d->time, md->time);
    for (int i = 0; i < D::nq; ++i) e = std::max(e, rel_err(d->qpos[i], md->qpos[i]));
    for (int i = 0; i < D::nv; ++i) e = std::max(e, rel_err(d->qvel[i], md->qvel[i]));
    for (int i = 0; i < D::nv; ++i) e = std::max(e, rel_err(d->qacc_warmstart[i], md->qacc_warmstart[i]));
    if (t < early) *err_early = std::max(*err_early, e);
    *err_all = std::max(*err_all, e);
  }
  if (!extra_flags)
    std::printf("[smooth] %-12s %s trajectory (constraints off): max rel err of qpos/qvel/warmstart %.2e over "
                "the first %d steps, %.2e over %d steps\n",
                name, mm->opt.integrator == mjINT_RK4 ? "RK4" : "Euler", *err_early, early, *err_all, nsteps);
}

}  // namespace

TEST_CASE("smooth dynamics agree with mj_forward (constraints disabled)", "[mujoco][smooth]") {
  SECTION("hopper") { check_forward<hopper_case>("hopper", "hopper.xml"); }
  SECTION("walker2d") { check_forward<walker2d_case>("walker2d", "walker2d_v5.xml"); }
  SECTION("half_cheetah") { check_forward<half_cheetah_case>("half_cheetah", "half_cheetah.xml"); }
  SECTION("ant (free joint)") { check_forward<ant_case>("ant", "ant.xml"); }
  SECTION("humanoid (free joint, fixed tendons)") { check_forward<humanoid_case>("humanoid", "humanoid.xml"); }
  SECTION("inverted_pendulum") { check_forward<inverted_pendulum_case>("inv_pendulum", "inverted_pendulum.xml"); }
  SECTION("inverted_double_pendulum (a site)") {
    check_forward<inverted_double_pendulum_case>("inv_double", "inverted_double_pendulum.xml");
  }
  SECTION("swimmer (fluid forces)") { check_forward<swimmer_case>("swimmer", "swimmer.xml"); }
  SECTION("my_robot (position servos, free joint)") { check_forward<my_robot_case>("my_robot", "my_robot.xml"); }
  SECTION("reacher (two kinematic trees, a dropped visual cylinder)") { check_forward<reacher_case>("reacher", "reacher.xml"); }
  SECTION("pusher (three kinematic trees, no gravity)") { check_forward<pusher_case>("pusher", "pusher_v5.xml"); }
  SECTION("swimmer in a wind (fluid forces relative to the medium)") {
    const double wind[3] = {0.7, -1.3, 0.4};
    const errors e = compare_forward<swimmer_case>("swimmer.xml", 1000, false, 0, wind);
    e.print("swimmer+wind");
    CHECK(e.passive <= 1e-12);
    CHECK(e.qacc_smooth <= 1e-12);
  }
}

TEST_CASE("a deliberate bug (no armature) is caught", "[mujoco][smooth]") {
  const errors e = compare_forward<hopper_case>("hopper.xml", 50, true);
  std::printf("[smooth] deliberate bug (armature dropped): qM err %.2e, qacc_smooth err %.2e\n", e.qM, e.qacc_smooth);
  CHECK(e.qM > 1e-3);
  CHECK(e.qacc_smooth > 1e-3);
}

TEST_CASE("constraint-free trajectories agree with mj_step", "[mujoco][smooth]") {
  double early = 0, all = 0;
  SECTION("hopper (RK4)") {
    compare_trajectory<hopper_case>("hopper", "hopper.xml", 500, 20, &early, &all);
  }
  SECTION("walker2d (RK4)") {
    compare_trajectory<walker2d_case>("walker2d", "walker2d_v5.xml", 500, 20, &early, &all);
  }
  SECTION("half_cheetah (Euler, implicit damping)") {
    compare_trajectory<half_cheetah_case>("half_cheetah", "half_cheetah.xml", 500, 20, &early, &all);
  }
  SECTION("ant (RK4, free joint)") {
    compare_trajectory<ant_case>("ant", "ant.xml", 500, 20, &early, &all);
  }
  SECTION("humanoid (RK4)") {
    compare_trajectory<humanoid_case>("humanoid", "humanoid.xml", 500, 20, &early, &all);
  }
  CHECK(early <= 1e-12);
  CHECK(all <= 1e-9);
}

namespace {

// Both NaN (or equal) counts as agreement; a NaN on one side only as an infinite error.
double rel_err_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return (std::isnan(a) && std::isnan(b)) ? 0.0 : INFINITY;
  return rel_err(a, b);
}

template <class D>
void copy_state(const mjData* md, ph::data<double, D>& d) {
  d.time = md->time;
  for (int i = 0; i < D::nq; ++i) d.qpos[i] = md->qpos[i];
  for (int i = 0; i < D::nv; ++i) { d.qvel[i] = md->qvel[i]; d.qacc_warmstart[i] = md->qacc_warmstart[i]; }
  for (int i = 0; i < D::nu; ++i) d.ctrl[i] = md->ctrl[i];
}

template <class D>
double state_err(const mjData* md, const ph::data<double, D>& d) {
  double e = rel_err_nan(d.time, md->time);
  for (int i = 0; i < D::nq; ++i) e = std::max(e, rel_err_nan(d.qpos[i], md->qpos[i]));
  for (int i = 0; i < D::nv; ++i) e = std::max(e, rel_err_nan(d.qvel[i], md->qvel[i]));
  for (int i = 0; i < D::nv; ++i) e = std::max(e, rel_err_nan(d.qacc_warmstart[i], md->qacc_warmstart[i]));
  for (int i = 0; i < D::nu; ++i) e = std::max(e, rel_err_nan(d.ctrl[i], md->ctrl[i]));
  return e;
}

// One step from a perturbed state on both sides: the warnings MuJoCo raises, ours, and the state error.
template <class Case, class D = typename Case::dims>
void check_bad_step(const char* file, int extra_flags, void (*perturb)(mjData*), int mj_warning, int our_bit) {
  rlk_test::mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT | extra_flags;
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  auto m = generated_model<Case>();
  m->disableflags = mm->opt.disableflags;
  auto d = std::make_unique<ph::data<double, D>>();
  for (int i = 0; i < D::nq; ++i) md->qpos[i] = mm->qpos0[i] + 0.05 * (i + 1);
  for (int i = 0; i < D::nv; ++i) md->qvel[i] = 0.3 * (i % 3) - 0.2;
  for (int i = 0; i < D::nu; ++i) md->ctrl[i] = 0.5;
  md->time = 1.25;
  mj_step(mm.get(), md.get());  // a normal step first, so that time and warm start are not zero
  perturb(md.get());
  copy_state(md.get(), *d);
  void (*saved)(const char*) = mju_user_warning;
  mju_user_warning = [](const char*) {};  // the warnings are expected here
  mj_step(mm.get(), md.get());
  ph::step(*m, *d);
  const double e = state_err(md.get(), *d);
  INFO(file << " flags " << extra_flags << " warning " << d->warning);
  CHECK(md->warning[mj_warning].number >= 1);  // MuJoCo counts per forward pass (RK4: 4) and twice without reset
  CHECK((d->warning & our_bit) != 0);
  CHECK(e <= 1e-12);
  // and the next step goes on as MuJoCo's does
  mj_step(mm.get(), md.get());
  ph::step(*m, *d);
  CHECK(state_err(md.get(), *d) <= 1e-12);
  mju_user_warning = saved;
}

void bad_qpos(mjData* d) { d->qpos[2] = NAN; }
void bad_qvel(mjData* d) { d->qvel[1] = 2e10; }
void huge_qvel(mjData* d) { d->qvel[4] = 5e9; }  // not bad itself; the bias forces make qacc bad
void bad_ctrl(mjData* d) { d->ctrl[1] = NAN; }

template <class Case, class D = typename Case::dims>
double float_forward_error(const char* file, int nstates, double* kin_err) {
  rlk_test::mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT;
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  auto m = generated_model<Case, float>();
  m->disableflags = mm->opt.disableflags;
  auto d = std::make_unique<ph::data<float, D>>();
  std::mt19937_64 rng(99);
  double qpos[D::nq], qvel[D::nv], ctrl[D::nu];
  double worst = 0;
  *kin_err = 0;
  for (int s = 0; s < nstates; ++s) {
    random_state<D>(rng, mm.get(), qpos, qvel, ctrl);
    for (int i = 0; i < D::nq; ++i) md->qpos[i] = d->qpos[i] = static_cast<float>(qpos[i]);
    for (int i = 0; i < D::nv; ++i) { md->qvel[i] = d->qvel[i] = static_cast<float>(qvel[i]); d->qacc_warmstart[i] = 0; }
    for (int i = 0; i < D::nu; ++i) md->ctrl[i] = d->ctrl[i] = static_cast<float>(ctrl[i]);
    mj_forward(mm.get(), md.get());
    ph::forward(*m, *d);
    double num = 0, den = 0;
    for (int i = 0; i < D::nv; ++i) {
      num += (d->qacc_smooth[i] - md->qacc_smooth[i]) * (d->qacc_smooth[i] - md->qacc_smooth[i]);
      den += md->qacc_smooth[i] * md->qacc_smooth[i];
    }
    worst = std::max(worst, std::sqrt(num) / std::max(1.0, std::sqrt(den)));
    for (int b = 0; b < D::nbody; ++b)
      for (int k = 0; k < 3; ++k) *kin_err = std::max(*kin_err, rel_err(d->xpos[b][k], md->xpos[3 * b + k]));
  }
  return worst;
}

}  // namespace

TEST_CASE("disable flags agree with MuJoCo (gravity, spring, damper, clampctrl, actuation, eulerdamp)",
          "[mujoco][smooth]") {
  const int flag_sets[] = {mjDSBL_GRAVITY, mjDSBL_SPRING, mjDSBL_DAMPER, mjDSBL_SPRING | mjDSBL_DAMPER,
                           mjDSBL_CLAMPCTRL, mjDSBL_ACTUATION, mjDSBL_EULERDAMP};
  double worst_fwd = 0, worst_traj = 0;
  for (int f : flag_sets) {
    const errors eh = compare_forward<hopper_case>("hopper.xml", 200, false, f);
    const errors ec = compare_forward<half_cheetah_case>("half_cheetah.xml", 200, false, f);
    for (const errors& e : {eh, ec})
      worst_fwd = std::max({worst_fwd, e.qM, e.bias, e.passive, e.actuator, e.qacc_smooth});
    double early = 0, all = 0;
    compare_trajectory<hopper_case>("hopper", "hopper.xml", 100, 10, &early, &all, f);
    worst_traj = std::max(worst_traj, all);
    compare_trajectory<half_cheetah_case>("half_cheetah", "half_cheetah.xml", 100, 10, &early, &all, f);
    worst_traj = std::max(worst_traj, all);
  }
  std::printf("[smooth] disable flags: max rel err of forward quantities %.2e, of 100-step trajectories %.2e\n",
              worst_fwd, worst_traj);
  CHECK(worst_fwd <= 1e-12);
  CHECK(worst_traj <= 1e-12);
}

TEST_CASE("instability is handled as mj_step handles it (warning, reset, go on)", "[mujoco][smooth]") {
  SECTION("bad qpos, RK4") { check_bad_step<hopper_case>("hopper.xml", 0, bad_qpos, mjWARN_BADQPOS, ph::warning_bad_qpos); }
  SECTION("bad qvel, RK4") { check_bad_step<hopper_case>("hopper.xml", 0, bad_qvel, mjWARN_BADQVEL, ph::warning_bad_qvel); }
  SECTION("bad qacc, RK4") { check_bad_step<hopper_case>("hopper.xml", 0, huge_qvel, mjWARN_BADQACC, ph::warning_bad_qacc); }
  SECTION("bad ctrl, RK4") { check_bad_step<hopper_case>("hopper.xml", 0, bad_ctrl, mjWARN_BADCTRL, ph::warning_bad_ctrl); }
  SECTION("bad qpos, Euler") { check_bad_step<half_cheetah_case>("half_cheetah.xml", 0, bad_qpos, mjWARN_BADQPOS, ph::warning_bad_qpos); }
  SECTION("bad qvel, Euler") { check_bad_step<half_cheetah_case>("half_cheetah.xml", 0, bad_qvel, mjWARN_BADQVEL, ph::warning_bad_qvel); }
  SECTION("bad qacc, Euler") { check_bad_step<half_cheetah_case>("half_cheetah.xml", 0, huge_qvel, mjWARN_BADQACC, ph::warning_bad_qacc); }
  SECTION("bad ctrl, Euler") { check_bad_step<half_cheetah_case>("half_cheetah.xml", 0, bad_ctrl, mjWARN_BADCTRL, ph::warning_bad_ctrl); }
  SECTION("bad qpos without autoreset: NaN stays, flagged") {
    check_bad_step<hopper_case>("hopper.xml", mjDSBL_AUTORESET, bad_qpos, mjWARN_BADQPOS, ph::warning_bad_state);
  }
}

TEST_CASE("float: the smooth dynamics stay close to MuJoCo's double", "[mujoco][smooth]") {
  double kin = 0;
  const double eh = float_forward_error<hopper_case>("hopper.xml", 500, &kin);
  std::printf("[smooth] float hopper:       qacc_smooth norm-rel err %.2e, xpos %.2e\n", eh, kin);
  CHECK(eh <= 1e-3);
  CHECK(kin <= 1e-5);
  const double ew = float_forward_error<walker2d_case>("walker2d_v5.xml", 500, &kin);
  std::printf("[smooth] float walker2d:     qacc_smooth norm-rel err %.2e, xpos %.2e\n", ew, kin);
  CHECK(ew <= 1e-3);
  CHECK(kin <= 1e-5);
  const double ec = float_forward_error<half_cheetah_case>("half_cheetah.xml", 500, &kin);
  std::printf("[smooth] float half_cheetah: qacc_smooth norm-rel err %.2e, xpos %.2e\n", ec, kin);
  CHECK(ec <= 1e-3);
  CHECK(kin <= 1e-5);
}

namespace {

// A free-floating robot with ball joints (one beside a slide joint on the same body), hinges with
// springs, dampers and armature, and a fixed tendon, for what the Gymnasium models do not have.
const char* ball_robot_xml = R"(<mujoco>
  <option timestep="0.005" integrator="INTEGRATOR"/>
  <worldbody>
    <body name="root" pos="0 0 1"><freejoint/><geom type="capsule" size=".05 .2"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="shoulder" type="ball" pos="-0.02 0 0" damping="0.3" armature="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".04"/>
        <body name="fore" pos="0.3 0 0">
          <joint name="elbow" type="hinge" axis="0 1 0" damping="0.2" stiffness="1" springref="0.3"/>
          <geom type="capsule" fromto="0 0 0 0.25 0 0" size=".03"/>
          <body name="hand" pos="0.25 0 0" quat="0.8 0.2 0.1 0.3">
            <joint name="wrist" type="ball" armature="0.002"/><joint name="slider" type="slide" axis="1 0 0" damping="0.1"/>
            <geom type="sphere" size=".05"/>
          </body>
        </body>
      </body>
      <body name="leg" pos="0 0 -0.2" quat="0.9 0.1 0.3 0.2">
        <joint name="hip" type="ball"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size=".04"/>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="elbow" coef="0.5"/><joint joint="slider" coef="-1.5"/></fixed></tendon>
  <actuator><motor joint="elbow" gear="3"/><motor joint="slider" gear="2" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>)";

struct ball_robot_dims {
  static constexpr int nq = 21, nv = 17, nu = 2, nbody = 6, njnt = 6, ngeom = 5;
  static constexpr int npair = 0, ncon = 0, nefc = 0, ntendon = 1, nwrap = 2;
};

rlk_test::mj_model_ptr ball_robot(const char* integrator) {
  std::string xml = ball_robot_xml;
  xml.replace(xml.find("INTEGRATOR"), 10, integrator);
  char error[1024] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof error);
  INFO(error);
  REQUIRE(spec != nullptr);
  mjModel* m = mj_compile(spec, nullptr);
  mj_deleteSpec(spec);
  REQUIRE(m != nullptr);
  m->opt.disableflags |= mjDSBL_CONSTRAINT;
  return rlk_test::mj_model_ptr(m);
}

}  // namespace

namespace {

// Servos: a planar arm on a slider, driven by a position servo (kp, kv), a velocity servo and a
// general actuator with an affine bias (a constant term too), one of them force-limited.
const char* servo_arm_xml = R"(
<mujoco>
  <option timestep="0.004" integrator="INTEGRATOR"/>
  <worldbody>
    <body name="base">
      <joint name="slide" type="slide" axis="1 0 0" damping="0.2" limited="true" range="-1 1"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.05"/>
      <body name="upper" pos="0 0 0.2">
        <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05" armature="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
        <body name="lower" pos="0.4 0 0">
          <joint name="elbow" type="hinge" axis="0 1 0" armature="0.01"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="shoulder" kp="40" kv="2" ctrlrange="-1.5 1.5" gear="1.5"/>
    <velocity joint="elbow" kv="3" ctrlrange="-4 4" forcerange="-2 2"/>
    <general joint="slide" gainprm="25" biastype="affine" biasprm="0.7 -25 -1.5" ctrlrange="-0.8 0.8"/>
  </actuator>
</mujoco>)";

struct servo_arm_dims {
  static constexpr int nq = 3, nv = 3, nu = 3, nbody = 4, njnt = 3, ngeom = 3;
  static constexpr int npair = 0, ncon = 0, nefc = 0;
  static constexpr int actuator_bias = 1;
};

rlk_test::mj_model_ptr servo_arm(const char* integrator) {
  std::string xml = servo_arm_xml;
  xml.replace(xml.find("INTEGRATOR"), 10, integrator);
  char error[1024] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof error);
  INFO(error);
  REQUIRE(spec != nullptr);
  mjModel* m = mj_compile(spec, nullptr);
  mj_deleteSpec(spec);
  REQUIRE(m != nullptr);
  m->opt.disableflags |= mjDSBL_CONSTRAINT;
  return rlk_test::mj_model_ptr(m);
}

}  // namespace

TEST_CASE("position, velocity and affine-bias servos agree with mj_forward and mj_step", "[mujoco][smooth][servo]") {
  using D = servo_arm_dims;
  for (const char* integrator : {"Euler", "RK4"}) {
    INFO(integrator);
    rlk_test::mj_model_ptr mm = servo_arm(integrator);
    REQUIRE(mm->actuator_biastype[0] == mjBIAS_AFFINE);
    REQUIRE(mm->actuator_biasprm[mjNBIAS * 0 + 2] == -2.0);  // kv of the position servo
    REQUIRE(mm->actuator_biasprm[mjNBIAS * 2 + 0] == 0.7);
    rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
    auto m = rlk_test::model_from_mujoco<D>(mm.get());
    auto d = std::make_unique<ph::data<double, D>>();
    std::mt19937_64 rng(29);
    double e_force = 0, e_qfrc = 0, e_acc = 0, clamped = 0;
    for (int s = 0; s < 2000; ++s) {
      random_state<D>(rng, mm.get(), d->qpos, d->qvel, d->ctrl);
      for (int i = 0; i < D::nq; ++i) md->qpos[i] = d->qpos[i];
      for (int i = 0; i < D::nv; ++i) { md->qvel[i] = d->qvel[i]; d->qacc_warmstart[i] = 0; }
      for (int i = 0; i < D::nu; ++i) md->ctrl[i] = d->ctrl[i];
      mj_forward(mm.get(), md.get());
      ph::forward(*m, *d);
      REQUIRE(d->warning == 0);
      for (int i = 0; i < D::nu; ++i) e_force = std::max(e_force, rel_err(d->actuator_force[i], md->actuator_force[i]));
      for (int i = 0; i < D::nv; ++i) {
        e_qfrc = std::max(e_qfrc, rel_err(d->qfrc_actuator[i], md->qfrc_actuator[i]));
        e_acc = std::max(e_acc, rel_err(d->qacc_smooth[i], md->qacc_smooth[i]));
      }
      clamped += std::abs(md->actuator_force[1]) == 2.0;
    }
    // trajectories with the model's integrator (Euler: implicit in the dof damping)
    double e_traj = 0;
    for (int i = 0; i < D::nq; ++i) d->qpos[i] = md->qpos[i] = 0.1 * double(i + 1);
    for (int i = 0; i < D::nv; ++i) { d->qvel[i] = md->qvel[i] = 0; d->qacc_warmstart[i] = md->qacc_warmstart[i] = 0; }
    d->time = md->time = 0;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int t = 0; t < 1000; ++t) {
      for (int i = 0; i < D::nu; ++i) d->ctrl[i] = md->ctrl[i] = 1.5 * u(rng);
      mj_step(mm.get(), md.get());
      ph::step(*m, *d);
      REQUIRE(d->warning == 0);
      for (int i = 0; i < D::nq; ++i) e_traj = std::max(e_traj, rel_err(d->qpos[i], md->qpos[i]));
      for (int i = 0; i < D::nv; ++i) e_traj = std::max(e_traj, rel_err(d->qvel[i], md->qvel[i]));
    }
    std::printf("[smooth] servo arm (%s): max rel err actuator_force %.2e, qfrc_actuator %.2e, qacc_smooth %.2e "
                "(%g of 2000 states force-clamped); 1000-step trajectory qpos/qvel %.2e\n",
                integrator, e_force, e_qfrc, e_acc, clamped, e_traj);
    CHECK(clamped > 100);
    CHECK(e_force <= 1e-12);
    CHECK(e_qfrc <= 1e-12);
    CHECK(e_acc <= 1e-12);
    CHECK(e_traj <= 1e-12);
  }
}

TEST_CASE("ball joints, a free joint and a fixed tendon agree with mj_forward and mj_step", "[mujoco][smooth][ball]") {
  using D = ball_robot_dims;
  rlk_test::mj_model_ptr mm = ball_robot("RK4");
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  auto m = rlk_test::model_from_mujoco<D>(mm.get());
  auto d = std::make_unique<ph::data<double, D>>();
  std::mt19937_64 rng(23);
  errors e;
  double ten = 0;
  double M[D::nv * D::nv];
  for (int s = 0; s < 3000; ++s) {
    random_state<D>(rng, mm.get(), d->qpos, d->qvel, d->ctrl);
    for (int i = 0; i < D::nq; ++i) md->qpos[i] = d->qpos[i];
    for (int i = 0; i < D::nv; ++i) { md->qvel[i] = d->qvel[i]; d->qacc_warmstart[i] = 0; }
    for (int i = 0; i < D::nu; ++i) md->ctrl[i] = d->ctrl[i];
    mj_forward(mm.get(), md.get());
    ph::forward(*m, *d);
    REQUIRE(d->warning == 0);
    for (int b = 0; b < D::nbody; ++b) {
      for (int k = 0; k < 3; ++k) e.xpos = std::max(e.xpos, rel_err(d->xpos[b][k], md->xpos[3 * b + k]));
      for (int k = 0; k < 9; ++k) e.xmat = std::max(e.xmat, rel_err(d->xmat[b][k], md->xmat[9 * b + k]));
    }
    for (int g = 0; g < D::ngeom; ++g)
      for (int k = 0; k < 3; ++k)
        e.geom_xpos = std::max(e.geom_xpos, rel_err(d->geom_xpos[g][k], md->geom_xpos[3 * g + k]));
    mj_fullM(mm.get(), md.get(), M);
    for (int i = 0; i < D::nv; ++i)
      for (int j = 0; j < D::nv; ++j) e.qM = std::max(e.qM, rel_err(d->qM[i][j], M[i * D::nv + j]));
    for (int i = 0; i < D::nv; ++i) {
      e.bias = std::max(e.bias, rel_err(d->qfrc_bias[i], md->qfrc_bias[i]));
      e.passive = std::max(e.passive, rel_err(d->qfrc_passive[i], md->qfrc_passive[i]));
      e.actuator = std::max(e.actuator, rel_err(d->qfrc_actuator[i], md->qfrc_actuator[i]));
      e.qacc_smooth = std::max(e.qacc_smooth, rel_err(d->qacc_smooth[i], md->qacc_smooth[i]));
    }
    // the tendon: length, velocity, and its Jacobian (MuJoCo's is sparse: rows by rowadr/colind)
    ten = std::max(ten, rel_err(d->ten_length[0], md->ten_length[0]));
    ten = std::max(ten, rel_err(d->ten_velocity[0], md->ten_velocity[0]));
    double J[D::nv] = {};
    for (int k = 0; k < mm->ten_J_rownnz[0]; ++k) J[mm->ten_J_colind[mm->ten_J_rowadr[0] + k]] = md->ten_J[mm->ten_J_rowadr[0] + k];
    for (int v = 0; v < D::nv; ++v) ten = std::max(ten, rel_err(d->ten_J[0][v], J[v]));
  }
  e.print("ball robot");
  std::printf("[smooth] ball robot   tendon length/velocity/Jacobian max rel err %.2e\n", ten);
  CHECK(e.xpos == 0);
  CHECK(e.xmat == 0);
  CHECK(e.geom_xpos == 0);
  CHECK(e.qM == 0);
  CHECK(e.bias == 0);
  CHECK(e.passive == 0);
  CHECK(e.actuator == 0);
  CHECK(e.qacc_smooth == 0);
  CHECK(ten == 0);

  // trajectories: RK4 and Euler (implicit in the dampers), from unnormalised quaternions
  for (const char* integrator : {"RK4", "Euler"}) {
    rlk_test::mj_model_ptr tm = ball_robot(integrator);
    rlk_test::mj_data_ptr td = rlk_test::make_mj_data(tm.get());
    auto tmodel = rlk_test::model_from_mujoco<D>(tm.get());
    random_state<D>(rng, tm.get(), d->qpos, d->qvel, d->ctrl);
    d->time = 0;
    for (int i = 0; i < D::nq; ++i) td->qpos[i] = d->qpos[i];
    for (int i = 0; i < D::nv; ++i) { td->qvel[i] = d->qvel[i]; d->qacc_warmstart[i] = 0; }
    double err = 0, qnorm = 0;
    for (int t = 0; t < 1000; ++t) {
      for (int i = 0; i < D::nu; ++i) d->ctrl[i] = td->ctrl[i] = std::sin(0.01 * t + i);
      mj_step(tm.get(), td.get());
      ph::step(*tmodel, *d);
      REQUIRE(d->warning == 0);
      for (int i = 0; i < D::nq; ++i) err = std::max(err, rel_err(d->qpos[i], td->qpos[i]));
      for (int i = 0; i < D::nv; ++i) err = std::max(err, rel_err(d->qvel[i], td->qvel[i]));
      const double* q = d->qpos + 3;
      qnorm = std::max(qnorm, std::fabs(std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) - 1));
    }
    std::printf("[smooth] ball robot   %s trajectory: max rel err of qpos/qvel over 1000 steps %.2e; free joint |q| - 1 "
                "up to %.2e\n", integrator, err, qnorm);
    CHECK(err == 0);
  }
}

namespace {

/// Max |ours - MuJoCo| / max(1, |MuJoCo|) over the kept sensors' values (ours packed, MuJoCo's at
/// its own addresses, the dropped accelerometer skipped); counts the values a cutoff clipped.
template <class D>
double sensor_error(const mjModel* mm, const mjData* md, const ph::data<double, D>& o, long* clipped) {
  const std::vector<int> ks = rlk_test::kept_sensors(mm);
  double e = 0;
  int adr = 0;
  for (int j : ks) {
    for (int k = 0; k < mm->sensor_dim[j]; ++k) {
      const double theirs = md->sensordata[mm->sensor_adr[j] + k];
      e = std::max(e, rel_err(o.sensordata[adr + k], theirs));
      if (clipped && mm->sensor_cutoff[j] > 0 && std::fabs(theirs) == mm->sensor_cutoff[j]) ++*clipped;
    }
    adr += mm->sensor_dim[j];
  }
  return e;
}

}  // namespace

TEST_CASE("sensors equal mj_forward's and mj_step's sensordata", "[mujoco][smooth][sensor]") {
  using Case = rlk_test::sensor_robot_case;
  using D = Case::dims;
  rlk_test::mj_model_ptr mm = load(Case::xml);
  rlk_test::mj_data_ptr md = rlk_test::make_mj_data(mm.get());
  const auto m = generated_model<Case>();
  auto o = std::make_unique<ph::data<double, D>>();
  std::mt19937_64 rng(808);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // random states (any quaternion, velocities up to 3, a random time): forward
  double e_fwd = 0, e_alone = 0;
  long clipped = 0;
  for (int s = 0; s < 3000; ++s) {
    mj_resetData(mm.get(), md.get());
    for (int i = 0; i < mm->nq; ++i) md->qpos[i] = u(rng) * (i < 3 ? 1.0 : 1.5);
    for (int i = 0; i < mm->nv; ++i) md->qvel[i] = 3 * u(rng);
    for (int i = 0; i < mm->nu; ++i) md->ctrl[i] = u(rng);
    md->time = 10 * (u(rng) + 1);
    rlk_test::copy_state_from_mujoco(mm.get(), md.get(), *o);
    mj_forward(mm.get(), md.get());
    ph::forward(*m, *o);
    REQUIRE(o->warning == 0);
    e_fwd = std::max(e_fwd, sensor_error(mm.get(), md.get(), *o, &clipped));
    // the sensors alone (the stages they read) give the same values
    rlk_test::copy_state_from_mujoco(mm.get(), md.get(), *o);
    for (int i = 0; i < D::nsensordata; ++i) o->sensordata[i] = 0;
    ph::sensors(*m, *o);
    e_alone = std::max(e_alone, sensor_error(mm.get(), md.get(), *o, nullptr));
  }
  // trajectories with the model's RK4 (its later stages must not recompute the sensors) and with
  // Euler: sensordata after each step
  double e_step[2] = {0, 0};
  for (int variant = 0; variant < 2; ++variant) {
    mm->opt.integrator = variant == 0 ? mjINT_RK4 : mjINT_EULER;
    auto mv = std::make_unique<ph::model<double, D>>(*m);
    mv->integrator = variant == 0 ? ph::integrator_kind::rk4 : ph::integrator_kind::euler;
    mj_resetData(mm.get(), md.get());
    rlk_test::copy_state_from_mujoco(mm.get(), md.get(), *o);
    for (int t = 0; t < 500; ++t) {
      for (int i = 0; i < mm->nu; ++i) md->ctrl[i] = o->ctrl[i] = u(rng);
      mj_step(mm.get(), md.get());
      ph::step(*mv, *o);
      REQUIRE(o->warning == 0);
      e_step[variant] = std::max(e_step[variant], sensor_error(mm.get(), md.get(), *o, nullptr));
      e_step[variant] = std::max(e_step[variant], rel_err(o->qpos[0], md->qpos[0]));
    }
  }
  mm->opt.integrator = mjINT_RK4;
  // disabled: both leave sensordata as it was
  mm->opt.disableflags |= mjDSBL_SENSOR;
  auto m_off = std::make_unique<ph::model<double, D>>(*m);
  m_off->disableflags |= ph::disable_sensor;
  for (int i = 0; i < D::nsensordata; ++i) o->sensordata[i] = -7.0;
  mj_resetData(mm.get(), md.get());
  for (int i = 0; i < mm->nsensordata; ++i) md->sensordata[i] = -7.0;
  mj_forward(mm.get(), md.get());
  ph::forward(*m_off, *o);
  const double e_off = sensor_error(mm.get(), md.get(), *o, nullptr);
  CHECK(o->sensordata[0] == -7.0);
  std::printf("[smooth] sensors: %d on bodies, body frames, geoms and sites: forward from 3000 states %.3g (%ld "
              "values at their cutoff; physics::sensors alone %.3g); after each of 500 RK4 / Euler steps %.3g / %.3g; "
              "disabled %.3g\n",
              D::nsensor, e_fwd, clipped, e_alone, e_step[0], e_step[1], e_off);
  CHECK(e_fwd == 0);
  CHECK(e_alone == 0);
  CHECK(clipped > 1000);
  CHECK(e_step[0] == 0);
  CHECK(e_step[1] == 0);
  CHECK(e_off == 0);
}
