// The constraint stages (collide, make_constraint, reference_constraint, solve_constraint) on
// every backend, without MuJoCo: a ball on three slide joints over a plane (the kinematics are
// the identity, so the inputs are written directly), a batch of random states. Each env's solve
// must be optimal (the Newton gradient M qacc - qfrc_smooth - J' f vanishes, contact forces are
// non-negative), float must stay finite, OpenMP must equal serial bit for bit and CUDA agree with
// the host to rounding, and rows that do not fit the slots must raise warning_efc_full.
// (The comparison with MuJoCo itself is tests/physics/mujoco_constraint_test.cpp.)
#include <rlkernels/physics/collision.hpp>
#include <rlkernels/physics/constraint.hpp>
#include <rlkernels/physics/smooth.hpp>
#include <rlkernels/physics/solver.hpp>

#include "../test_backend.hpp"

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

namespace physics = rlkernels::physics;

namespace {

template <int Nefc>
struct ball_dims {
  static constexpr int nq = 3, nv = 3, nu = 0, nbody = 2, njnt = 3, ngeom = 2;
  static constexpr int npair = 1, ncon = 1, nefc = Nefc;  // 2 limit rows (x) + 4 pyramid rows
};

constexpr double ball_mass = 2.0, ball_radius = 0.1, gravity = 9.81;

template <class S, int Nefc>
physics::model<S, ball_dims<Nefc>> ball_model() {
  physics::model<S, ball_dims<Nefc>> m{};
  m.timestep = S(0.002);
  m.gravity[2] = S(-gravity);
  m.impratio = S(1);
  m.tolerance = S(1e-10);
  m.ls_tolerance = S(0.01);
  m.integrator = physics::integrator_kind::euler;
  m.solver = physics::solver_kind::newton;
  m.iterations = 100;
  m.ls_iterations = 50;
  m.meaninertia = S(ball_mass);
  m.body_parentid[1] = 0;
  m.body_rootid[1] = 1;
  m.body_weldid[1] = 1;
  m.body_jntnum[1] = 3;
  m.body_jntadr[0] = m.body_dofadr[0] = -1;
  m.body_dofnum[1] = 3;
  m.body_mass[1] = S(ball_mass);
  m.body_invweight0[1][0] = S(1 / ball_mass);
  m.body_invweight0[1][1] = S(1);
  for (int j = 0; j < 3; ++j) {
    m.jnt_type[j] = physics::joint_type::slide;
    m.jnt_qposadr[j] = m.jnt_dofadr[j] = j;
    m.jnt_bodyid[j] = 1;
    m.jnt_axis[j][j] = S(1);
    m.jnt_solref[j][0] = S(0.02);
    m.jnt_solref[j][1] = S(1);
    const S imp[5] = {S(0.9), S(0.95), S(0.001), S(0.5), S(2)};
    for (int k = 0; k < 5; ++k) m.jnt_solimp[j][k] = imp[k];
    m.dof_bodyid[j] = 1;
    m.dof_jntid[j] = j;
    m.dof_parentid[j] = j - 1;
    m.dof_invweight0[j] = S(1 / ball_mass);
  }
  m.jnt_limited[0] = 1;  // x in [-0.5, 0.5]
  m.jnt_range[0][0] = S(-0.5);
  m.jnt_range[0][1] = S(0.5);
  m.geom_type_[0] = physics::geom_type::plane;
  m.geom_type_[1] = physics::geom_type::sphere;
  m.geom_bodyid[1] = 1;
  for (int g = 0; g < 2; ++g) {
    m.geom_contype[g] = m.geom_conaffinity[g] = 1;
    m.geom_condim[g] = 3;
    m.geom_solmix[g] = S(1);
    m.geom_solref[g][0] = S(0.02);
    m.geom_solref[g][1] = S(1);
    const S imp[5] = {S(0.9), S(0.95), S(0.001), S(0.5), S(2)};
    for (int k = 0; k < 5; ++k) m.geom_solimp[g][k] = imp[k];
    m.geom_friction[g][0] = S(1);
    m.geom_friction[g][1] = S(0.005);
    m.geom_friction[g][2] = S(0.0001);
    m.geom_quat[g][0] = S(1);
  }
  m.geom_margin[1] = S(0.002);
  m.geom_size[0][0] = m.geom_size[0][1] = S(0);
  m.geom_size[0][2] = S(1);
  m.geom_size[1][0] = S(ball_radius);
  m.pair_geom1[0] = 0;
  m.pair_geom2[0] = 1;
  m.pair_maxcon[0] = 1;
  m.pair_conadr[0] = 0;
  return m;
}

/// Per env: 6 inputs (qpos, qvel), outputs below.
constexpr int n_in = 7, n_out = 10;

/// The position/velocity stage of the ball written directly, then the constraint stages; out:
/// ncon, nefc, warning, niter, optimality residual, min contact force, qacc[3], all finite (0/1).
template <class S, int Nefc>
struct ball_step {
  physics::model<S, ball_dims<Nefc>> m;
  rlkernels::view<const double> in;
  rlkernels::view<double> out;
  RLK_HOST_DEVICE void operator()(std::size_t e) const {
    using dims = ball_dims<Nefc>;
    physics::data<S, dims> d{};
    const double* x = in.data() + n_in * e;
    for (int i = 0; i < 3; ++i) {
      d.qpos[i] = S(x[i]);
      d.qvel[i] = S(x[3 + i]);
      d.qacc_warmstart[i] = S(0);
    }
    for (int k = 0; k < 3; ++k) {
      d.geom_xpos[1][k] = d.qpos[k];
      d.xpos[1][k] = d.qpos[k];
      d.subtree_com[1][k] = d.qpos[k];
    }
    for (int g = 0; g < 2; ++g) d.geom_xmat[g][0] = d.geom_xmat[g][4] = d.geom_xmat[g][8] = S(1);
    for (int i = 0; i < 3; ++i) {
      d.cdof[i][3 + i] = S(1);
      d.qM[i][i] = S(ball_mass);
      // gravity plus a random push
      d.qfrc_smooth[i] = (i == 2 ? S(-ball_mass * gravity) : S(0)) + S(x[6]) * S(i + 1);
      d.qacc_smooth[i] = d.qfrc_smooth[i] / S(ball_mass);
    }
    physics::factor_inertia(m, d);
    physics::collide(m, d);
    physics::make_constraint(m, d);
    physics::reference_constraint(m, d);
    physics::solve_constraint(m, d);
    double* o = out.data() + n_out * e;
    o[0] = d.ncon;
    o[1] = d.nefc;
    o[2] = d.warning;
    o[3] = d.solver_niter;
    double res = 0, fmin = 0;
    bool finite = true;
    for (int i = 0; i < 3; ++i) {
      const double g = double(d.qM[i][i]) * double(d.qacc[i]) - double(d.qfrc_smooth[i]) - double(d.qfrc_constraint[i]);
      res = res > std::fabs(g) ? res : std::fabs(g);
      finite = finite && std::isfinite(double(d.qacc[i]));
      o[6 + i] = double(d.qacc[i]);
    }
    for (int r = 0; r < d.nefc; ++r) fmin = fmin < double(d.efc_force[r]) ? fmin : double(d.efc_force[r]);
    o[4] = res;
    o[5] = fmin;
    o[9] = finite ? 1 : 0;
  }
};

std::vector<double> random_inputs(int n) {
  std::vector<double> v(std::size_t(n) * n_in);
  std::uint64_t s = 42;
  auto uniform = [&s](double lo, double hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * double(s >> 11) * 0x1.0p-53;
  };
  for (int e = 0; e < n; ++e) {
    double* x = v.data() + std::size_t(n_in) * e;
    x[0] = uniform(-0.6, 0.6);                           // beyond the x limits sometimes
    x[1] = uniform(-1, 1);
    x[2] = uniform(ball_radius - 0.01, ball_radius + 0.01);  // touching, penetrating or just above the floor
    for (int i = 3; i < 6; ++i) x[i] = uniform(-1, 1);
    x[6] = uniform(-30, 30);
  }
  return v;
}

template <class S, int Nefc>
std::vector<double> run_backend(const std::vector<double>& in_host) {
  const int n = int(in_host.size() / n_in);
  auto in = rlk_test::make(in_host);
  auto out = rlk_test::zeros<double>(std::size_t(n) * n_out);
  rlkernels::for_each_index(rlk_test::backend(), std::size_t(n), ball_step<S, Nefc>{ball_model<S, Nefc>(), in.cview(), out.view()});
  return out.to_host();
}

template <class S, int Nefc>
std::vector<double> run_host(const std::vector<double>& in_host) {
  const int n = int(in_host.size() / n_in);
  std::vector<double> out(std::size_t(n) * n_out);
  const ball_step<S, Nefc> f{ball_model<S, Nefc>(), rlkernels::make_view(in_host), rlkernels::make_view(out)};
  for (int e = 0; e < n; ++e) f(std::size_t(e));
  return out;
}

}  // namespace

