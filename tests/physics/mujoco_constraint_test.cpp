// Collision, constraint rows and the Newton solver against MuJoCo's C library along random
// trajectories of the three Gymnasium models. Our position/velocity-stage inputs are copied FROM
// MuJoCo's mjData after mj_forward (geom frames, cdof, subtree_com, qM (factorised by smooth.hpp's
// factor_inertia), qfrc_smooth, qacc_smooth),
// so these stages are tested on their own: the same contacts (pairs, count, order) and rows
// (types, ids), contact geometry and every row quantity to rounding, and the constrained
// acceleration against a tightly converged MuJoCo solve and against MuJoCo's default (early
// stopping) settings, with the same iteration and line-search counts. The stages follow MuJoCo's
// order of operations, so the measured errors are 0 (bit-identical); the tolerances are the
// issue's. Also: the colliders MuJoCo's models here do not reach (spheres, parallel capsules),
// perturbed constraint sets, extreme states, float, and forward/step with constraints.
#include "mujoco_fixture.hpp"

#include <rlkernels/physics/collision.hpp>
#include <rlkernels/physics/constraint.hpp>
#include <rlkernels/physics/smooth.hpp>
#include <rlkernels/physics/solver.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>

using namespace rlk_test;
namespace physics = rlkernels::physics;

namespace {

template <class Scalar, class Dims>
void run_stages(const physics::model<Scalar, Dims>& m, physics::data<Scalar, Dims>& d) {
  physics::factor_inertia(m, d);  // of the qM copied from MuJoCo (the solver's M^-1)
  physics::collide(m, d);
  physics::make_constraint(m, d);
  physics::reference_constraint(m, d);
  physics::solve_constraint(m, d);
}

struct max_errors {
  double contact_geom = 0, contact_param = 0;
  double J = 0, pos = 0, margin = 0, diag = 0, R = 0, D = 0, KBIP = 0, vel = 0, aref = 0;
  double qacc_trunc = 0, qacc_tight = 0, force_tight = 0, qacc_default = 0, qacc_float = 0;
  long states = 0, with_contacts = 0, contacts = 0, rows = 0, rows_limit = 0, rows_frictionless = 0, rows_pyramidal = 0;
  long rows_friction = 0, contacts_condim[7] = {0, 0, 0, 0, 0, 0, 0};
  long excluded = 0, self_contacts = 0;
  long neval_diff = 0, niter_diff = 0, niter_ours = 0, niter_mj = 0, float_nonfinite = 0;
  int max_float_niter = 0;
};

void upd(double& e, double v) { e = std::max(e, std::isnan(v) ? INFINITY : v); }
double rel(double a, double b) { return scaled_error(a, b); }

/// Compares contacts and rows of ours with MuJoCo's data d (after mj_forward); REQUIREs structure.
template <class Dims>
void compare_rows(const mjModel* m, const mjData* d, const physics::data<double, Dims>& o, max_errors& e) {
  const int nv = m->nv;
  REQUIRE(o.ncon == d->ncon);
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& c = d->contact[i];
    const auto& oc = o.con[i];
    INFO("contact " << i);
    REQUIRE(oc.geom1 == c.geom[0]);
    REQUIRE(oc.geom2 == c.geom[1]);
    REQUIRE(oc.dim == c.dim);
    REQUIRE(oc.exclude == (c.exclude != 0 ? 1 : 0));
    REQUIRE(oc.efc_address == c.efc_address);
    e.excluded += oc.exclude;
    if (c.dim >= 1 && c.dim <= 6) ++e.contacts_condim[c.dim];
    e.self_contacts += m->geom_type[c.geom[0]] != mjGEOM_PLANE;
    upd(e.contact_geom, rel(oc.dist, c.dist));
    for (int k = 0; k < 3; ++k) upd(e.contact_geom, rel(oc.pos[k], c.pos[k]));
    for (int k = 0; k < 9; ++k) upd(e.contact_geom, rel(oc.frame[k], c.frame[k]));
    upd(e.contact_param, rel(oc.includemargin, c.includemargin));
    upd(e.contact_param, rel(oc.mu, c.mu));
    for (int k = 0; k < 5; ++k) upd(e.contact_param, rel(oc.friction[k], c.friction[k]));
    for (int k = 0; k < 2; ++k) upd(e.contact_param, rel(o.con_solref[i][k], c.solref[k]));
    for (int k = 0; k < 5; ++k) upd(e.contact_param, rel(o.con_solimp[i][k], c.solimp[k]));
  }
  REQUIRE(o.nefc == d->nefc);
  REQUIRE(o.nf == d->nf);
  REQUIRE(o.nl == d->nl);
  for (int r = 0; r < d->nefc; ++r) {
    INFO("row " << r);
    REQUIRE(o.efc_type[r] == d->efc_type[r]);
    REQUIRE(o.efc_id[r] == d->efc_id[r]);
    for (int k = 0; k < nv; ++k) upd(e.J, rel(o.efc_J[r][k], d->efc_J[r * nv + k]));
    upd(e.pos, rel(o.efc_pos[r], d->efc_pos[r]));
    upd(e.margin, rel(o.efc_margin[r], d->efc_margin[r]));
    // relative: diagA, R, D, KBIP and aref span many orders of magnitude
    auto relative = [](double a, double b) { return std::fabs(a - b) / std::max(1e-300, std::fabs(b)); };
    upd(e.diag, relative(o.efc_diagApprox[r], d->efc_diagA[r]));
    upd(e.R, relative(o.efc_R[r], d->efc_R[r]));
    upd(e.D, relative(o.efc_D[r], d->efc_D[r]));
    for (int k = 0; k < 4; ++k)
      upd(e.KBIP, std::fabs(o.efc_KBIP[r][k] - d->efc_KBIP[4 * r + k]) / std::max(1.0, std::fabs(d->efc_KBIP[4 * r + k])));
    upd(e.vel, rel(o.efc_vel[r], d->efc_vel[r]));
    // aref = -B vel - K I (pos - margin) cancels: relative to the size of its terms
    const double* kbip = d->efc_KBIP + 4 * r;
    const double terms = std::fabs(kbip[1] * d->efc_vel[r]) + std::fabs(kbip[0] * kbip[2] * (d->efc_pos[r] - d->efc_margin[r]));
    upd(e.aref, std::fabs(o.efc_aref[r] - d->efc_aref[r]) / std::max(1.0, terms));
    if (d->efc_type[r] == mjCNSTR_FRICTION_DOF) ++e.rows_friction;
    if (d->efc_type[r] == mjCNSTR_LIMIT_JOINT) ++e.rows_limit;
    if (d->efc_type[r] == mjCNSTR_CONTACT_FRICTIONLESS) ++e.rows_frictionless;
    if (d->efc_type[r] == mjCNSTR_CONTACT_PYRAMIDAL) ++e.rows_pyramidal;
  }
  e.contacts += d->ncon;
  e.rows += d->nefc;
  e.with_contacts += d->ncon > 0;
}

