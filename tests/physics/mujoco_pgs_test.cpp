// The PGS solver (<option solver="PGS"/>, as Gymnasium's Humanoid models use) against MuJoCo's
// C library, with solver set to PGS on both sides of the three Gymnasium models: the solver alone
// on MuJoCo's rows (efc_force, efc_state, qfrc_constraint, qacc, solver_niter) at trajectory
// states, with and without perturbed reference accelerations, islands, the warm start, and at
// several iteration limits; then whole trajectories of physics::step against mj_step (RK4 and
// Euler) run side by side from the same reset. PGS follows MuJoCo's order of operations, so the
// measured errors are 0 (bit-identical); the tolerances are those of the Newton tests.
#include "mujoco_fixture.hpp"

#include <rlkernels/physics/collision.hpp>
#include <rlkernels/physics/constraint.hpp>
#include <rlkernels/physics/forward.hpp>
#include <rlkernels/physics/smooth.hpp>
#include <rlkernels/physics/solver.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>

using namespace rlk_test;
namespace physics = rlkernels::physics;

namespace {

/// A solver setting, applied the same way to MuJoCo's model and ours.
struct pgs_variant {
  const char* name;
  int iterations;    // 0: the model's
  int disableflags;  // mjtDisableBit, on both sides
};

constexpr pgs_variant pgs_variants[] = {
    {"default", 0, 0},
    {"50 iterations", 50, 0},
    {"3 iterations", 3, 0},
    {"no islands", 0, mjDSBL_ISLAND},
    {"no warm start", 0, mjDSBL_WARMSTART},
};

template <class Case>
void run_pgs_solver(int episodes, int steps_per_episode, int frame_skip, double noise, double perturb) {
  using Dims = physics::dims_with_pgs<typename Case::dims>;  // room for PGS in the workspace
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  m->opt.solver = mjSOL_PGS;  // the trajectory: PGS with the model's settings, so warm starts are PGS's
  const auto mj_solve = load_mj_model(model_file(Case::xml));
  mjModel* ms = mj_solve.get();
  ms->opt.solver = mjSOL_PGS;
  const auto sim = make_mj_data(m);
  const auto ref = make_mj_data(ms);
  auto ours = physics::rebind<Dims>(Case::template model<double>());
  ours.solver = physics::solver_kind::pgs;
  auto ours_float = physics::rebind<Dims>(Case::template model<float>());
  ours_float.solver = physics::solver_kind::pgs;

  double e_force = 0, e_qfrc = 0, e_qacc = 0, e_float = 0;
  long solves = 0, state_diff = 0, niter_diff = 0, niter = 0, max_niter = 0, float_nonfinite = 0, rows = 0;
  int max_float_niter = 0;
  test_rng rng(4242);
  const int nv = m->nv;
  for (int ep = 0; ep < episodes; ++ep) {
    mj_resetData(m, sim.get());
    for (int i = 0; i < m->nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
    for (int i = 0; i < nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
    for (int t = 0; t < steps_per_episode; ++t) {
      for (int a = 0; a < m->nu; ++a) sim->ctrl[a] = rng.uniform(-1.0, 1.0);
      for (int f = 0; f < frame_skip; ++f) {
        for (const pgs_variant& v : pgs_variants) {
          for (int perturbed = 0; perturbed < 2; ++perturbed) {
            INFO(Case::name << " episode " << ep << " step " << t << " frame " << f << " variant " << v.name
                            << (perturbed ? " (perturbed aref)" : ""));
            ms->opt.iterations = v.iterations ? v.iterations : m->opt.iterations;
            ms->opt.disableflags = m->opt.disableflags | v.disableflags;
            auto om = ours;
            om.iterations = ms->opt.iterations;
            om.disableflags = ms->opt.disableflags;
            mj_resetData(ms, ref.get());
            for (int i = 0; i < m->nq; ++i) ref->qpos[i] = sim->qpos[i];
            for (int i = 0; i < nv; ++i) ref->qvel[i] = sim->qvel[i];
            for (int i = 0; i < nv; ++i) ref->qacc_warmstart[i] = sim->qacc_warmstart[i];
            for (int i = 0; i < m->nu; ++i) ref->ctrl[i] = sim->ctrl[i];
            mj_forward(ms, ref.get());
            if (ref->nefc == 0) break;
            auto op = std::make_unique<physics::data<double, Dims>>();
            physics::data<double, Dims>& o = *op;
            fill_from_mujoco(ms, ref.get(), o);
            physics::factor_inertia(om, o);
            physics::collide(om, o);
            physics::make_constraint(om, o);
            physics::reference_constraint(om, o);
            REQUIRE(o.nefc == ref->nefc);
            if (perturbed) {
              // rows switch between active and inactive in the sweeps: restarts and reverted updates
              for (int r = 0; r < o.nefc; ++r) {
                ref->efc_aref[r] += rng.uniform(-perturb, perturb) * (std::fabs(ref->efc_aref[r]) + 1.0);
                o.efc_aref[r] = ref->efc_aref[r];
              }
              mj_fwdConstraint(ms, ref.get());
            }
            physics::solve_constraint(om, o);
            for (int r = 0; r < o.nefc; ++r) {
              e_force = std::max(e_force, scaled_error(o.efc_force[r], ref->efc_force[r]));
              state_diff += o.efc_state[r] != ref->efc_state[r];
            }
            e_qfrc = std::max(e_qfrc, max_scaled_error(o.qfrc_constraint, ref->qfrc_constraint, nv));
            e_qacc = std::max(e_qacc, max_scaled_error(o.qacc, ref->qacc, nv));
            CHECK(o.solver_neval == 0);
            niter_diff += o.solver_niter != ref->solver_niter[0];
            niter += o.solver_niter;
            max_niter = std::max<long>(max_niter, o.solver_niter);
            rows += o.nefc;
            ++solves;

            // float: the same inputs rounded once; finite, bounded and close to double
            auto ofp = std::make_unique<physics::data<float, Dims>>();
            physics::data<float, Dims>& of = *ofp;
            auto omf = ours_float;
            omf.iterations = om.iterations;
            omf.disableflags = om.disableflags;
            fill_from_mujoco(ms, ref.get(), of);
            physics::factor_inertia(omf, of);
            physics::collide(omf, of);
            physics::make_constraint(omf, of);
            physics::reference_constraint(omf, of);
            if (of.nefc != o.nefc) continue;
            if (perturbed)
              for (int r = 0; r < of.nefc; ++r) of.efc_aref[r] = float(o.efc_aref[r]);
            physics::solve_constraint(omf, of);
            bool finite = true;
            double ef = 0;
            for (int i = 0; i < nv; ++i) {
              finite = finite && std::isfinite(of.qacc[i]);
              // relative to the acceleration's size: PGS stops early, at a point that rounding moves
              ef = std::max(ef, std::fabs(of.qacc[i] - o.qacc[i]) / std::max(1.0, std::fabs(o.qacc[i])));
            }
            float_nonfinite += !finite;
            max_float_niter = std::max(max_float_niter, of.solver_niter);
            if (!perturbed && v.iterations == 0 && v.disableflags == 0) e_float = std::max(e_float, ef);
          }
        }
        mj_step(m, sim.get());
      }
    }
  }
  std::printf("[pgs] %s solver: %ld solves (%ld rows; variants: model's/50/3 iterations, no islands, no warm start; "
              "with and without perturbed aref), %ld iterations (max %ld); efc_force %.3g, qfrc_constraint %.3g, "
              "qacc %.3g vs MuJoCo; efc_state differs in %ld rows, solver_niter in %ld solves; float qacc vs double "
              "%.3g, non-finite %ld, max niter %d\n",
              Case::name, solves, rows, niter, max_niter, e_force, e_qfrc, e_qacc, state_diff, niter_diff, e_float,
              float_nonfinite, max_float_niter);
  CHECK(solves > 500);
  CHECK(e_force <= 1e-12);
  CHECK(e_qfrc <= 1e-12);
  CHECK(e_qacc <= 1e-12);
  CHECK(state_diff == 0);
  CHECK(niter_diff == 0);
  CHECK(float_nonfinite == 0);
  CHECK(max_float_niter <= ours_float.iterations);
  CHECK(e_float <= 1e-2);
}

}  // namespace

TEST_CASE("the PGS solver equals MuJoCo's on trajectory and perturbed constraint sets", "[mujoco][constraint][pgs]") {
  SECTION("hopper") { run_pgs_solver<hopper_case>(6, 150, 4, 5e-3, 3.0); }
  SECTION("walker2d") { run_pgs_solver<walker2d_case>(6, 150, 4, 5e-3, 3.0); }
  SECTION("half_cheetah") { run_pgs_solver<half_cheetah_case>(6, 120, 5, 0.1, 3.0); }
  SECTION("friction_quad (friction loss, condim 1/3/4/6)") { run_pgs_solver<friction_quad_case>(4, 120, 2, 0.1, 3.0); }
}

namespace {

/// physics::step against mj_step with PGS on both sides, each running its own trajectory from the
/// same perturbed reset with the same controls (nothing copied between them after the reset), with
/// the model's integrator (RK4) and with Euler; a float run beside them must stay finite.
template <class Case>
void run_pgs_trajectories(int episodes, int steps, int frame_skip, double noise) {
  using Dims = physics::dims_with_pgs<typename Case::dims>;  // room for PGS in the workspace
  for (int integ = 0; integ < 2; ++integ) {
    const auto mj = load_mj_model(model_file(Case::xml));
    mjModel* m = mj.get();
    m->opt.solver = mjSOL_PGS;
    auto ours = physics::rebind<Dims>(Case::template model<double>());
    ours.solver = physics::solver_kind::pgs;
    auto ours_float = physics::rebind<Dims>(Case::template model<float>());
    ours_float.solver = physics::solver_kind::pgs;
    if (integ == 1) {  // the other integrator (HalfCheetah's own is Euler, the others' RK4)
      const bool rk4 = m->opt.integrator == mjINT_RK4;
      m->opt.integrator = rk4 ? mjINT_EULER : mjINT_RK4;
      ours.integrator = ours_float.integrator = rk4 ? physics::integrator_kind::euler : physics::integrator_kind::rk4;
    }
    const char* integ_name = m->opt.integrator == mjINT_RK4 ? "RK4" : "Euler";
    const auto sim = make_mj_data(m);
    auto op = std::make_unique<physics::data<double, Dims>>();
    auto ofp = std::make_unique<physics::data<float, Dims>>();
    physics::data<double, Dims>& o = *op;
    physics::data<float, Dims>& of = *ofp;
    test_rng rng(90210 + integ);
    const int nv = m->nv, nq = m->nq;
    double err = 0, e_float = 0;
    long nsteps = 0, constrained = 0, niter_diff = 0, float_nonfinite = 0;
    for (int ep = 0; ep < episodes; ++ep) {
      mj_resetData(m, sim.get());
      for (int i = 0; i < nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
      for (int i = 0; i < nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
      copy_state_from_mujoco(m, sim.get(), o);
      copy_state_from_mujoco(m, sim.get(), of);
      bool float_ok = true;
      for (int t = 0; t < steps; ++t) {
        for (int a = 0; a < m->nu; ++a) sim->ctrl[a] = o.ctrl[a] = rng.uniform(-1.0, 1.0);
        for (int a = 0; a < m->nu; ++a) of.ctrl[a] = float(o.ctrl[a]);
        for (int f = 0; f < frame_skip; ++f) {
          INFO(Case::name << " " << integ_name << " episode " << ep << " step " << t << " frame " << f);
          mj_step(m, sim.get());
          physics::step(ours, o);
          REQUIRE(o.warning == 0);
          err = std::max(err, max_scaled_error(o.qpos, sim->qpos, nq));
          err = std::max(err, max_scaled_error(o.qvel, sim->qvel, nv));
          err = std::max(err, max_scaled_error(o.qacc_warmstart, sim->qacc_warmstart, nv));
          err = std::max(err, max_scaled_error(o.qfrc_constraint, sim->qfrc_constraint, nv));
          niter_diff += o.solver_niter != sim->solver_niter[0];
          constrained += sim->nefc > 0;
          ++nsteps;
          if (float_ok) {
            physics::step(ours_float, of);
            for (int i = 0; i < nv; ++i) float_ok = float_ok && std::isfinite(of.qvel[i]);
            for (int i = 0; i < nq; ++i) float_ok = float_ok && std::isfinite(of.qpos[i]);
            float_ok = float_ok && of.warning == 0;
            if (!float_ok) ++float_nonfinite;
          }
        }
        // float drifts from double along a contact-rich trajectory; compared over the first 5 env steps
        if (float_ok && t < 5)
          for (int i = 0; i < nq; ++i) e_float = std::max(e_float, scaled_error(of.qpos[i], o.qpos[i]));
      }
    }
    std::printf("[pgs] %s %s trajectories: %ld steps (%ld with rows); qpos/qvel/warmstart/qfrc_constraint vs mj_step "
                "%.3g; solver_niter differs in %ld steps; float: non-finite in %ld episodes, qpos vs double over the first "
                "5 env steps %.3g\n",
                Case::name, integ_name, nsteps, constrained, err, niter_diff, float_nonfinite, e_float);
    CHECK(constrained > nsteps / 2);
    CHECK(err <= 1e-12);
    CHECK(niter_diff == 0);
    CHECK(float_nonfinite == 0);
    CHECK(e_float <= 0.05);
  }
}

}  // namespace

TEST_CASE("step with the PGS solver equals mj_step along whole trajectories", "[mujoco][constraint][pgs][forward]") {
  SECTION("hopper") { run_pgs_trajectories<hopper_case>(8, 500, 4, 5e-3); }
  SECTION("walker2d") { run_pgs_trajectories<walker2d_case>(8, 500, 4, 5e-3); }
  SECTION("half_cheetah") { run_pgs_trajectories<half_cheetah_case>(8, 500, 5, 0.1); }
  SECTION("friction_quad") { run_pgs_trajectories<friction_quad_case>(4, 300, 2, 0.1); }
}
