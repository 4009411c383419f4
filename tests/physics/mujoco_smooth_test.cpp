// The smooth dynamics (kinematics, mass matrix, bias, passive and actuator forces, unconstrained
// acceleration) and the integrators against MuJoCo itself, constraints disabled on both sides.
// Error measure, per quantity: max over its elements and the states of |ours - MuJoCo| / max(1, |MuJoCo|).
#include <catch2/catch.hpp>
#include <mujoco/mujoco.h>

#include <rlkernels/physics/forward.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

namespace {

namespace ph = rlkernels::physics;

struct hopper_test_dims {
  static constexpr int nq = 6, nv = 6, nu = 3, nbody = 5, njnt = 6, ngeom = 5, npair = 0, ncon = 0, nefc = 0;
};
struct walker2d_test_dims {
  static constexpr int nq = 9, nv = 9, nu = 6, nbody = 8, njnt = 9, ngeom = 8, npair = 0, ncon = 0, nefc = 0;
};
struct half_cheetah_test_dims {
  static constexpr int nq = 9, nv = 9, nu = 6, nbody = 8, njnt = 9, ngeom = 9, npair = 0, ncon = 0, nefc = 0;
};

struct mj_model_deleter { void operator()(mjModel* m) const { mj_deleteModel(m); } };
struct mj_data_deleter { void operator()(mjData* d) const { mj_deleteData(d); } };
using mj_model_ptr = std::unique_ptr<mjModel, mj_model_deleter>;
using mj_data_ptr = std::unique_ptr<mjData, mj_data_deleter>;

mj_model_ptr load(const char* file) {
  char err[1000] = "";
  const std::string path = std::string(RLK_GYMNASIUM_ASSETS) + "/" + file;
  mjModel* m = mj_loadXML(path.c_str(), nullptr, err, sizeof(err));
  INFO(path << ": " << err);
  REQUIRE(m != nullptr);
  return mj_model_ptr(m);
}

// The model constants the smooth stages read, copied from the compiled mjModel.
template <class D>
void fill_model(ph::model<double, D>& m, const mjModel* mm) {
  REQUIRE(mm->nq == D::nq);
  REQUIRE(mm->nv == D::nv);
  REQUIRE(mm->nu == D::nu);
  REQUIRE(mm->nbody == D::nbody);
  REQUIRE(mm->njnt == D::njnt);
  REQUIRE(mm->ngeom == D::ngeom);
  m.timestep = mm->opt.timestep;
  for (int k = 0; k < 3; ++k) m.gravity[k] = mm->opt.gravity[k];
  m.integrator = static_cast<ph::integrator_kind>(mm->opt.integrator);
  m.disableflags = mm->opt.disableflags;
  m.enableflags = mm->opt.enableflags;
  for (int i = 0; i < D::nbody; ++i) {
    m.body_parentid[i] = mm->body_parentid[i];
    m.body_rootid[i] = mm->body_rootid[i];
    m.body_jntnum[i] = mm->body_jntnum[i];
    m.body_jntadr[i] = mm->body_jntadr[i];
    m.body_dofnum[i] = mm->body_dofnum[i];
    m.body_dofadr[i] = mm->body_dofadr[i];
    m.body_sameframe[i] = mm->body_sameframe[i];
    m.body_mass[i] = mm->body_mass[i];
    m.body_subtreemass[i] = mm->body_subtreemass[i];
    for (int k = 0; k < 3; ++k) {
      m.body_pos[i][k] = mm->body_pos[3 * i + k];
      m.body_ipos[i][k] = mm->body_ipos[3 * i + k];
      m.body_inertia[i][k] = mm->body_inertia[3 * i + k];
    }
    for (int k = 0; k < 4; ++k) {
      m.body_quat[i][k] = mm->body_quat[4 * i + k];
      m.body_iquat[i][k] = mm->body_iquat[4 * i + k];
    }
  }
  for (int j = 0; j < D::njnt; ++j) {
    m.jnt_type[j] = static_cast<ph::joint_type>(mm->jnt_type[j]);
    m.jnt_qposadr[j] = mm->jnt_qposadr[j];
    m.jnt_dofadr[j] = mm->jnt_dofadr[j];
    m.jnt_bodyid[j] = mm->jnt_bodyid[j];
    m.jnt_actuatorid[j] = mm->jnt_actuatorid[j];
    m.jnt_stiffness[j] = mm->jnt_stiffness[j];
    for (int k = 0; k < 3; ++k) {
      m.jnt_pos[j][k] = mm->jnt_pos[3 * j + k];
      m.jnt_axis[j][k] = mm->jnt_axis[3 * j + k];
    }
  }
  for (int i = 0; i < D::nv; ++i) {
    m.dof_bodyid[i] = mm->dof_bodyid[i];
    m.dof_jntid[i] = mm->dof_jntid[i];
    m.dof_parentid[i] = mm->dof_parentid[i];
    m.dof_armature[i] = mm->dof_armature[i];
    m.dof_damping[i] = mm->dof_damping[i];
    m.dof_simplenum[i] = mm->dof_simplenum[i];
    m.dof_M0[i] = mm->dof_M0[i];
  }
  for (int i = 0; i < D::nq; ++i) {
    m.qpos0[i] = mm->qpos0[i];
    m.qpos_spring[i] = mm->qpos_spring[i];
  }
  for (int g = 0; g < D::ngeom; ++g) {
    m.geom_bodyid[g] = mm->geom_bodyid[g];
    m.geom_sameframe[g] = mm->geom_sameframe[g];
    for (int k = 0; k < 3; ++k) m.geom_pos[g][k] = mm->geom_pos[3 * g + k];
    for (int k = 0; k < 4; ++k) m.geom_quat[g][k] = mm->geom_quat[4 * g + k];
  }
  for (int i = 0; i < D::nu; ++i) {
    REQUIRE(mm->actuator_trntype[i] == mjTRN_JOINT);
    REQUIRE(mm->actuator_gaintype[i] == mjGAIN_FIXED);
    REQUIRE(mm->actuator_biastype[i] == mjBIAS_NONE);
    m.actuator_trnid[i] = mm->actuator_trnid[2 * i];
    m.actuator_ctrllimited[i] = mm->actuator_ctrllimited[i];
    m.actuator_forcelimited[i] = mm->actuator_forcelimited[i];
    m.actuator_gear[i] = mm->actuator_gear[6 * i];
    m.actuator_gainprm[i] = mm->actuator_gainprm[mjNGAIN * i];
    for (int k = 0; k < 2; ++k) {
      m.actuator_ctrlrange[i][k] = mm->actuator_ctrlrange[2 * i + k];
      m.actuator_forcerange[i][k] = mm->actuator_forcerange[2 * i + k];
    }
  }
}

double rel_err(double a, double b) { return std::fabs(a - b) / std::max(1.0, std::fabs(b)); }

struct errors {
  double xpos = 0, xmat = 0, geom_xpos = 0, geom_xmat = 0, qM = 0, bias = 0, passive = 0, actuator = 0,
         qacc_smooth = 0;
  void print(const char* name) const {
    std::printf("[smooth] %-12s max rel err: xpos %.2e xmat %.2e geom_xpos %.2e geom_xmat %.2e qM %.2e "
                "qfrc_bias %.2e qfrc_passive %.2e qfrc_actuator %.2e qacc_smooth %.2e\n",
                name, xpos, xmat, geom_xpos, geom_xmat, qM, bias, passive, actuator, qacc_smooth);
  }
};

template <class D>
void random_state(std::mt19937_64& rng, const mjModel* mm, double* qpos, double* qvel, double* ctrl) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int j = 0; j < mm->njnt; ++j) {
    const int a = mm->jnt_qposadr[j];
    if (mm->jnt_limited[j]) {
      const double lo = mm->jnt_range[2 * j], hi = mm->jnt_range[2 * j + 1];
      qpos[a] = lo + (hi - lo) * (0.5 + 0.5 * u(rng)) + 0.1 * u(rng);
    } else {
      qpos[a] = mm->qpos0[a] + 2.0 * u(rng);
    }
  }
  for (int i = 0; i < D::nv; ++i) qvel[i] = 10.0 * u(rng);
  for (int i = 0; i < D::nu; ++i) ctrl[i] = 2.0 * u(rng);  // half of them outside ctrlrange
}