template <class Case>
void run_case(int episodes, int steps_per_episode, int frame_skip, double noise, bool print) {
  using Dims = typename Case::dims;
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  const auto mj_tight_model = load_mj_model(model_file(Case::xml));
  mjModel* mt = mj_tight_model.get();
  mt->opt.tolerance = 1e-15;
  mt->opt.iterations = 1000;
  mt->opt.ls_iterations = 1000;
  // truncated solves (few Newton and line-search iterations): exercise the line search's
  // bracketing and its give-up paths, which a converged answer hides
  constexpr int ntrunc = 3;
  const int trunc_iter[ntrunc] = {1, 1, 2}, trunc_ls[ntrunc] = {2, 4, 7};
  mj_model_ptr mj_trunc[ntrunc];
  for (int k = 0; k < ntrunc; ++k) {
    mj_trunc[k] = load_mj_model(model_file(Case::xml));
    mj_trunc[k]->opt.iterations = trunc_iter[k];
    mj_trunc[k]->opt.ls_iterations = trunc_ls[k];
  }
  const auto sim = make_mj_data(m);  // the trajectory (default settings, as Gymnasium)
  const auto ref = make_mj_data(m);  // mj_forward at each state, default settings
  const auto tight = make_mj_data(mt);

  auto ours_default = Case::template model<double>();
  auto ours_tight = ours_default;
  ours_tight.tolerance = 1e-15;
  ours_tight.iterations = 1000;
  ours_tight.ls_iterations = 1000;
  const auto ours_float = Case::template model<float>();

  max_errors e;
  test_rng rng(12345);
  const int nv = m->nv;
  for (int ep = 0; ep < episodes; ++ep) {
    mj_resetData(m, sim.get());
    for (int i = 0; i < m->nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
    for (int i = 0; i < nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
    for (int t = 0; t < steps_per_episode; ++t) {
      for (int a = 0; a < m->nu; ++a) sim->ctrl[a] = rng.uniform(-1.0, 1.0);
      for (int f = 0; f < frame_skip; ++f) {
        // the state mj_step is about to advance: MuJoCo's forward pass at it, default and tight
        for (mjData* dd : {ref.get(), tight.get()}) {
          mj_resetData(m, dd);
          for (int i = 0; i < m->nq; ++i) dd->qpos[i] = sim->qpos[i];
          for (int i = 0; i < nv; ++i) dd->qvel[i] = sim->qvel[i];
          for (int i = 0; i < nv; ++i) dd->qacc_warmstart[i] = sim->qacc_warmstart[i];
          for (int i = 0; i < m->nu; ++i) dd->ctrl[i] = sim->ctrl[i];
          dd->time = sim->time;
        }
        mj_forward(m, ref.get());
        mj_forward(mt, tight.get());
        INFO(Case::name << " episode " << ep << " step " << t << " frame " << f);

        physics::data<double, Dims> o;
        fill_from_mujoco(m, ref.get(), o);
        run_stages(ours_default, o);
        REQUIRE(o.warning == 0);
        compare_rows(m, ref.get(), o, e);
        upd(e.qacc_default, max_scaled_error(o.qacc, ref->qacc, nv));
        e.niter_ours += o.solver_niter;
        e.niter_mj += mj_solver_niter(ref.get());
        e.niter_diff += o.solver_niter != mj_solver_niter(ref.get());
        e.neval_diff += o.solver_neval != mj_solver_neval(ref.get());

        physics::data<double, Dims> ot;
        fill_from_mujoco(m, ref.get(), ot);
        run_stages(ours_tight, ot);
        REQUIRE(ot.nefc == tight->nefc);
        upd(e.qacc_tight, max_scaled_error(ot.qacc, tight->qacc, nv));
        // (MuJoCo's island solver leaves its final states in iefc_state, not efc_state: forces only)
        for (int r = 0; r < ot.nefc; ++r) upd(e.force_tight, scaled_error(ot.efc_force[r], tight->efc_force[r]));

        for (int k = 0; k < ntrunc; ++k) {
          mjData* dd = tight.get();  // reused: same sizes
          mj_resetData(mj_trunc[k].get(), dd);
          for (int i = 0; i < m->nq; ++i) dd->qpos[i] = sim->qpos[i];
          for (int i = 0; i < nv; ++i) dd->qvel[i] = sim->qvel[i];
          for (int i = 0; i < nv; ++i) dd->qacc_warmstart[i] = sim->qacc_warmstart[i];
          for (int i = 0; i < m->nu; ++i) dd->ctrl[i] = sim->ctrl[i];
          mj_forward(mj_trunc[k].get(), dd);
          auto ours_trunc = ours_default;
          ours_trunc.iterations = trunc_iter[k];
          ours_trunc.ls_iterations = trunc_ls[k];
          physics::data<double, Dims> otr;
          fill_from_mujoco(m, ref.get(), otr);
          run_stages(ours_trunc, otr);
          upd(e.qacc_trunc, max_scaled_error(otr.qacc, dd->qacc, nv));
        }

        // float: the same inputs rounded once; must terminate, never NaN
        physics::data<float, Dims> of;
        fill_from_mujoco(m, ref.get(), of);
        run_stages(ours_float, of);
        bool finite = true;
        for (int i = 0; i < nv; ++i) finite = finite && std::isfinite(of.qacc[i]);
        e.float_nonfinite += !finite;
        e.max_float_niter = std::max(e.max_float_niter, of.solver_niter);
        if (of.warning == 0 && of.nefc == o.nefc) {
          double ef = 0;
          for (int i = 0; i < nv; ++i) ef = std::max(ef, scaled_error(of.qacc[i], o.qacc[i]));
          upd(e.qacc_float, ef);
        }
        ++e.states;
        mj_step(m, sim.get());
      }
    }
  }
  if (print) {
    std::printf(
        "[constraint] %s: %ld states (%ld with contacts; %ld contacts, %ld of them geom-geom, %ld excluded; condim "
        "1/3/4/6: %ld/%ld/%ld/%ld; %ld rows: %ld friction loss, %ld limit, %ld frictionless, %ld pyramidal)\n"
        "  contact dist/pos/frame %.3g, params %.3g; efc_J %.3g pos %.3g margin %.3g diagApprox %.3g R %.3g D %.3g "
        "KBIP %.3g vel %.3g aref %.3g\n"
        "  qacc vs tight MuJoCo %.3g (efc_force %.3g); vs default MuJoCo %.3g; "
        "solver_niter differs in %ld states (ours %ld, MuJoCo %ld in total), line-search evaluations in %ld\n"
        "  truncated solves (1-2 iterations, 2-7 line-search evaluations): qacc %.3g\n"
        "  float: qacc vs double %.3g, non-finite %ld, max niter %d\n",
        Case::name, e.states, e.with_contacts, e.contacts, e.self_contacts, e.excluded, e.contacts_condim[1],
        e.contacts_condim[3], e.contacts_condim[4], e.contacts_condim[6], e.rows, e.rows_friction, e.rows_limit,
        e.rows_frictionless, e.rows_pyramidal, e.contact_geom, e.contact_param, e.J, e.pos, e.margin,
        e.diag, e.R, e.D, e.KBIP, e.vel, e.aref, e.qacc_tight, e.force_tight, e.qacc_default,
        e.niter_diff, e.niter_ours, e.niter_mj, e.neval_diff, e.qacc_trunc, e.qacc_float, e.float_nonfinite, e.max_float_niter);
  }
  CHECK(e.with_contacts > e.states / 4);  // the trajectories do exercise contacts
  CHECK(e.contact_geom <= 1e-12);
  CHECK(e.contact_param <= 1e-12);
  CHECK(e.J <= 1e-12);
  CHECK(e.pos <= 1e-12);
  CHECK(e.margin <= 1e-12);
  CHECK(e.diag <= 1e-12);
  CHECK(e.R <= 1e-12);
  CHECK(e.D <= 1e-12);
  CHECK(e.KBIP <= 1e-12);
  CHECK(e.vel <= 1e-12);
  CHECK(e.aref <= 1e-12);
  CHECK(e.qacc_tight <= 1e-11);
  CHECK(e.qacc_default <= 1e-10);  // early stopping on both sides, the same decisions: rounding level measured
  CHECK(e.qacc_trunc <= 1e-10);
  // the same stopping decisions and line-search paths (0 differences measured; rounding could flip a rare one)
  CHECK(e.niter_diff <= 1);
  CHECK(e.neval_diff <= 1);
  CHECK(e.float_nonfinite == 0);
  CHECK(e.max_float_niter <= ours_float.iterations);
}

}  // namespace

TEST_CASE("collision, constraint rows and Newton solve equal MuJoCo along random trajectories", "[mujoco][constraint]") {
  SECTION("hopper") { run_case<hopper_case>(6, 150, 4, 5e-3, true); }
  SECTION("walker2d") { run_case<walker2d_case>(6, 150, 4, 5e-3, true); }
  SECTION("half_cheetah") { run_case<half_cheetah_case>(6, 120, 5, 0.1, true); }
  SECTION("ant") { run_case<ant_case>(6, 150, 5, 0.1, true); }
  SECTION("box_crawler") { run_case<box_crawler_case>(6, 150, 2, 0.1, true); }
  SECTION("friction_quad (friction loss, condim 1/3/4/6)") { run_case<friction_quad_case>(6, 150, 2, 0.1, true); }
}

namespace {

/// The solver alone on harder problems than the trajectories give: MuJoCo's rows at trajectory
/// states with randomly perturbed reference accelerations (rows switch between active and
/// satisfied along the search direction, so the line search must bracket), solved by MuJoCo's
/// monolithic Newton (islands disabled: the meaninertia*nv scaling) and by ours.
template <class Case>
void run_perturbed(int episodes, int steps_per_episode, int frame_skip, double noise, double size) {
  using Dims = typename Case::dims;
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  const auto mj_solve_model = load_mj_model(model_file(Case::xml));
  mjModel* ms = mj_solve_model.get();
  ms->opt.disableflags |= mjDSBL_ISLAND;
  const auto sim = make_mj_data(m);
  const auto ref = make_mj_data(ms);
  auto ours = Case::template model<double>();
  ours.disableflags |= physics::disable_island;
  auto ours_short = ours;  // few line-search evaluations: the give-up paths
  ours_short.ls_iterations = 5;
  test_rng rng(777);
  const int nv = m->nv;
  double err = 0, err_short = 0;
  long solved = 0, niter_diff = 0, niter = 0, neval_diff = 0, nevals = 0;
  for (int ep = 0; ep < episodes; ++ep) {
    mj_resetData(m, sim.get());
    for (int i = 0; i < m->nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
    for (int i = 0; i < nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
    for (int t = 0; t < steps_per_episode; ++t) {
      for (int a = 0; a < m->nu; ++a) sim->ctrl[a] = rng.uniform(-1.0, 1.0);
      for (int f = 0; f < frame_skip; ++f) {
        for (int variant = 0; variant < 2; ++variant) {
          ms->opt.ls_iterations = variant == 0 ? m->opt.ls_iterations : ours_short.ls_iterations;
          mj_resetData(ms, ref.get());
          for (int i = 0; i < m->nq; ++i) ref->qpos[i] = sim->qpos[i];
          for (int i = 0; i < nv; ++i) ref->qvel[i] = sim->qvel[i];
          for (int i = 0; i < nv; ++i) ref->qacc_warmstart[i] = sim->qacc_warmstart[i];
          for (int i = 0; i < m->nu; ++i) ref->ctrl[i] = sim->ctrl[i];
          mj_forward(ms, ref.get());
          if (ref->nefc == 0) break;
          physics::data<double, Dims> o;
          fill_from_mujoco(ms, ref.get(), o);
          const auto& om = variant == 0 ? ours : ours_short;
          physics::factor_inertia(om, o);
          physics::collide(om, o);
          physics::make_constraint(om, o);
          physics::reference_constraint(om, o);
          REQUIRE(o.nefc == ref->nefc);
          for (int r = 0; r < o.nefc; ++r) {
            const double p = rng.uniform(-size, size) * (std::fabs(ref->efc_aref[r]) + 1.0);
            ref->efc_aref[r] += p;
            o.efc_aref[r] = ref->efc_aref[r];
          }
          mj_fwdConstraint(ms, ref.get());
          physics::solve_constraint(om, o);
          double& e = variant == 0 ? err : err_short;
          e = std::max(e, max_scaled_error(o.qacc, ref->qacc, nv));
          const int neval = mj_solver_neval(ref.get());
          neval_diff += o.solver_neval != neval;
          nevals += neval;
          if (variant == 0) {
            ++solved;
            niter += o.solver_niter;
            niter_diff += o.solver_niter != mj_solver_niter(ref.get());
          }
        }
        mj_step(m, sim.get());
      }
    }
  }
  ms->opt.ls_iterations = m->opt.ls_iterations;
  std::printf("[constraint] %s, perturbed aref (+-%g x), no islands: %ld solves, %ld Newton iterations; qacc vs MuJoCo %.3g "
              "(ls_iterations 5: %.3g); solver_niter differs in %ld; line-search evaluations (%ld) differ in %ld solves\n",
              Case::name, size, solved, niter, err, err_short, niter_diff, nevals, neval_diff);
  CHECK(solved > 100);
  CHECK(err <= 1e-10);
  CHECK(err_short <= 1e-10);
  CHECK(niter_diff <= solved / 100);
  CHECK(neval_diff <= 1);  // the same line-search path, evaluation by evaluation (0 measured)
}

}  // namespace

TEST_CASE("the Newton solver equals MuJoCo's on perturbed constraint sets", "[mujoco][constraint]") {
  SECTION("hopper") { run_perturbed<hopper_case>(3, 100, 4, 5e-3, 3.0); }
  SECTION("walker2d") { run_perturbed<walker2d_case>(3, 100, 4, 5e-3, 3.0); }
  SECTION("half_cheetah") { run_perturbed<half_cheetah_case>(3, 100, 5, 0.1, 3.0); }
  SECTION("ant") { run_perturbed<ant_case>(3, 100, 5, 0.1, 3.0); }
  SECTION("friction_quad") { run_perturbed<friction_quad_case>(3, 100, 2, 0.1, 3.0); }
}

namespace {

/// Requires the same condim and exclude flag, and returns the largest scaled error of our contact
/// `i`'s geometry (dist, includemargin, pos, frame) and mixed parameters (friction, solref, solimp).
template <class Dims>
double contact_error(const physics::data<double, Dims>& o, int i, const mjContact& c) {
  static_assert(physics::dims_efc_terms<Dims>, "the contacts' solref/solimp are kept only with dims_with_efc_terms");
  const physics::contact<double>& oc = o.con[i];
  REQUIRE(oc.dim == c.dim);
  REQUIRE(oc.exclude == (c.exclude != 0));
  double err = std::max(scaled_error(oc.dist, c.dist), scaled_error(oc.includemargin, c.includemargin));
  for (int k = 0; k < 3; ++k) err = std::max(err, scaled_error(oc.pos[k], c.pos[k]));
  for (int k = 0; k < 9; ++k) err = std::max(err, scaled_error(oc.frame[k], c.frame[k]));
  for (int k = 0; k < 5; ++k) err = std::max(err, scaled_error(oc.friction[k], c.friction[k]));
  for (int k = 0; k < 2; ++k) err = std::max(err, scaled_error(o.con_solref[i][k], c.solref[k]));
  for (int k = 0; k < 5; ++k) err = std::max(err, scaled_error(o.con_solimp[i][k], c.solimp[k]));
  return err;
}

/// Two free bodies over a plane, for the colliders the Gymnasium models do not reach (spheres,
/// parallel capsules) and for the parameter mixing (priority, solmix, condim, gaps).
struct primitive_dims {
  static constexpr bool efc_terms = true;  // keep the rows' terms and the contacts' solref/solimp to compare
  static constexpr int nq = 14, nv = 12, nu = 0, nbody = 3, njnt = 2, ngeom = 3;
  static constexpr int npair = 3, ncon = 6, nefc = 24;
};

std::string primitive_xml(const char* type_a, const char* size_a, const char* type_b, const char* size_b,
                          bool mixed_priority) {
  std::ostringstream x;
  x << "<mujoco><worldbody>"
    << "<geom name='floor' type='plane' size='5 5 .1' margin='0.004' gap='0.002' condim='3' friction='0.8 0.01 0.001'"
    << " solref='0.03 1.2' solimp='0.8 0.9 0.01 0.4 3' solmix='2'/>"
    << "<body name='a' pos='0 0 0.2'><freejoint/><geom type='" << type_a << "' size='" << size_a << "'"
    << " margin='0.01' gap='0.005' condim='1' friction='1.2 0.02 0.002' solref='0.02 1' solimp='0.9 0.95 0.001 0.5 2'"
    << " solmix='0.5'" << (mixed_priority ? " priority='1'" : "") << "/></body>"
    << "<body name='b' pos='0 0 0.4'><freejoint/><geom type='" << type_b << "' size='" << size_b << "'"
    << " margin='0.002' condim='3' friction='0.6 0.005 0.0001' solref='-1000 -20' solimp='0.7 0.99 0.02 0.5 1'"
    << " solmix='1'/></body>"
    << "</worldbody></mujoco>";
  return x.str();
}

}  // namespace

TEST_CASE("colliders equal MuJoCo's for spheres, capsules and parallel capsules", "[mujoco][constraint]") {
  struct shape_case {
    const char *ta, *sa, *tb, *sb;
    bool parallel;
  };
  const shape_case cases[] = {{"sphere", "0.1", "sphere", "0.07", false},
                              {"sphere", "0.08", "capsule", "0.05 0.15", false},
                              {"capsule", "0.06 0.2", "capsule", "0.05 0.15", false},
                              {"capsule", "0.06 0.2", "capsule", "0.05 0.15", true}};
  double err = 0;
  long contacts = 0, geom_geom = 0, excluded = 0, configurations = 0, two_contacts = 0;
  test_rng rng(99);
  for (const auto& sc : cases) {
    for (int prio = 0; prio < 2; ++prio) {
      const std::string xml = primitive_xml(sc.ta, sc.sa, sc.tb, sc.sb, prio == 1);
      char error[1024] = "";
      mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof error);
      INFO(error);
      REQUIRE(spec != nullptr);
      mjModel* raw = mj_compile(spec, nullptr);
      mj_deleteSpec(spec);
      REQUIRE(raw != nullptr);
      mj_model_ptr mm(raw);
      mjModel* m = mm.get();
      const auto dd = make_mj_data(m);
      mjData* d = dd.get();
      physics::model<double, primitive_dims> pm{};
      for (int g = 0; g < 3; ++g) {
        pm.geom_type_[g] = static_cast<physics::geom_type>(m->geom_type[g]);
        pm.geom_bodyid[g] = m->geom_bodyid[g];
        pm.geom_condim[g] = m->geom_condim[g];
        pm.geom_priority[g] = m->geom_priority[g];
        pm.geom_solmix[g] = m->geom_solmix[g];
        pm.geom_margin[g] = m->geom_margin[g];
        pm.geom_gap[g] = m->geom_gap[g];
        for (int k = 0; k < 2; ++k) pm.geom_solref[g][k] = m->geom_solref[2 * g + k];
        for (int k = 0; k < 5; ++k) pm.geom_solimp[g][k] = m->geom_solimp[5 * g + k];
        for (int k = 0; k < 3; ++k) pm.geom_friction[g][k] = m->geom_friction[3 * g + k];
        for (int k = 0; k < 3; ++k) pm.geom_size[g][k] = m->geom_size[3 * g + k];
      }
      const int pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
      for (int p = 0; p < 3; ++p) {
        pm.pair_geom1[p] = pairs[p][0];
        pm.pair_geom2[p] = pairs[p][1];
        pm.pair_maxcon[p] = 2;
        pm.pair_conadr[p] = 2 * p;
      }
      for (int trial = 0; trial < 3000; ++trial) {
        mj_resetData(m, d);
        double q[4];
        for (int body = 0; body < 2; ++body) {
          double* qp = d->qpos + 7 * body;
          qp[0] = rng.uniform(-0.15, 0.15);
          qp[1] = rng.uniform(-0.15, 0.15);
          qp[2] = rng.uniform(0.0, 0.35);
          if (body == 0 || !sc.parallel) {
            double n = 0;
            for (int k = 0; k < 4; ++k) {
              q[k] = rng.uniform(-1, 1);
              n += q[k] * q[k];
            }
            for (int k = 0; k < 4; ++k) q[k] /= std::sqrt(n);
          }
          for (int k = 0; k < 4; ++k) qp[3 + k] = q[k];
        }
        if (sc.parallel && trial % 2 == 0) {  // side by side: overlapping along the common axis
          double axis[3] = {d->qpos[0], d->qpos[1], d->qpos[2]};
          mjtNum mat[9];
          mju_quat2Mat(mat, q);
          const double s = rng.uniform(-0.3, 0.3), off = rng.uniform(0.08, 0.13);
          for (int k = 0; k < 3; ++k) d->qpos[7 + k] = axis[k] + s * mat[3 * k + 2] + off * mat[3 * k + 0];
        }
        mj_kinematics(m, d);
        mj_collision(m, d);
        physics::data<double, primitive_dims> o{};
        for (int g = 0; g < 3; ++g) {
          for (int k = 0; k < 3; ++k) o.geom_xpos[g][k] = d->geom_xpos[3 * g + k];
          for (int k = 0; k < 9; ++k) o.geom_xmat[g][k] = d->geom_xmat[9 * g + k];
        }
        physics::collide(pm, o);
        INFO(sc.ta << "-" << sc.tb << (sc.parallel ? " parallel" : "") << " priority " << prio << " trial " << trial);
        REQUIRE(o.warning == 0);
        REQUIRE(o.ncon == d->ncon);
        // MuJoCo orders contacts by its broad phase; ours by pair: match within (geom1, geom2) order
        int used[6] = {0, 0, 0, 0, 0, 0};
        for (int i = 0; i < d->ncon; ++i) {
          const mjContact& c = d->contact[i];
          int j = 0;
          while (j < o.ncon && (used[j] || o.con[j].geom1 != c.geom[0] || o.con[j].geom2 != c.geom[1])) ++j;
          REQUIRE(j < o.ncon);
          used[j] = 1;
          const auto& oc = o.con[j];
          err = std::max(err, contact_error(o, j, c));
          geom_geom += c.geom[0] != 0;
          excluded += oc.exclude;
        }
        int between = 0;
        for (int i = 0; i < d->ncon; ++i) between += d->contact[i].geom[0] == 1 && d->contact[i].geom[1] == 2;
        two_contacts += between == 2;  // only the parallel-capsule branch makes 2
        contacts += d->ncon;
        ++configurations;
      }
    }
  }
  std::printf("[constraint] primitives: %ld configurations, %ld contacts (%ld geom-geom, %ld in the gap, %ld parallel-capsule pairs with 2 contacts); "
              "max error %.3g\n",
              configurations, contacts, geom_geom, excluded, two_contacts, err);
  CHECK(geom_geom > 1000);
  CHECK(excluded > 50);
  CHECK(two_contacts > 100);
  CHECK(err <= 1e-12);
}

namespace {

/// A floor and two free bodies for the cylinder colliders: plane-cylinder (MuJoCo's primitive)
/// and capsule-cylinder, cylinder-cylinder (its GJK/EPA with multiCCD).
struct convex_dims {
  static constexpr bool efc_terms = true;
  static constexpr int nq = 14, nv = 12, nu = 0, nbody = 3, njnt = 2, ngeom = 3;
  static constexpr int npair = 3, ncon = 14, nefc = 60;
  static constexpr int ccd_iterations = 35;
};

std::string convex_xml(const char* type_a, const char* size_a, const char* size_b, bool margins) {
  std::ostringstream x;
  const char* m_floor = margins ? " margin='0.004' gap='0.002'" : "";
  const char* m_a = margins ? " margin='0.01' gap='0.005'" : "";
  const char* m_b = margins ? " margin='0.002'" : "";
  x << "<mujoco><worldbody>"
    << "<geom name='floor' type='plane' size='5 5 .1'" << m_floor << " condim='3' friction='0.8 0.01 0.001'/>"
    << "<body name='a' pos='0 0 0.2'><freejoint/><geom type='" << type_a << "' size='" << size_a << "'" << m_a
    << " condim='1' priority='1'/></body>"
    << "<body name='b' pos='0 0 0.4'><freejoint/><geom type='cylinder' size='" << size_b << "'" << m_b
    << " condim='3' solmix='2'/></body>"
    << "</worldbody></mujoco>";
  return x.str();
}

void random_quat(test_rng& rng, double* q) {
  double n = 0;
  for (int k = 0; k < 4; ++k) {
    q[k] = rng.uniform(-1, 1);
    n += q[k] * q[k];
  }
  for (int k = 0; k < 4; ++k) q[k] /= std::sqrt(n);
}

}  // namespace

TEST_CASE("cylinder contacts (plane-cylinder; capsule- and cylinder-cylinder by GJK/EPA + multiCCD) equal MuJoCo's",
          "[mujoco][constraint][convex]") {
  // Random poses of a capsule (or cylinder) and a cylinder near each other and the floor: any
  // orientation, or (one pose in four) upright or on its side so that discs lie flat and the
  // plane-cylinder collider's parallel branch runs; body b placed within reach of body a, so that
  // the pairs go from apart through shallow (GJK on the capsule's segment) to deep (GJK + EPA).
  struct convex_case {
    const char *ta, *sa, *sb;
  };
  const convex_case cases[] = {{"capsule", "0.06 0.2", "0.05 0.08"}, {"cylinder", "0.07 0.1", "0.05 0.08"},
                               {"capsule", "0.02 0.1", "0.05 0.05"}, {"sphere", "0.07", "0.05 0.08"}};
  double err = 0;
  long configurations = 0, plane_cyl = 0, convex = 0, sphere_cyl = 0, multi = 0, deep = 0, shallow = 0, excluded = 0;
  int max_per_pair = 0;
  test_rng rng(777);
  for (const auto& cc : cases) {
    for (int margins = 0; margins < 2; ++margins) {
      const std::string xml = convex_xml(cc.ta, cc.sa, cc.sb, margins == 1);
      char error[1024] = "";
      mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof error);
      INFO(error);
      REQUIRE(spec != nullptr);
      mjModel* raw = mj_compile(spec, nullptr);
      mj_deleteSpec(spec);
      REQUIRE(raw != nullptr);
      mj_model_ptr mm(raw);
      mjModel* m = mm.get();
      const auto dd = make_mj_data(m);
      mjData* d = dd.get();
      physics::model<double, convex_dims> pm{};
      pm.ccd_tolerance = m->opt.ccd_tolerance;
      REQUIRE(m->opt.ccd_iterations == convex_dims::ccd_iterations);
      for (int g = 0; g < 3; ++g) {
        pm.geom_type_[g] = static_cast<physics::geom_type>(m->geom_type[g]);
        pm.geom_bodyid[g] = m->geom_bodyid[g];
        pm.geom_condim[g] = m->geom_condim[g];
        pm.geom_priority[g] = m->geom_priority[g];
        pm.geom_solmix[g] = m->geom_solmix[g];
        pm.geom_margin[g] = m->geom_margin[g];
        pm.geom_gap[g] = m->geom_gap[g];
        for (int k = 0; k < 2; ++k) pm.geom_solref[g][k] = m->geom_solref[2 * g + k];
        for (int k = 0; k < 5; ++k) pm.geom_solimp[g][k] = m->geom_solimp[5 * g + k];
        for (int k = 0; k < 3; ++k) pm.geom_friction[g][k] = m->geom_friction[3 * g + k];
        for (int k = 0; k < 3; ++k) pm.geom_size[g][k] = m->geom_size[3 * g + k];
        if (g > 0) REQUIRE(physics::detail::bounding_radius(pm, g) == m->geom_rbound[g]);
      }
      const int pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
      const bool sphere = m->geom_type[1] == mjGEOM_SPHERE;  // sphere-cylinder: a primitive, 1 contact
      const int maxcon[3] = {sphere ? 1 : m->geom_type[1] == mjGEOM_CAPSULE ? 2 : 4, 4, sphere ? 1 : 5};
      for (int p = 0, adr = 0; p < 3; ++p) {
        pm.pair_geom1[p] = pairs[p][0];
        pm.pair_geom2[p] = pairs[p][1];
        pm.pair_maxcon[p] = maxcon[p];
        pm.pair_conadr[p] = adr;
        adr += maxcon[p];
      }
      for (int trial = 0; trial < 4000; ++trial) {
        mj_resetData(m, d);
        double q[4];
        for (int body = 0; body < 2; ++body) {
          double* qp = d->qpos + 7 * body;
          if (trial % 4 == 0) {  // upright or on its side (a quarter turn about x), turned about z
            const double h = std::sqrt(0.5), yaw = rng.uniform(-3.2, 3.2);
            const double side[4] = {h, h, 0, 0}, up[4] = {1, 0, 0, 0};
            const double z[4] = {std::cos(yaw / 2), 0, 0, std::sin(yaw / 2)};
            mju_mulQuat(q, z, rng.uniform(0, 1) < 0.5 ? up : side);
            if (rng.uniform(0, 1) < 0.3) q[0] = 1, q[1] = q[2] = q[3] = 0;  // exactly upright
          } else {
            random_quat(rng, q);
          }
          for (int k = 0; k < 4; ++k) qp[3 + k] = q[k];
          qp[0] = rng.uniform(-0.1, 0.1);
          qp[1] = rng.uniform(-0.1, 0.1);
          qp[2] = rng.uniform(0.0, 0.3);
        }
        if (trial % 2 == 1) {  // b close to a: shallow and deep geom-geom contacts
          const double r = rng.uniform(0.0, 0.25);
          double dir[3] = {rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)};
          const double n = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]) + 1e-12;
          for (int k = 0; k < 3; ++k) d->qpos[7 + k] = d->qpos[k] + r * dir[k] / n;
        }
        mj_kinematics(m, d);
        mj_collision(m, d);
        physics::data<double, convex_dims> o{};
        for (int g = 0; g < 3; ++g) {
          for (int k = 0; k < 3; ++k) o.geom_xpos[g][k] = d->geom_xpos[3 * g + k];
          for (int k = 0; k < 9; ++k) o.geom_xmat[g][k] = d->geom_xmat[9 * g + k];
        }
        physics::collide(pm, o);
        INFO(cc.ta << "-cylinder margins " << margins << " trial " << trial);
        REQUIRE(o.warning == 0);
        REQUIRE(o.ncon == d->ncon);
        int used[convex_dims::ncon] = {};
        int between = 0;
        for (int i = 0; i < d->ncon; ++i) {
          const mjContact& c = d->contact[i];
          int j = 0;
          while (j < o.ncon && (used[j] || o.con[j].geom1 != c.geom[0] || o.con[j].geom2 != c.geom[1])) ++j;
          REQUIRE(j < o.ncon);
          used[j] = 1;
          err = std::max(err, contact_error(o, j, c));
          excluded += o.con[j].exclude;
          const bool geom_geom = c.geom[0] != 0;
          const bool by_gjk = geom_geom && m->geom_type[c.geom[0]] != mjGEOM_SPHERE;
          between += geom_geom;
          convex += by_gjk;
          sphere_cyl += geom_geom && !by_gjk;
          plane_cyl += !geom_geom && m->geom_type[c.geom[1]] == mjGEOM_CYLINDER;
          deep += by_gjk && c.dist < -0.01;
          shallow += by_gjk && c.dist > -0.002;
        }
        multi += between > 1;
        max_per_pair = std::max(max_per_pair, between);
        ++configurations;
      }
    }
  }
  std::printf("[constraint] cylinders: %ld configurations, %ld plane-cylinder, %ld sphere-cylinder and %ld GJK/EPA "
              "contacts (%ld deeper than 1 cm, %ld within 2 mm; %ld pairs with 2+ from multiCCD, at most %d; %ld in the gap); max error %.3g\n",
              configurations, plane_cyl, sphere_cyl, convex, deep, shallow, multi, max_per_pair, excluded, err);
  CHECK(plane_cyl > 5000);
  CHECK(sphere_cyl > 1000);
  CHECK(convex > 5000);
  CHECK(deep > 1000);
  CHECK(shallow > 500);
  CHECK(multi > 500);
  CHECK(max_per_pair == 5);
  CHECK(err == 0);
}