TEST_CASE("constraint stages: optimal, finite and the same on every backend", "[physics][constraint]") {
  const int n = 4096;
  const auto in = random_inputs(n);
  const auto got = run_backend<double, 6>(in);
  const auto host = run_host<double, 6>(in);
  int with_contact = 0, with_limit = 0, active = 0;
  double max_res = 0, max_dev = 0;
  for (int e = 0; e < n; ++e) {
    const double* o = got.data() + std::size_t(n_out) * e;
    const double* h = host.data() + std::size_t(n_out) * e;
    INFO("env " << e);
    REQUIRE(o[2] == 0);   // no warning
    REQUIRE(o[9] == 1);   // finite
    REQUIRE(o[5] >= 0);   // contact and limit forces push, never pull
    REQUIRE(o[3] <= 100);
    with_contact += o[0] > 0;
    with_limit += (o[1] == 2 || o[1] == 6 || o[1] == 1);
    active += o[3] > 0;
    max_res = std::max(max_res, o[4]);
    for (int k = 0; k < n_out; ++k) {
      if (rlk_test::on_cuda) {
        max_dev = std::max(max_dev, std::fabs(o[k] - h[k]) / std::max(1.0, std::fabs(h[k])));
      } else {
        REQUIRE(o[k] == h[k]);  // serial and OpenMP: bit for bit
      }
    }
  }
  CHECK(with_contact > n / 4);
  CHECK(with_limit > n / 20);
  CHECK(active > n / 4);
  CHECK(max_res < 1e-8);   // the Newton gradient at the solution (forces ~ 20 N)
  CHECK(max_dev < 1e-12);  // CUDA against the host

  // float: the same problems; finite, and close to double
  const auto gotf = run_backend<float, 6>(in);
  double max_float = 0;
  for (int e = 0; e < n; ++e) {
    const double* o = gotf.data() + std::size_t(n_out) * e;
    const double* h = host.data() + std::size_t(n_out) * e;
    INFO("float env " << e);
    REQUIRE(o[9] == 1);
    REQUIRE(o[3] <= 100);
    if (o[1] == h[1])
      for (int k = 6; k < 9; ++k) max_float = std::max(max_float, std::fabs(o[k] - h[k]) / std::max(10.0, std::fabs(h[k])));
  }
  CHECK(max_float < 1e-2);
  std::printf("[physics][constraint] %s: %d envs, %d with a contact, %d with limit rows, %d solved by Newton; max gradient "
              "%.3g, CUDA vs host %.3g, float vs double %.3g\n",
              rlkernels::backend_name(rlk_test::backend()), n, with_contact, with_limit, active, max_res, max_dev, max_float);
}

TEST_CASE("constraint stages: rows beyond the slots raise warning_efc_full", "[physics][constraint]") {
  // slots for 3 rows: a contact (4 rows) does not fit
  const auto in = random_inputs(512);
  const auto got = run_backend<double, 3>(in);
  int full = 0;
  for (int e = 0; e < 512; ++e) {
    const double* o = got.data() + std::size_t(n_out) * e;
    INFO("env " << e);
    REQUIRE(o[9] == 1);
    if (int(o[2]) & physics::warning_efc_full) {
      ++full;
      REQUIRE(o[1] == 0);
      REQUIRE(o[3] == 0);  // no rows: qacc = qacc_smooth
    }
  }
  CHECK(full > 50);
}