template <class D>
errors compare_forward(const char* file, int nstates, bool deliberate_bug = false) {
  mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT;
  mj_data_ptr md(mj_makeData(mm.get()));
  auto m = std::make_unique<ph::model<double, D>>();
  fill_model(*m, mm.get());
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
    for (int g = 0; g < D::ngeom; ++g) {
      for (int k = 0; k < 3; ++k)
        e.geom_xpos = std::max(e.geom_xpos, rel_err(d->geom_xpos[g][k], md->geom_xpos[3 * g + k]));
      for (int k = 0; k < 9; ++k)
        e.geom_xmat = std::max(e.geom_xmat, rel_err(d->geom_xmat[g][k], md->geom_xmat[9 * g + k]));
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

template <class D>
void check_forward(const char* name, const char* file) {
  const errors e = compare_forward<D>(file, 3000);
  e.print(name);
  const double tol = 1e-12;
  CHECK(e.xpos <= tol);
  CHECK(e.xmat <= tol);
  CHECK(e.geom_xpos <= tol);
  CHECK(e.geom_xmat <= tol);
  CHECK(e.qM <= tol);
  CHECK(e.bias <= tol);
  CHECK(e.passive <= tol);
  CHECK(e.actuator <= tol);
  CHECK(e.qacc_smooth <= tol);
}

// Constraint-free trajectories with the model's own integrator; returns the max rel error of
// qpos/qvel over the first `early` steps and over all `nsteps`.
template <class D>
void compare_trajectory(const char* name, const char* file, int nsteps, int early, double* err_early,
                        double* err_all) {
  mj_model_ptr mm = load(file);
  mm->opt.disableflags |= mjDSBL_CONSTRAINT;
  mj_data_ptr md(mj_makeData(mm.get()));
  auto m = std::make_unique<ph::model<double, D>>();
  fill_model(*m, mm.get());
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
  std::printf("[smooth] %-12s %s trajectory (constraints off): max rel err of qpos/qvel/warmstart %.2e over "
              "the first %d steps, %.2e over %d steps\n",
              name, mm->opt.integrator == mjINT_RK4 ? "RK4" : "Euler", *err_early, early, *err_all, nsteps);
}

}  // namespace

TEST_CASE("smooth dynamics agree with mj_forward (constraints disabled)", "[mujoco][smooth]") {
  SECTION("hopper") { check_forward<hopper_test_dims>("hopper", "hopper.xml"); }
  SECTION("walker2d") { check_forward<walker2d_test_dims>("walker2d", "walker2d_v5.xml"); }
  SECTION("half_cheetah") { check_forward<half_cheetah_test_dims>("half_cheetah", "half_cheetah.xml"); }
}

TEST_CASE("a deliberate bug (no armature) is caught", "[mujoco][smooth]") {
  const errors e = compare_forward<hopper_test_dims>("hopper.xml", 50, true);
  std::printf("[smooth] deliberate bug (armature dropped): qM err %.2e, qacc_smooth err %.2e\n", e.qM, e.qacc_smooth);
  CHECK(e.qM > 1e-3);
  CHECK(e.qacc_smooth > 1e-3);
}

TEST_CASE("constraint-free trajectories agree with mj_step", "[mujoco][smooth]") {
  double early = 0, all = 0;
  SECTION("hopper (RK4)") {
    compare_trajectory<hopper_test_dims>("hopper", "hopper.xml", 500, 20, &early, &all);
  }
  SECTION("walker2d (RK4)") {
    compare_trajectory<walker2d_test_dims>("walker2d", "walker2d_v5.xml", 500, 20, &early, &all);
  }
  SECTION("half_cheetah (Euler, implicit damping)") {
    compare_trajectory<half_cheetah_test_dims>("half_cheetah", "half_cheetah.xml", 500, 20, &early, &all);
  }
  CHECK(early <= 1e-12);
  CHECK(all <= 1e-9);
}