TEST_CASE("plane-box contacts equal MuJoCo's from random poses", "[mujoco][constraint][box]") {
  // The box crawler (boxes and a capsule against a floor and a tilted ramp) in random poses: any
  // orientation, or (one pose in three) a multiple of 90 degrees about each axis, so that a face
  // lies flat and four or more corners tie; heights from deep in the floor to above the margins.
  using Dims = box_crawler_case::dims;
  const auto mj = load_mj_model(model_file(box_crawler_case::xml));
  mjModel* m = mj.get();
  const auto dd = make_mj_data(m);
  mjData* d = dd.get();
  const auto ours = box_crawler_case::model<double>();
  auto o_ptr = std::make_unique<physics::data<double, Dims>>();
  physics::data<double, Dims>& o = *o_ptr;
  test_rng rng(4242);
  double err = 0;
  long contacts = 0, box_contacts = 0, four = 0, excluded = 0, ramp = 0, flat = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    mj_resetData(m, d);
    d->qpos[0] = rng.uniform(-0.4, 1.0);
    d->qpos[1] = rng.uniform(-0.2, 0.2);
    double q[4];
    if (trial % 3 == 0) {  // axis-aligned: a product of quarter turns about x, y and z
      const double h = std::sqrt(0.5);
      double r[4] = {1, 0, 0, 0};
      for (int axis = 0; axis < 3; ++axis) {
        for (int turns = int(rng.uniform(0, 4)); turns > 0; --turns) {
          double t[4] = {h, 0, 0, 0};
          t[1 + axis] = h;
          double p[4];
          mju_mulQuat(p, r, t);
          for (int k = 0; k < 4; ++k) r[k] = p[k];
        }
      }
      for (int k = 0; k < 4; ++k) q[k] = r[k];
      ++flat;
    } else {
      double n = 0;
      for (int k = 0; k < 4; ++k) {
        q[k] = rng.uniform(-1, 1);
        n += q[k] * q[k];
      }
      for (int k = 0; k < 4; ++k) q[k] /= std::sqrt(n);
    }
    for (int k = 0; k < 4; ++k) d->qpos[3 + k] = q[k];
    // resting on the floor (the flat poses at exactly the half height of a box axis), or anywhere
    const double half[3] = {0.05, 0.1, 0.2};
    d->qpos[2] = trial % 3 == 0 && trial % 2 == 0 ? half[int(rng.uniform(0, 3))] + rng.uniform(-0.004, 0.004)
                                                  : rng.uniform(-0.1, 0.4);
    d->qpos[7] = rng.uniform(-1.5, 1.5);
    d->qpos[8] = rng.uniform(-1.5, 1.5);
    mj_kinematics(m, d);
    mj_collision(m, d);
    o.ncon = 0;
    for (int g = 0; g < m->ngeom; ++g) {
      for (int k = 0; k < 3; ++k) o.geom_xpos[g][k] = d->geom_xpos[3 * g + k];
      for (int k = 0; k < 9; ++k) o.geom_xmat[g][k] = d->geom_xmat[9 * g + k];
    }
    physics::collide(ours, o);
    INFO("trial " << trial);
    REQUIRE(o.warning == 0);
    REQUIRE(o.ncon == d->ncon);
    std::map<std::pair<int, int>, int> per_pair;
    for (int i = 0; i < d->ncon; ++i) {  // the same contacts in the same order
      const mjContact& c = d->contact[i];
      const auto& oc = o.con[i];
      REQUIRE(oc.geom1 == c.geom[0]);
      REQUIRE(oc.geom2 == c.geom[1]);
      err = std::max(err, contact_error(o, i, c));
      const bool is_box = m->geom_type[c.geom[1]] == mjGEOM_BOX;
      box_contacts += is_box;
      ramp += c.geom[0] == 1;
      excluded += oc.exclude;
      if (is_box) four += ++per_pair[{c.geom[0], c.geom[1]}] == 4;
    }
    contacts += d->ncon;
  }
  std::printf("[constraint] plane-box: 20000 poses (%ld axis-aligned), %ld contacts (%ld of boxes, %ld on the ramp, "
              "%ld in the gap), %ld box-plane pairs at the 4-contact cap; max error %.3g\n",
              flat, contacts, box_contacts, ramp, excluded, four, err);
  CHECK(box_contacts > 10000);
  CHECK(ramp > 1000);
  CHECK(excluded > 50);
  CHECK(four > 1000);
  CHECK(err == 0);
}

namespace {

/// Far from the trajectories: random joint angles, bodies driven deep into the floor, large
/// velocities. Double must still agree with MuJoCo; float must terminate and stay finite.
template <class Case>
void run_extreme(int states, double depth, double speed) {
  using Dims = typename Case::dims;
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  const auto d = make_mj_data(m);
  const auto ours = Case::template model<double>();
  const auto ours_f = Case::template model<float>();
  test_rng rng(2024);
  const int nv = m->nv;
  double err = 0;
  long nonfinite_f = 0, contacts = 0, rows = 0, mismatched = 0;
  int max_niter_f = 0, max_rows = 0;
  for (int s = 0; s < states; ++s) {
    mj_resetData(m, d.get());
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = m->qpos0[i] + rng.uniform(-1.5, 1.5);
    d->qpos[1] = m->qpos0[1] - rng.uniform(0.0, depth);  // rootz: into the floor
    for (int i = 0; i < nv; ++i) d->qvel[i] = rng.uniform(-speed, speed);
    for (int i = 0; i < nv; ++i) d->qacc_warmstart[i] = rng.uniform(-100, 100);
    for (int a = 0; a < m->nu; ++a) d->ctrl[a] = rng.uniform(-1, 1);
    mj_forward(m, d.get());
    INFO(Case::name << " state " << s);
    physics::data<double, Dims> o;
    fill_from_mujoco(m, d.get(), o);
    run_stages(ours, o);
    if (o.warning & physics::warning_efc_full) {
      // more rows than the model's slots: MuJoCo has no slots; ours must refuse cleanly
      ++mismatched;
      REQUIRE(o.nefc == 0);
    } else {
      REQUIRE(o.ncon == d->ncon);
      REQUIRE(o.nefc == d->nefc);
      err = std::max(err, max_scaled_error(o.qacc, d->qacc, nv));
    }
    contacts += d->ncon;
    rows += d->nefc;
    max_rows = std::max(max_rows, d->nefc);
    physics::data<float, Dims> of;
    fill_from_mujoco(m, d.get(), of);
    run_stages(ours_f, of);
    bool finite = true;
    for (int i = 0; i < nv; ++i) finite = finite && std::isfinite(of.qacc[i]) && std::isfinite(of.qfrc_constraint[i]);
    nonfinite_f += !finite;
    max_niter_f = std::max(max_niter_f, of.solver_niter);
  }
  std::printf("[constraint] %s extreme states (depth %.2g, speed %.3g): %d states, %ld contacts, %ld rows (max %d of %d "
              "slots; %ld over the slots); qacc vs MuJoCo %.3g; float: %ld non-finite, max niter %d\n",
              Case::name, depth, speed, states, contacts, rows, max_rows, Dims::nefc, mismatched, err, nonfinite_f,
              max_niter_f);
  CHECK(err <= 1e-9);
  CHECK(nonfinite_f == 0);
  CHECK(max_niter_f <= ours_f.iterations);
}

}  // namespace

TEST_CASE("extreme states: double agrees with MuJoCo, float terminates and stays finite", "[mujoco][constraint]") {
  SECTION("hopper") { run_extreme<hopper_case>(3000, 0.8, 50); }
  SECTION("walker2d") { run_extreme<walker2d_case>(3000, 0.8, 50); }
  SECTION("half_cheetah") { run_extreme<half_cheetah_case>(3000, 0.5, 50); }
}

#include <rlkernels/physics/forward.hpp>

namespace {

/// The whole pipeline with constraints (physics::forward and physics::step, smooth stages
/// included) from trajectory states: qacc against mj_forward, and one step against mj_step, with
/// MuJoCo's default settings and with tightly converged solves on both sides.
template <class Case>
/// `min_constrained`: the smallest fraction of the states that must have constraint rows.
void run_pipeline(int episodes, int steps_per_episode, int frame_skip, double noise, double min_constrained = 0.25) {
  using Dims = typename Case::dims;
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  const auto mj_tight = load_mj_model(model_file(Case::xml));
  mjModel* mt = mj_tight.get();
  mt->opt.tolerance = 1e-15;
  mt->opt.iterations = 1000;
  mt->opt.ls_iterations = 1000;
  const auto sim = make_mj_data(m);
  const auto ref = make_mj_data(m);
  const auto ours_default = Case::template model<double>();
  auto ours_tight = ours_default;
  ours_tight.tolerance = 1e-15;
  ours_tight.iterations = 1000;
  ours_tight.ls_iterations = 1000;
  test_rng rng(31337);
  const int nv = m->nv, nq = m->nq;
  double e_fwd[2] = {0, 0}, e_step[2] = {0, 0};
  long states = 0, constrained = 0;
  auto data_ptr = std::make_unique<physics::data<double, Dims>>();
  physics::data<double, Dims>& o = *data_ptr;
  // the env kernels' workspace, without the rows' stored terms (make_constraint computes aref at
  // once): must give the same bits as the workspace that keeps them
  using LeanDims = typename Case::lean_dims;
  static_assert(!physics::dims_efc_terms<LeanDims> && physics::dims_efc_terms<Dims>, "the two workspaces");
  const auto ours_lean = Case::template lean_model<double>();
  auto lean_ptr = std::make_unique<physics::data<double, LeanDims>>();
  physics::data<double, LeanDims>& ol = *lean_ptr;
  long lean_compared = 0;
  for (int ep = 0; ep < episodes; ++ep) {
    mj_resetData(m, sim.get());
    for (int i = 0; i < nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
    for (int i = 0; i < nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
    for (int t = 0; t < steps_per_episode; ++t) {
      for (int a = 0; a < m->nu; ++a) sim->ctrl[a] = rng.uniform(-1.0, 1.0);
      for (int f = 0; f < frame_skip; ++f) {
        INFO(Case::name << " episode " << ep << " step " << t << " frame " << f);
        for (int variant = 0; variant < 2; ++variant) {
          mjModel* mm = variant == 0 ? m : mt;
          const auto& om = variant == 0 ? ours_default : ours_tight;
          auto load = [&](mjData* dd) {
            mj_resetData(mm, dd);
            for (int i = 0; i < nq; ++i) dd->qpos[i] = sim->qpos[i];
            for (int i = 0; i < nv; ++i) dd->qvel[i] = sim->qvel[i];
            for (int i = 0; i < nv; ++i) dd->qacc_warmstart[i] = sim->qacc_warmstart[i];
            for (int i = 0; i < m->nu; ++i) dd->ctrl[i] = sim->ctrl[i];
            dd->time = sim->time;
          };
          load(ref.get());
          mj_forward(mm, ref.get());
          copy_state_from_mujoco(mm, ref.get(), o);
          physics::forward(om, o);
          REQUIRE(o.warning == 0);
          REQUIRE(o.ncon == ref->ncon);
          REQUIRE(o.nefc == ref->nefc);
          e_fwd[variant] = std::max(e_fwd[variant], max_scaled_error(o.qacc, ref->qacc, nv));
          if (variant == 0) constrained += ref->nefc > 0;
          load(ref.get());
          mj_step(mm, ref.get());
          copy_state_from_mujoco(mm, sim.get(), o);
          physics::step(om, o);
          REQUIRE(o.warning == 0);
          e_step[variant] = std::max(e_step[variant], max_scaled_error(o.qpos, ref->qpos, nq));
          e_step[variant] = std::max(e_step[variant], max_scaled_error(o.qvel, ref->qvel, nv));
          e_step[variant] = std::max(e_step[variant], max_scaled_error(o.qacc_warmstart, ref->qacc_warmstart, nv));
          if (variant == 0) {
            copy_state_from_mujoco(mm, sim.get(), ol);
            physics::step(ours_lean, ol);
            REQUIRE(ol.warning == 0);
            REQUIRE(std::memcmp(ol.qpos, o.qpos, sizeof o.qpos) == 0);
            REQUIRE(std::memcmp(ol.qvel, o.qvel, sizeof o.qvel) == 0);
            REQUIRE(std::memcmp(ol.qacc_warmstart, o.qacc_warmstart, sizeof o.qacc_warmstart) == 0);
            REQUIRE(std::memcmp(ol.efc_aref, o.efc_aref, sizeof(double) * o.nefc) == 0);
            ++lean_compared;
          }
        }
        ++states;
        mj_step(m, sim.get());
      }
    }
  }
  std::printf("[constraint] %s full pipeline: %ld states (%ld with rows); forward qacc vs MuJoCo %.3g (tight %.3g); one "
              "step qpos/qvel/warmstart %.3g (tight %.3g)\n",
              Case::name, states, constrained, e_fwd[0], e_fwd[1], e_step[0], e_step[1]);
  CHECK(double(constrained) > min_constrained * double(states));
  CHECK(lean_compared == states);
  CHECK(e_fwd[1] <= 1e-11);
  CHECK(e_step[1] <= 1e-12);
  CHECK(e_fwd[0] <= 1e-8);
  CHECK(e_step[0] <= 1e-7);
}

}  // namespace

TEST_CASE("forward and step with constraints equal MuJoCo's", "[mujoco][constraint][forward]") {
  SECTION("hopper") { run_pipeline<hopper_case>(4, 100, 4, 5e-3); }
  SECTION("walker2d") { run_pipeline<walker2d_case>(4, 100, 4, 5e-3); }
  SECTION("half_cheetah") { run_pipeline<half_cheetah_case>(4, 100, 5, 0.1); }
  SECTION("ant") { run_pipeline<ant_case>(4, 100, 5, 0.1); }
  SECTION("humanoid (PGS)") { run_pipeline<humanoid_case>(4, 60, 5, 0.01); }
  SECTION("box_crawler") { run_pipeline<box_crawler_case>(4, 100, 2, 0.1); }
  SECTION("friction_quad") { run_pipeline<friction_quad_case>(4, 100, 2, 0.1); }
  SECTION("inverted_pendulum (joint limits)") { run_pipeline<inverted_pendulum_case>(4, 100, 2, 0.01); }
  // (random controls drive the cart into its limit in about a tenth of the states)
  SECTION("inverted_double_pendulum (joint limit)") {
    run_pipeline<inverted_double_pendulum_case>(4, 100, 5, 0.1, 0.08);
  }
  SECTION("swimmer (fluid forces, joint limits)") { run_pipeline<swimmer_case>(4, 100, 4, 0.1, 0.05); }
  SECTION("my_robot (servos, floor contacts, limits)") { run_pipeline<my_robot_case>(4, 100, 4, 0.1); }
}

namespace {

/// cfrc_ext as Gymnasium reads it (mj_step, then mj_rnePostConstraint: from the last forward pass
/// of the step) against step() then rne_post_constraint(), along random trajectories.
template <class Case>
void run_cfrc_ext(int episodes, int steps_per_episode, int frame_skip, double noise, bool deliberate_bug = false) {
  using Dims = typename Case::dims;
  const auto mj = load_mj_model(model_file(Case::xml));
  mjModel* m = mj.get();
  const auto sim = make_mj_data(m);
  const auto ours = Case::template model<double>();
  test_rng rng(2718);
  auto data_ptr = std::make_unique<physics::data<double, Dims>>();
  physics::data<double, Dims>& o = *data_ptr;
  double err = 0, largest = 0;
  long steps = 0, with_force = 0;
  for (int ep = 0; ep < episodes; ++ep) {
    mj_resetData(m, sim.get());
    for (int i = 0; i < m->nq; ++i) sim->qpos[i] = m->qpos0[i] + rng.uniform(-noise, noise);
    for (int i = 0; i < m->nv; ++i) sim->qvel[i] = rng.uniform(-noise, noise);
    copy_state_from_mujoco(m, sim.get(), o);
    for (int t = 0; t < steps_per_episode; ++t) {
      for (int a = 0; a < m->nu; ++a) o.ctrl[a] = sim->ctrl[a] = rng.uniform(-1.0, 1.0);
      for (int f = 0; f < frame_skip; ++f) {
        mj_step(m, sim.get());
        physics::step(ours, o);
        REQUIRE(o.warning == 0);
      }
      mj_rnePostConstraint(m, sim.get());
      physics::rne_post_constraint(ours, o);
      if (deliberate_bug)  // the torque taken about the contact point instead of the subtree com
        for (int b = 0; b < Dims::nbody; ++b)
          if (o.cfrc_ext[b][5] != 0) o.cfrc_ext[b][0] = o.cfrc_ext[b][1] = o.cfrc_ext[b][2] = 0;
      err = std::max(err, max_scaled_error(&o.cfrc_ext[0][0], sim->cfrc_ext, 6 * Dims::nbody));
      err = std::max(err, max_scaled_error(o.qpos, sim->qpos, Dims::nq));
      double norm = 0;
      for (int k = 0; k < 6 * Dims::nbody; ++k) norm = std::max(norm, std::fabs(sim->cfrc_ext[k]));
      largest = std::max(largest, norm);
      with_force += norm > 0;
      ++steps;
    }
  }
  std::printf("[constraint] %s cfrc_ext after %ld env steps (%ld with contact forces, largest %.3g): max error %.3g%s\n",
              Case::name, steps, with_force, largest, err, deliberate_bug ? " (deliberate bug)" : "");
  if (deliberate_bug) {
    CHECK(err > 1e-3);
  } else {
    CHECK(with_force > steps / 4);
    CHECK(err <= 1e-12);
  }
}

}  // namespace

TEST_CASE("cfrc_ext after a step equals mj_rnePostConstraint's", "[mujoco][constraint][cfrc_ext]") {
  SECTION("ant") { run_cfrc_ext<ant_case>(4, 200, 5, 0.1); }
  SECTION("hopper") { run_cfrc_ext<hopper_case>(4, 200, 4, 5e-3); }
  SECTION("humanoid (PGS, condim-1 self-contacts)") { run_cfrc_ext<humanoid_case>(8, 40, 5, 0.01); }
  SECTION("friction_quad (condim 4 and 6: contact torques)") { run_cfrc_ext<friction_quad_case>(4, 150, 2, 0.1); }
  SECTION("deliberate bug") { run_cfrc_ext<ant_case>(1, 100, 5, 0.1, true); }
}

namespace {

/// Reacher's arm and target, from states that put each near its limits: 0, 1 or 2 constraint
/// islands. Our forward pass against mj_forward (qacc, forces, Newton steps and line-search
/// evaluations summed over the islands), with islands on (MuJoCo's default) and disabled.
void run_islands(int nstates) {
  using Dims = reacher_case::dims;
  const auto mj = load_mj_model(model_file(reacher_case::xml));
  mjModel* m = mj.get();
  REQUIRE(m->ntree == 2);
  const auto ref = make_mj_data(m);
  test_rng rng(4242);
  auto ours = reacher_case::model<double>();
  auto o_ptr = std::make_unique<physics::data<double, Dims>>();
  physics::data<double, Dims>& o = *o_ptr;
  const int nv = m->nv;
  long by_islands[3] = {0, 0, 0}, arm_only = 0, niter_diff = 0, neval_diff = 0, niter = 0;
  double err[3] = {0, 0, 0};
  // variants: islands on; islands disabled; islands on with a heavy target (1000 added to its
  // slides' inertia, dof_M0: they are simple dofs; set alike in both models), whose trace would
  // change the arm's tolerances if an island were scaled by the whole model's
  const double dof_M0[4] = {m->dof_M0[0], m->dof_M0[1], m->dof_M0[2], m->dof_M0[3]};
  for (int variant = 0; variant < 3; ++variant) {
    m->opt.disableflags = variant == 1 ? mjDSBL_ISLAND : 0;
    ours.disableflags = m->opt.disableflags;
    for (int i = 2; i < 4; ++i) m->dof_M0[i] = ours.dof_M0[i] = dof_M0[i] + (variant == 2 ? 1000.0 : 0.0);
    for (int s = 0; s < nstates; ++s) {
      mj_resetData(m, ref.get());
      const double side1 = rng.uniform(0, 1) < 0.5 ? -1 : 1;
      ref->qpos[0] = rng.uniform(-3.2, 3.2);
      ref->qpos[1] = rng.uniform(0, 1) < 0.6 ? side1 * rng.uniform(2.9, 3.15) : rng.uniform(-3, 3);
      for (int i = 2; i < 4; ++i)  // the target's slides are limited to +-0.27
        ref->qpos[i] = rng.uniform(0, 1) < 0.4 ? (rng.uniform(0, 1) < 0.5 ? -1 : 1) * rng.uniform(0.25, 0.3)
                                                : rng.uniform(-0.2, 0.2);
      for (int i = 0; i < nv; ++i) ref->qvel[i] = rng.uniform(-1, 1) * (i < 2 ? 8.0 : 0.5);
      for (int i = 0; i < nv; ++i) ref->qacc_warmstart[i] = rng.uniform(0, 1) < 0.3 ? 0.0 : rng.uniform(-300, 300);
      for (int a = 0; a < m->nu; ++a) ref->ctrl[a] = rng.uniform(-1, 1);
      // pass 0 from that warm start; pass 1 from MuJoCo's answer of pass 0 perturbed by 1e-12 to
      // 1e-4 (as a trajectory's warm start is: the tolerance and its scaling decide when to stop)
      double qpos[4], qvel[4], qacc0[4];
      for (int i = 0; i < 4; ++i) qpos[i] = ref->qpos[i], qvel[i] = ref->qvel[i];
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
          for (int i = 0; i < 4; ++i) ref->qpos[i] = qpos[i], ref->qvel[i] = qvel[i];
          for (int i = 0; i < nv; ++i)
            ref->qacc_warmstart[i] = qacc0[i] * (1 + rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-12, -4)));
        }
        copy_state_from_mujoco(m, ref.get(), o);
        mj_forward(m, ref.get());
        physics::forward(ours, o);
        for (int i = 0; i < nv; ++i) qacc0[i] = ref->qacc[i];
        INFO("variant " << variant << " state " << s << " pass " << pass);
        REQUIRE(o.warning == 0);
        REQUIRE(o.nefc == ref->nefc);
        if (variant == 0 && pass == 0) {
          const int ni = ref->nefc ? ref->nisland : 0;
          REQUIRE(ni <= 2);
          ++by_islands[ni];
          if (ni == 1 && ref->island_nv[0] == 2 && ref->dof_island[0] == 0) ++arm_only;
        }
        double e = max_scaled_error(o.qacc, ref->qacc, nv);
        for (int r = 0; r < o.nefc; ++r) e = std::max(e, scaled_error(o.efc_force[r], ref->efc_force[r]));
        for (int i = 0; i < nv; ++i) e = std::max(e, scaled_error(o.qfrc_constraint[i], ref->qfrc_constraint[i]));
        err[variant] = std::max(err[variant], e);
        niter += o.solver_niter;
        niter_diff += o.solver_niter != mj_solver_niter(ref.get());
        neval_diff += o.solver_neval != mj_solver_neval(ref.get());
      }
    }
  }
  std::printf("[constraint] reacher islands: %d states with 0 / 1 / 2 islands: %ld / %ld / %ld (%ld the arm's 2 of 4 dofs "
              "alone); qacc, efc_force, qfrc_constraint vs MuJoCo %.3g (islands disabled %.3g, heavy target %.3g); "
              "%ld Newton steps, solver_niter differs in %ld states, line-search evaluations in %ld\n",
              nstates, by_islands[0], by_islands[1], by_islands[2], arm_only, err[0], err[1], err[2], niter,
              niter_diff, neval_diff);
  CHECK(by_islands[1] > nstates / 10);
  CHECK(by_islands[2] > nstates / 10);
  CHECK(arm_only > nstates / 20);
  CHECK(err[0] == 0);
  CHECK(err[1] == 0);
  CHECK(err[2] == 0);
  CHECK(niter_diff == 0);
  CHECK(neval_diff == 0);
}

}  // namespace

namespace {

/// Pusher in random arm poses with the object placed under one of the wrist's three capsules (as
/// the task makes it), random velocities, warm starts and controls: forward (contacts, rows,
/// islands, qacc) and one step against MuJoCo's, from the capsule-cylinder contacts of GJK/EPA and
/// multiCCD through the islands they merge (the arm and the object in one).
void run_pusher_push(int nstates) {
  using Dims = pusher_case::dims;
  const auto mj = load_mj_model(model_file(pusher_case::xml));
  mjModel* m = mj.get();
  REQUIRE(m->ntree == 3);
  const auto ref = make_mj_data(m);
  const auto ours = pusher_case::model<double>();
  auto o_ptr = std::make_unique<physics::data<double, Dims>>();
  physics::data<double, Dims>& o = *o_ptr;
  test_rng rng(5150);
  const int nv = m->nv, nq = m->nq;
  double e_fwd = 0, e_step = 0;
  long touching = 0, merged = 0, convex_contacts = 0, multi = 0;
  for (int s = 0; s < nstates; ++s) {
    mj_resetData(m, ref.get());
    for (int j = 0; j < 7; ++j) {  // the arm within its ranges (a little past them: limit rows)
      const double lo = m->jnt_range[2 * j], hi = m->jnt_range[2 * j + 1];
      ref->qpos[j] = rng.uniform(lo - 0.05, hi + 0.05);
    }
    mj_kinematics(m, ref.get());
    const int g = 13 + int(rng.uniform(0, 3));  // a wrist capsule
    const double* p = ref->geom_xpos + 3 * g;
    // the object's slides (y, then x) put its centre near the capsule's, seen from above
    ref->qpos[7] = p[1] - m->body_pos[3 * 11 + 1] + rng.uniform(-0.06, 0.06);
    ref->qpos[8] = p[0] - m->body_pos[3 * 11 + 0] + rng.uniform(-0.06, 0.06);
    ref->qpos[9] = rng.uniform(-0.1, 0.1);
    ref->qpos[10] = rng.uniform(-0.1, 0.1);
    for (int i = 0; i < nv; ++i) ref->qvel[i] = rng.uniform(-1, 1);
    for (int i = 0; i < nv; ++i) ref->qacc_warmstart[i] = rng.uniform(0, 1) < 0.3 ? 0.0 : rng.uniform(-50, 50);
    for (int a = 0; a < m->nu; ++a) ref->ctrl[a] = rng.uniform(-2, 2);
    double qpos[11], qvel[11], warm[11];
    for (int i = 0; i < nq; ++i) qpos[i] = ref->qpos[i];
    for (int i = 0; i < nv; ++i) qvel[i] = ref->qvel[i], warm[i] = ref->qacc_warmstart[i];
    copy_state_from_mujoco(m, ref.get(), o);
    mj_forward(m, ref.get());
    physics::forward(ours, o);
    INFO("state " << s);
    REQUIRE(o.warning == 0);
    REQUIRE(o.ncon == ref->ncon);
    REQUIRE(o.nefc == ref->nefc);
    double e = max_scaled_error(o.qacc, ref->qacc, nv);
    for (int i = 0; i < ref->ncon; ++i) {
      REQUIRE(o.con[i].geom1 == ref->contact[i].geom[0]);
      REQUIRE(o.con[i].geom2 == ref->contact[i].geom[1]);
      e = std::max(e, scaled_error(o.con[i].dist, ref->contact[i].dist));
      for (int k = 0; k < 3; ++k) e = std::max(e, scaled_error(o.con[i].pos[k], ref->contact[i].pos[k]));
      for (int k = 0; k < 9; ++k) e = std::max(e, scaled_error(o.con[i].frame[k], ref->contact[i].frame[k]));
    }
    e_fwd = std::max(e_fwd, e);
    int between = 0;
    for (int i = 0; i < ref->ncon; ++i) between += ref->contact[i].geom[0] != 0;
    touching += between > 0;
    convex_contacts += between;
    multi += between > 1;
    for (int i = 0; i < (ref->nefc ? ref->nisland : 0); ++i) merged += ref->island_nv[i] > 7;
    // one step from the same state
    mj_resetData(m, ref.get());
    for (int i = 0; i < nq; ++i) ref->qpos[i] = qpos[i];
    for (int i = 0; i < nv; ++i) ref->qvel[i] = qvel[i], ref->qacc_warmstart[i] = warm[i];
    for (int a = 0; a < m->nu; ++a) ref->ctrl[a] = o.ctrl[a];
    copy_state_from_mujoco(m, ref.get(), o);
    mj_step(m, ref.get());
    physics::step(ours, o);
    REQUIRE(o.warning == 0);
    e_step = std::max(e_step, max_scaled_error(o.qpos, ref->qpos, nq));
    e_step = std::max(e_step, max_scaled_error(o.qvel, ref->qvel, nv));
    e_step = std::max(e_step, max_scaled_error(o.qacc_warmstart, ref->qacc_warmstart, nv));
  }
  std::printf("[constraint] pusher pushing: %d states, %ld with the wrist on the object (%ld capsule-cylinder contacts, "
              "%ld states with 2+), %ld islands over the arm and the object; forward (contacts, qacc) vs MuJoCo "
              "%.3g; one step %.3g\n",
              nstates, touching, convex_contacts, multi, merged, e_fwd, e_step);
  CHECK(touching > nstates / 10);
  CHECK(multi > nstates / 50);
  CHECK(merged > nstates / 10);
  CHECK(e_fwd == 0);
  CHECK(e_step == 0);
}

}  // namespace

TEST_CASE("constraint islands (several kinematic trees) solve as MuJoCo's", "[mujoco][constraint][island]") {
  SECTION("reacher") { run_islands(4000); }
  SECTION("reacher forward and step (limits, RK4)") { run_pipeline<reacher_case>(6, 100, 2, 3.0, 0.1); }
  SECTION("pusher forward and step (limits, the object on the table, Euler)") {
    run_pipeline<pusher_case>(4, 100, 5, 0.3, 0.9);
  }
  SECTION("pusher: the wrist pushing the object (capsule-cylinder contacts, merged islands)") { run_pusher_push(3000); }
  SECTION("friction_islands (friction-loss rows in 1-3 islands)") { run_case<friction_islands_case>(6, 100, 2, 0.1, true); }
  SECTION("friction_islands forward and step") { run_pipeline<friction_islands_case>(4, 100, 2, 0.1); }
}
