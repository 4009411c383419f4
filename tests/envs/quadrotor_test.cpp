// L2F-Crazyflie-v0 (rlkernels::quadrotor) against the `l2f` simulator: golden data recorded by
// tests/reference/l2f_record.sh from the published l2f 2.0.18 package (states, rewards,
// terminations and observations of 48 episodes of 128 steps in double, 16 in float, and 2000 of
// its initial states), then the ladder: the batch on every backend, float against double, huge
// and NaN actions, the episode-end contract and the registry.
#include <rlkernels/algorithms/policy_file.hpp>
#include <rlkernels/envs/param_fields.hpp>
#include <rlkernels/envs/quadrotor.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../reference_dir.hpp"
#include "../stats.hpp"
#include "../test_backend.hpp"
#include "golden_f64.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace rlkernels;

namespace {

using rlk_test::f64_table;

constexpr std::size_t kSteps = 128;  // steps per recorded episode

/// The 17 integrated numbers of a state: position, orientation, velocity, angular velocity, rpm.
template <class S>
void state_numbers(const typename quadrotor<S>::State& s, double* out) {
  for (int i = 0; i < 3; ++i) out[i] = double(s.position[i]);
  for (int i = 0; i < 4; ++i) out[3 + i] = double(s.orientation[i]);
  for (int i = 0; i < 3; ++i) out[7 + i] = double(s.linear_velocity[i]);
  for (int i = 0; i < 3; ++i) out[10 + i] = double(s.angular_velocity[i]);
  for (int i = 0; i < 4; ++i) out[13 + i] = double(s.rpm[i]);
}

/// The recorded initial state of episode e (l2f_initial.f64: episode, 17 numbers, 64 history values).
template <class S>
typename quadrotor<S>::State initial_state(const f64_table& initial, std::size_t e) {
  const double* r = initial.row(e) + 1;
  typename quadrotor<S>::State s{};
  for (int i = 0; i < 3; ++i) s.position[i] = S(r[i]);
  for (int i = 0; i < 4; ++i) s.orientation[i] = S(r[3 + i]);
  for (int i = 0; i < 3; ++i) s.linear_velocity[i] = S(r[7 + i]);
  for (int i = 0; i < 3; ++i) s.angular_velocity[i] = S(r[10 + i]);
  for (int i = 0; i < 4; ++i) s.rpm[i] = S(r[13 + i]);
  for (int j = 0; j < 16; ++j)
    for (int k = 0; k < 4; ++k) s.action_history[j][k] = S(r[17 + 4 * j + k]);
  s.history_step = 0;
  return s;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

/// A deterministic action in [-lo_hi, lo_hi] for env i, step t, rotor k.
double hash_action(std::uint64_t i, std::uint64_t t, int k, double range) {
  std::uint64_t x = (i * 0x9E3779B97F4A7C15ULL) ^ (t * 0xC2B2AE3D27D4EB4FULL) ^ (std::uint64_t(k) * 0x165667B19E3779F9ULL);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return range * (2.0 * double(x >> 11) * 0x1.0p-53 - 1.0);
}

}  // namespace

// ---- exactness against l2f ---------------------------------------------------------------------------

TEST_CASE("quadrotor<double> steps as l2f does, bit for bit: state, reward, termination, observation",
          "[quadrotor][reference]") {
  using Q = quadrotor<double>;
  const f64_table initial("l2f_initial.f64"), steps("l2f_steps.f64"), observations("l2f_observations.f64");
  REQUIRE(steps.cols == 25);
  REQUIRE(initial.cols == 82);
  const std::size_t episodes = initial.rows;
  REQUIRE(steps.rows == episodes * kSteps);
  const Q::Params params{};
  rng gen(0, 0);
  std::size_t numbers = 0, observed = 0, terminations = 0, clamped = 0;
  for (std::size_t e = 0; e < episodes; ++e) {
    Q::State s = initial_state<double>(initial, e);
    double obs[Q::observation_size];
    const bool with_obs = e * (kSteps + 1) < observations.rows;
    if (with_obs) {
      Q::observe(params, s, obs);
      for (int k = 0; k < Q::observation_size; ++k) REQUIRE(same_bits(obs[k], observations.row(e * (kSteps + 1))[k]));
    }
    for (std::size_t t = 0; t < kSteps; ++t) {
      const double* r = steps.row(e * kSteps + t);
      INFO("episode " << e << " step " << t);
      REQUIRE(r[0] == double(e));
      REQUIRE(r[1] == double(t));
      const double action[4] = {r[2], r[3], r[4], r[5]};
      clamped += std::abs(action[0]) > 1;
      const step_result<double> out = Q::step(params, s, action, gen);
      double mine[17];
      state_numbers<double>(s, mine);
      for (int i = 0; i < 17; ++i) {
        INFO("state number " << i << ": " << mine[i] << " vs l2f " << r[6 + i]);
        REQUIRE(same_bits(mine[i], r[6 + i]));
      }
      numbers += 17;
      REQUIRE(same_bits(out.reward, r[23]));
      REQUIRE(out.terminated == (r[24] != 0));
      terminations += out.terminated;
      if (with_obs) {
        Q::observe(params, s, obs);
        const double* ro = observations.row(e * (kSteps + 1) + 1 + t);
        for (int k = 0; k < Q::observation_size; ++k) {
          INFO("observation " << k);
          REQUIRE(same_bits(obs[k], ro[k]));
        }
        observed += Q::observation_size;
      }
    }
  }
  // The data covers what it should: 10^5 state numbers, terminating and non-terminating steps,
  // clamped actions and observations.
  CHECK(numbers >= 100000);
  CHECK(observed >= 40000);
  CHECK(terminations > 1000);
  CHECK(terminations < steps.rows);
  CHECK(clamped > 100);
}

TEST_CASE("quadrotor<float> steps as l2f's float build does, bit for bit", "[quadrotor][reference]") {
  using Q = quadrotor<float>;
  const f64_table initial("l2f_initial.f64"), steps("l2f_steps.f64"), steps_float("l2f_steps_float.f64");
  REQUIRE(steps_float.cols == 19);
  const std::size_t episodes = steps_float.rows / kSteps;
  REQUIRE(episodes >= 16);
  const Q::Params params{};
  rng gen(0, 0);
  std::size_t numbers = 0;
  for (std::size_t e = 0; e < episodes; ++e) {
    Q::State s = initial_state<float>(initial, e);
    for (std::size_t t = 0; t < kSteps; ++t) {
      INFO("episode " << e << " step " << t);
      const double* a = steps.row(e * kSteps + t) + 2;
      const float action[4] = {float(a[0]), float(a[1]), float(a[2]), float(a[3])};
      const step_result<float> out = Q::step(params, s, action, gen);
      const double* r = steps_float.row(e * kSteps + t);
      double mine[17];
      state_numbers<float>(s, mine);
      for (int i = 0; i < 17; ++i) {
        INFO("state number " << i << ": " << mine[i] << " vs l2f " << r[i]);
        REQUIRE(same_bits(mine[i], r[i]));
      }
      numbers += 17;
      REQUIRE(same_bits(double(out.reward), r[17]));
      REQUIRE(out.terminated == (r[18] != 0));
    }
  }
  CHECK(numbers >= 30000);
}

TEST_CASE("quadrotor resets draw from l2f's initial-state distribution", "[quadrotor][reference][statistics]") {
  using Q = quadrotor<double>;
  const f64_table ref("l2f_resets.f64");
  REQUIRE(ref.cols == 17);
  const Q::Params params{};
  constexpr std::size_t n = 20000;
  std::vector<std::vector<double>> ours(17), theirs(17);
  std::size_t guided = 0;
  for (std::size_t i = 0; i < n; ++i) {
    rng gen(12345, i);
    Q::State s;
    Q::reset(params, s, gen);
    double x[17];
    state_numbers<double>(s, x);
    for (int k = 0; k < 17; ++k) ours[std::size_t(k)].push_back(x[k]);
    const bool at_origin = s.position[0] == 0 && s.position[1] == 0 && s.position[2] == 0;
    guided += at_origin;
    // the action history holds the rotor speeds as actions, oldest slot first
    REQUIRE(s.history_step == 0);
    for (int j = 0; j < Q::history_length; ++j)
      for (int k = 0; k < 4; ++k) REQUIRE(s.action_history[j][k] == s.rpm[k] * 2 - 1);
    const double norm = std::sqrt(s.orientation[0] * s.orientation[0] + s.orientation[1] * s.orientation[1] +
                                  s.orientation[2] * s.orientation[2] + s.orientation[3] * s.orientation[3]);
    REQUIRE(std::abs(norm - 1) < 1e-14);
    for (int k = 0; k < 4; ++k) REQUIRE((s.rpm[k] >= 0 && s.rpm[k] <= 0.5));
  }
  for (std::size_t i = 0; i < ref.rows; ++i)
    for (int k = 0; k < 17; ++k) theirs[std::size_t(k)].push_back(ref.row(i)[k]);
  // guidance: 10 % start at the origin (binomial sd 0.2 % at n = 20000)
  CHECK(std::abs(double(guided) / n - 0.1) < 0.01);
  for (int k = 0; k < 17; ++k) {
    const rlk_test::two_sample_result ks = rlk_test::ks_two_sample(ours[std::size_t(k)], theirs[std::size_t(k)]);
    INFO("state number " << k << ": KS " << ks.statistic << ", p " << ks.p_value);
    CHECK(ks.p_value > 1e-3);
  }
  // A wrong distribution is caught: the angle drawn from U(0, pi/2) instead of U(0, 1) (w = cos(angle/2)).
  std::vector<double> wrong_w;
  for (std::size_t i = 0; i < n; ++i) {
    rng gen(777, i);
    wrong_w.push_back(gen.uniform<double>() < 0.1 ? 1.0 : std::cos(0.5 * gen.uniform<double>(0, 1.5707963267948966)));
  }
  CHECK(rlk_test::ks_two_sample(wrong_w, theirs[3]).p_value < 1e-6);
}

// ---- domain randomisation -------------------------------------------------------------------------------

namespace {

/// Every Randomization option on, with the defaults' ranges (those l2f_record.cpp's dr_factory sets).
template <class S>
typename quadrotor<S>::Params all_randomised() {
  typename quadrotor<S>::Params p{};
  auto& r = p.randomization;
  r.thrust_to_weight = r.mass = r.torque_to_inertia = r.mass_size_deviation = r.rotor_torque_constant =
      r.rotor_time_constant = r.disturbance_force = true;
  return p;
}

/// Params whose `dynamics` is the airframe `a` (as l2f stores a sampled one) with randomisation
/// off, except the disturbance force (which only the state can carry).
template <class S>
typename quadrotor<S>::Params as_dynamics(const typename quadrotor<S>::Params& nominal,
                                          const typename quadrotor<S>::Airframe& a) {
  typename quadrotor<S>::Params p = nominal;
  auto& d = p.dynamics;
  d.mass = a.mass;
  for (int r = 0; r < 4; ++r) {
    for (int k = 0; k < 3; ++k) d.rotor_thrust_coefficients[r][k] *= a.thrust_scale;
    for (int k = 0; k < 3; ++k) d.rotor_positions[r][k] *= a.arm_scale;
    d.rotor_torque_constants[r] = a.torque_constant;
    d.rotor_time_constants_rising[r] = a.time_constant_rising;
    d.rotor_time_constants_falling[r] = a.time_constant_falling;
  }
  for (int i = 0; i < 3; ++i) {
    d.J[i][i] /= a.inertia_scale;
    d.J_inv[i][i] *= a.inertia_scale;
  }
  p.termination.position = a.position_limit;
  p.randomization = {};
  p.randomization.disturbance_force = true;
  return p;
}

}  // namespace

TEST_CASE("quadrotor domain randomisation samples l2f's airframe distribution", "[quadrotor][reference][statistics]") {
  using Q = quadrotor<double>;
  const f64_table ref("l2f_dr_samples.f64");
  REQUIRE(ref.cols == 18);
  const Q::Params params = all_randomised<double>();
  const Q::Dynamics& d = params.dynamics;
  constexpr std::size_t n = 20000;
  // mass, c2, J diagonal, rotor 0 x and y, torque constant, rising, falling, force, position
  // threshold, init max_position (10 x the longest arm: half the threshold), position
  std::vector<std::vector<double>> ours(18), theirs(18);
  for (std::size_t i = 0; i < n; ++i) {
    rng gen(4242, i);
    Q::State s;
    Q::reset(params, s, gen);
    const Q::Airframe& a = s.airframe;
    const double x[18] = {a.mass, d.rotor_thrust_coefficients[0][2] * a.thrust_scale, d.J[0][0] / a.inertia_scale,
                          d.J[1][1] / a.inertia_scale, d.J[2][2] / a.inertia_scale, d.rotor_positions[0][0] * a.arm_scale,
                          d.rotor_positions[0][1] * a.arm_scale, a.torque_constant, a.time_constant_rising,
                          a.time_constant_falling, a.force[0], a.force[1], a.force[2], a.position_limit,
                          a.position_limit / 2, s.position[0], s.position[1], s.position[2]};
    for (int k = 0; k < 18; ++k) ours[std::size_t(k)].push_back(x[k]);
    REQUIRE((a.mass >= 0.02 && a.mass <= 5));
    REQUIRE((a.time_constant_rising >= 0.05 && a.time_constant_rising <= 0.09));
    for (int k = 0; k < 3; ++k) REQUIRE(std::abs(s.position[k]) <= a.position_limit / 2);
  }
  for (std::size_t i = 0; i < ref.rows; ++i)
    for (int k = 0; k < 18; ++k) theirs[std::size_t(k)].push_back(ref.row(i)[k]);
  for (int k = 0; k < 18; ++k) {
    const rlk_test::two_sample_result ks = rlk_test::ks_two_sample(ours[std::size_t(k)], theirs[std::size_t(k)]);
    INFO("quantity " << k << ": KS " << ks.statistic << ", p " << ks.p_value);
    CHECK(ks.p_value > 1e-3);
  }
  // A wrong distribution is caught: the mass uniform in kg instead of uniform in size.
  std::vector<double> wrong_mass;
  for (std::size_t i = 0; i < n; ++i) wrong_mass.push_back(rng(99, i).uniform<double>(0.02, 5.0));
  CHECK(rlk_test::ks_two_sample(wrong_mass, theirs[0]).p_value < 1e-6);
}

TEST_CASE("quadrotor<double> with l2f's randomised airframes steps as l2f does, bit for bit", "[quadrotor][reference]") {
  using Q = quadrotor<double>;
  const f64_table episodes("l2f_dr_episodes.f64"), steps("l2f_dr_steps.f64");
  REQUIRE(episodes.cols == 1 + 47 + 17 + 64);
  REQUIRE(steps.cols == 25);
  const std::size_t n = episodes.rows, t_max = steps.rows / n;
  REQUIRE(steps.rows == n * t_max);
  rng gen(0, 0);
  std::size_t numbers = 0, terminations = 0;
  for (std::size_t e = 0; e < n; ++e) {
    const double* r = episodes.row(e) + 1;
    // l2f's sampled airframe as Params::dynamics; the disturbance force through the state
    Q::Params p{};
    p.dynamics.mass = r[0];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) p.dynamics.rotor_thrust_coefficients[k][j] = r[1 + 3 * k + j];
    for (int k = 0; k < 4; ++k) p.dynamics.rotor_torque_constants[k] = r[13 + k];
    for (int k = 0; k < 4; ++k) p.dynamics.rotor_time_constants_rising[k] = r[17 + k];
    for (int k = 0; k < 4; ++k) p.dynamics.rotor_time_constants_falling[k] = r[21 + k];
    for (int i = 0; i < 3; ++i) p.dynamics.J[i][i] = r[25 + i];
    for (int i = 0; i < 3; ++i) p.dynamics.J_inv[i][i] = r[28 + i];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) p.dynamics.rotor_positions[k][j] = r[31 + 3 * k + j];
    p.termination.position = r[46];
    p.randomization.disturbance_force = true;
    Q::State s{};
    for (int i = 0; i < 3; ++i) s.airframe.force[i] = r[43 + i];
    const double* x = r + 47;
    for (int i = 0; i < 3; ++i) s.position[i] = x[i];
    for (int i = 0; i < 4; ++i) s.orientation[i] = x[3 + i];
    for (int i = 0; i < 3; ++i) s.linear_velocity[i] = x[7 + i];
    for (int i = 0; i < 3; ++i) s.angular_velocity[i] = x[10 + i];
    for (int i = 0; i < 4; ++i) s.rpm[i] = x[13 + i];
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 4; ++k) s.action_history[j][k] = x[17 + 4 * j + k];
    s.history_step = 0;
    REQUIRE(s.airframe.force[0] != 0);
    for (std::size_t t = 0; t < t_max; ++t) {
      const double* row = steps.row(e * t_max + t);
      INFO("episode " << e << " step " << t);
      REQUIRE(row[0] == double(e));
      const double action[4] = {row[2], row[3], row[4], row[5]};
      const step_result<double> out = Q::step(p, s, action, gen);
      double mine[17];
      state_numbers<double>(s, mine);
      for (int i = 0; i < 17; ++i) {
        INFO("state number " << i << ": " << mine[i] << " vs l2f " << row[6 + i]);
        REQUIRE(same_bits(mine[i], row[6 + i]));
      }
      numbers += 17;
      REQUIRE(same_bits(out.reward, row[23]));
      REQUIRE(out.terminated == (row[24] != 0));
      terminations += out.terminated;
    }
  }
  CHECK(numbers >= 20000);
  CHECK(terminations > 100);
  CHECK(terminations < steps.rows);
}

TEMPLATE_TEST_CASE("quadrotor: a randomised episode steps as the sampled airframe written into Params does",
                   "[quadrotor]", float, double) {
  // The airframe's scale factors are applied where l2f stores the scaled values, so a state that
  // carries them steps bit for bit as Params::dynamics holding the scaled airframe (which the
  // golden test above checks against l2f).
  using Q = quadrotor<TestType>;
  const typename Q::Params params = all_randomised<TestType>();
  std::size_t numbers = 0;
  for (std::uint64_t e = 0; e < 64; ++e) {
    rng gen(7, e);
    typename Q::State s;
    Q::reset(params, s, gen);
    const typename Q::Params written = as_dynamics<TestType>(params, s.airframe);
    typename Q::State w = s;
    for (std::uint64_t t = 0; t < 60; ++t) {
      TestType action[4];
      for (int k = 0; k < 4; ++k) action[k] = TestType(hash_action(e, t, k, 1.2));
      const step_result<TestType> a = Q::step(params, s, action, gen);
      const step_result<TestType> b = Q::step(written, w, action, gen);
      double x[17], y[17];
      state_numbers<TestType>(s, x);
      state_numbers<TestType>(w, y);
      for (int i = 0; i < 17; ++i) REQUIRE(same_bits(x[i], y[i]));
      REQUIRE(same_bits(double(a.reward), double(b.reward)));
      REQUIRE(a.terminated == b.terminated);
      numbers += 17;
    }
  }
  CHECK(numbers == 64 * 60 * 17);
}

TEST_CASE("quadrotor randomisation: options off draw nothing; an option changes only its quantities", "[quadrotor]") {
  using Q = quadrotor<double>;
  const Q::Params nominal{};
  Q::Params only_motors{};
  only_motors.randomization.rotor_time_constant = true;
  for (std::uint64_t i = 0; i < 200; ++i) {
    rng g1(3, i), g2(3, i);
    Q::State a, b;
    Q::reset(nominal, a, g1);
    Q::reset(only_motors, b, g2);
    // nominal airframe without randomisation
    REQUIRE(a.airframe.mass == nominal.dynamics.mass);
    REQUIRE(a.airframe.thrust_scale == 1);
    REQUIRE(a.airframe.position_limit == nominal.termination.position);
    REQUIRE(a.airframe.force[2] == 0);
    // the motors' time constants are drawn (two draws first), everything else nominal
    REQUIRE((b.airframe.time_constant_rising >= 0.05 && b.airframe.time_constant_rising < 0.09));
    REQUIRE((b.airframe.time_constant_falling >= 0.07 && b.airframe.time_constant_falling < 0.3));
    REQUIRE(b.airframe.mass == nominal.dynamics.mass);
    REQUIRE(b.airframe.inertia_scale == 1);
    REQUIRE(b.airframe.position_limit == nominal.termination.position);
  }
}

TEST_CASE("vec_env<quadrotor> rejects invalid randomisation ranges, naming the option", "[quadrotor][vec_env]") {
  using Q = quadrotor<float>;
  auto rejects = [](Q::Params p, const std::string& what) {
    try {
      vec_env<Q, serial_backend> env(serial, 4, 1, p);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  Q::Params p{};
  p.randomization.thrust_to_weight = true;
  p.randomization.thrust_to_weight_min = 1.2f;  // l2f requires at least 1.5
  rejects(p, "thrust_to_weight");
  p = {};
  p.randomization.mass = true;
  p.randomization.mass_min = 2;
  p.randomization.mass_max = 1;
  rejects(p, "mass");
  p = {};
  p.randomization.rotor_time_constant = true;
  p.randomization.rotor_time_constant_falling_max = std::numeric_limits<float>::quiet_NaN();
  rejects(p, "rotor_time_constant_falling");
  p = {};
  p.randomization.disturbance_force = true;
  p.randomization.disturbance_force_max = 0;
  rejects(p, "disturbance_force_max");
  p = {};
  p.randomization.mass_min = -1;  // off: its range is not checked
  vec_env<Q, serial_backend> ok(serial, 4, 1, p);
  CHECK(ok.num_envs() == 4);
}

TEMPLATE_TEST_CASE("vec_env<quadrotor> with every randomisation option equals the serial batch", "[quadrotor][vec_env]",
                   float, double) {
  using Env = quadrotor<TestType>;
  constexpr std::size_t n = 97;
  const typename Env::Params p = all_randomised<TestType>();
  vec_env<Env, rlk_test::backend_t> env(rlk_test::backend(), n, 11, p);
  vec_env<Env, serial_backend> ref(serial, n, 11, p);
  buffer<TestType, rlk_test::backend_t> actions(rlk_test::backend(), n * 4);
  buffer<TestType, serial_backend> ref_actions(serial, n * 4);
  std::vector<TestType> a(n * 4);
  std::size_t ends = 0;
  double worst = 0;
  for (std::uint64_t t = 0; t < 300; ++t) {
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < 4; ++k) a[i * 4 + k] = TestType(hash_action(i, t, k, 1.0));
    actions.assign(a);
    ref_actions.assign(a);
    env.step(actions.cview());
    ref.step(ref_actions.cview());
    const std::vector<TestType> rew = env.rewards().to_host(), ref_rew = ref.rewards().to_host();
    if (!rlk_test::on_cuda) {
      INFO("step " << t);
      REQUIRE(env.observations().to_host() == ref.observations().to_host());
      REQUIRE(rew == ref_rew);
      REQUIRE(env.terminated().to_host() == ref.terminated().to_host());
    } else {
      // CUDA's cbrt, log, sin and cos (the reset's draws) may differ from glibc's in the last bit
      for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(rew[i]) - double(ref_rew[i])));
    }
    for (auto x : ref.terminated().to_host()) ends += x != 0;
  }
  CHECK(ends > n);
  if (rlk_test::on_cuda) WARN("CUDA against serial with randomisation: largest reward difference " << worst);
}

// ---- the batch on the backend -------------------------------------------------------------------------

TEMPLATE_TEST_CASE("vec_env<quadrotor> on the test backend equals the serial batch", "[quadrotor][vec_env]", float,
                   double) {
  using Env = quadrotor<TestType>;
  constexpr std::size_t n = 257;
  constexpr int steps = 700;  // past the 500-step time limit: truncations and auto-resets
  vec_env<Env, rlk_test::backend_t> env(rlk_test::backend(), n, 2026);
  vec_env<Env, serial_backend> ref(serial, n, 2026);
  REQUIRE(env.observations().to_host() == ref.observations().to_host());
  buffer<TestType, rlk_test::backend_t> actions(rlk_test::backend(), n * 4);
  buffer<TestType, serial_backend> ref_actions(serial, n * 4);
  std::vector<TestType> a(n * 4);
  const TestType hover_rpm = Env::hover_rpm(typename Env::Params{});
  const TestType hover = 2 * hover_rpm - 1;
  // every third env starts level at the hover speed (it flies its whole episode on the hover action)
  std::vector<typename Env::State> start = env.states().to_host();
  for (std::size_t i = 0; i < n; i += 3) {
    typename Env::State& s = start[i];
    s = typename Env::State{};
    s.orientation[0] = 1;
    for (int k = 0; k < 4; ++k) s.rpm[k] = hover_rpm;
  }
  env.set_states(start);
  ref.set_states(start);
  std::size_t terminated = 0, truncated = 0, mismatched_flags = 0;
  double worst = 0;
  for (int t = 0; t < steps; ++t) {
    // the hover action, or near it with noise (those crash)
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < 4; ++k) a[i * 4 + k] = hover + TestType(i % 3 == 0 ? 0.0 : hash_action(i, std::uint64_t(t), k, 0.6));
    actions.assign(a);
    ref_actions.assign(a);
    env.step(actions.cview());
    ref.step(ref_actions.cview());
    const std::vector<TestType> obs = env.observations().to_host(), ref_obs = ref.observations().to_host();
    const std::vector<TestType> rew = env.rewards().to_host(), ref_rew = ref.rewards().to_host();
    const auto term = env.terminated().to_host(), ref_term = ref.terminated().to_host();
    const auto trunc = env.truncated().to_host(), ref_trunc = ref.truncated().to_host();
    if (!rlk_test::on_cuda) {
      INFO("step " << t);
      REQUIRE(obs == ref_obs);
      REQUIRE(rew == ref_rew);
      REQUIRE(term == ref_term);
      REQUIRE(trunc == ref_trunc);
    } else {
      // CUDA's sin, cos and acos (reset and reward) may differ from glibc's in the last bit;
      // trajectories then drift apart slowly and a flag may flip at a threshold
      for (std::size_t i = 0; i < rew.size(); ++i) worst = std::max(worst, std::abs(double(rew[i]) - double(ref_rew[i])));
      for (std::size_t i = 0; i < n; ++i) mismatched_flags += term[i] != ref_term[i];
    }
    for (std::size_t i = 0; i < n; ++i) {
      terminated += ref_term[i] != 0;
      truncated += ref_trunc[i] != 0;
    }
  }
  CHECK(terminated > n);
  CHECK(truncated >= n / 3);
  if (rlk_test::on_cuda) {
    CHECK(mismatched_flags <= n * steps / 100);
    WARN("CUDA against serial: largest reward difference " << worst << ", " << mismatched_flags << " flags differ");
  }
}

// ---- float against double -------------------------------------------------------------------------------

TEST_CASE("quadrotor<float> follows quadrotor<double> from the same states", "[quadrotor]") {
  const f64_table initial("l2f_initial.f64"), steps("l2f_steps.f64");
  double worst = 0, worst_reward = 0;
  rng gen(0, 0);
  for (std::size_t e = 0; e < initial.rows; ++e) {
    quadrotor<double>::State sd = initial_state<double>(initial, e);
    quadrotor<float>::State sf = initial_state<float>(initial, e);
    // start from the same (float) numbers
    double x[17];
    state_numbers<float>(sf, x);
    for (int i = 0; i < 3; ++i) sd.position[i] = x[i];
    for (int i = 0; i < 4; ++i) sd.orientation[i] = x[3 + i];
    for (int i = 0; i < 3; ++i) sd.linear_velocity[i] = x[7 + i];
    for (int i = 0; i < 3; ++i) sd.angular_velocity[i] = x[10 + i];
    for (int i = 0; i < 4; ++i) sd.rpm[i] = x[13 + i];
    for (std::size_t t = 0; t < 20; ++t) {
      const double* a = steps.row(e * kSteps + t) + 2;
      const float af[4] = {float(a[0]), float(a[1]), float(a[2]), float(a[3])};
      const double ad[4] = {af[0], af[1], af[2], af[3]};
      const step_result<double> rd = quadrotor<double>::step({}, sd, ad, gen);
      const step_result<float> rf = quadrotor<float>::step({}, sf, af, gen);
      double yd[17], yf[17];
      state_numbers<double>(sd, yd);
      state_numbers<float>(sf, yf);
      for (int i = 0; i < 17; ++i) worst = std::max(worst, std::abs(yd[i] - yf[i]) / std::max(1.0, std::abs(yd[i])));
      worst_reward = std::max(worst_reward, std::abs(rd.reward - double(rf.reward)) / std::max(1.0, std::abs(rd.reward)));
    }
  }
  INFO("largest relative state difference " << worst << ", reward " << worst_reward);
  // float rounding grows through 20 steps of a fast-spinning body (measured 9.8e-6 and 2.6e-5)
  CHECK(worst < 1e-4);
  CHECK(worst_reward < 1e-4);
  CHECK(worst > 0);  // the two really computed in different precisions
}

// ---- bad actions -------------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("quadrotor: huge actions are clamped; the state, reward and observation stay finite",
                   "[quadrotor][fuzz]", float, double) {
  using Q = quadrotor<TestType>;
  const typename Q::Params params{};
  const TestType big = TestType(1e30);
  const TestType values[] = {big, -big, TestType(1e5), TestType(-1e5), TestType(1), TestType(-1), TestType(0)};
  std::size_t steps = 0;
  for (std::uint64_t i = 0; i < 64; ++i) {
    rng gen(99, i);
    typename Q::State s;
    Q::reset(params, s, gen);
    for (std::uint64_t t = 0; t < 600; ++t) {
      TestType a[4];
      for (int k = 0; k < 4; ++k) a[k] = values[std::uint64_t(hash_action(i, t, k, 3.5) + 3.5) % 7];
      const step_result<TestType> r = Q::step(params, s, a, gen);
      ++steps;
      TestType obs[Q::observation_size];
      Q::observe(params, s, obs);
      INFO("env " << i << " step " << t);
      REQUIRE(std::isfinite(r.reward));
      REQUIRE(r.reward <= params.reward.constant);
      for (int k = 0; k < Q::observation_size; ++k) REQUIRE(std::isfinite(obs[k]));
      for (int k = 0; k < 4; ++k) REQUIRE((s.rpm[k] >= 0 && s.rpm[k] <= 1));
      // the history keeps the raw action, as l2f's does
      REQUIRE(obs[18] == a[0]);
      // past termination the body keeps flying (l2f does not stop it); the clamp keeps it finite
    }
  }
  CHECK(steps == 64 * 600);
}

TEST_CASE("vec_env<quadrotor> rejects NaN actions and changes nothing", "[quadrotor][vec_env]") {
  using venv = vec_env<quadrotor<float>, rlk_test::backend_t>;
  venv env(rlk_test::backend(), 8, 3);
  const std::vector<float> before = env.observations().to_host();
  std::vector<float> a(8 * 4, 0.5f);
  a[6 * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
  buffer<float, rlk_test::backend_t> actions(rlk_test::backend(), a);
  try {
    env.step(actions.cview());
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 6);
  }
  CHECK(env.observations().to_host() == before);
  CHECK(env.episode_lengths().get(0) == 0);
}

// ---- the episode-end contract ------------------------------------------------------------------------------

TEST_CASE("quadrotor episodes: hovering is truncated at 500 steps, crashing and leaving the box terminate",
          "[quadrotor][vec_env]") {
  using Q = quadrotor<double>;
  using venv = vec_env<Q, rlk_test::backend_t>;
  const Q::Params params{};
  const double hover_rpm = Q::hover_rpm(params);
  CHECK(hover_rpm == Approx(0.806).margin(0.001));
  Q::State level{};
  level.orientation[0] = 1;
  for (int k = 0; k < 4; ++k) level.rpm[k] = hover_rpm;
  for (int j = 0; j < Q::history_length; ++j)
    for (int k = 0; k < 4; ++k) level.action_history[j][k] = 2 * hover_rpm - 1;

  // env 0 hovers; env 1 cuts its motors (falls); env 2 starts near the wall moving out of the box
  Q::State wall = level;
  wall.position[0] = 0.99;
  wall.linear_velocity[0] = 1.5;
  venv env(rlk_test::backend(), 3, 1);
  env.set_states({level, level, wall});
  const std::vector<double> a = {2 * hover_rpm - 1, 2 * hover_rpm - 1, 2 * hover_rpm - 1, 2 * hover_rpm - 1,
                                 -1, -1, -1, -1,
                                 2 * hover_rpm - 1, 2 * hover_rpm - 1, 2 * hover_rpm - 1, 2 * hover_rpm - 1};
  buffer<double, rlk_test::backend_t> actions(rlk_test::backend(), a);
  int end[3] = {-1, -1, -1};
  bool end_terminated[3] = {false, false, false};
  double end_reward[3] = {0, 0, 0};
  double hover_return = 0;
  for (int t = 1; t <= 500; ++t) {
    env.step(actions.cview());
    const auto term = env.terminated().to_host(), trunc = env.truncated().to_host();
    const auto rew = env.rewards().to_host();
    if (end[0] < 0) hover_return += rew[0];
    for (int i = 0; i < 3; ++i) {
      if (end[i] < 0 && (term[std::size_t(i)] || trunc[std::size_t(i)])) {
        end[i] = t;
        end_terminated[i] = term[std::size_t(i)] != 0;
        end_reward[i] = rew[std::size_t(i)];
        REQUIRE_FALSE((term[std::size_t(i)] && trunc[std::size_t(i)]));
      }
    }
  }
  // hovering: truncated at the time limit, never terminated, near the best reward every step
  CHECK(end[0] == 500);
  CHECK_FALSE(end_terminated[0]);
  CHECK(hover_return > 500 * 1.09);
  // motors off: falls and terminates within a second (|v_z| > 2 m/s after about 0.2 s of free fall
  // once the rotors have spun down); a terminating step's reward is l2f's termination penalty, 0
  CHECK(end_terminated[1]);
  CHECK(end[1] > 10);
  CHECK(end[1] < 100);
  CHECK(end_reward[1] == 0);
  // leaving the 1 m box: terminated on the first step
  CHECK(end[2] == 1);
  CHECK(end_terminated[2]);
}

TEST_CASE("registry: L2F-Crazyflie-v0 is the quadrotor with l2f's time limit", "[quadrotor][registry]") {
  bool found = false;
  visit_env("L2F-Crazyflie-v0", [&](auto entry) {
    using Env = typename decltype(entry)::env_type;
    found = std::is_same_v<Env, quadrotor<float>>;
    CHECK(entry.info.max_episode_steps == 500);
    CHECK(entry.info.observation_size == 82);
    CHECK(entry.info.action_size == 4);
    CHECK(entry.info.type_name == "quadrotor");
  });
  CHECK(found);
}

TEST_CASE("set_param: Params fields by name, as --env-param and make_vec's keywords set them", "[quadrotor][registry]") {
  using Q = rlkernels::quadrotor<float>;
  Q::Params p{};
  rlkernels::set_param<Q>(p, "reward_angular_acceleration", "0");
  CHECK(p.reward.angular_acceleration == 0.0f);
  rlkernels::set_param<Q>(p, "reward_termination_penalty", "-1.5e1");
  CHECK(p.reward.termination_penalty == -15.0f);
  rlkernels::set_param<Q>(p, "termination_enabled", "false");
  CHECK_FALSE(p.termination.enabled);
  rlkernels::set_param<Q>(p, "max_episode_steps", "250");
  CHECK(p.max_episode_steps == 250);
  rlkernels::set_param<Q>(p, "randomize_mass", "true");
  rlkernels::set_param<Q>(p, "randomize_mass_max", "0.05");
  CHECK(p.randomization.mass);
  CHECK(p.randomization.mass_max == 0.05f);
  const std::vector<std::string> names = rlkernels::param_names<Q>();
  CHECK(std::find(names.begin(), names.end(), "reward_angular_acceleration") != names.end());

  // Refused calls name the problem and leave the Params as they were.
  const Q::Params before = p;
  auto unchanged = [&] {
    CHECK(std::memcmp(&p.reward, &before.reward, sizeof p.reward) == 0);
    CHECK(p.max_episode_steps == before.max_episode_steps);
  };
  CHECK_THROWS_WITH(rlkernels::set_param<Q>(p, "reward_angular_acceleraton", "0"),
                    Catch::Contains("unknown env parameter 'reward_angular_acceleraton'") &&
                        Catch::Contains("reward_angular_acceleration"));
  CHECK_THROWS_WITH(rlkernels::set_param<Q>(p, "reward_scale", "nan"), Catch::Contains("reward_scale"));
  CHECK_THROWS_WITH(rlkernels::set_param<Q>(p, "reward_scale", "0.1x"), Catch::Contains("not a finite number"));
  CHECK_THROWS_WITH(rlkernels::set_param<Q>(p, "max_episode_steps", "2.5"), Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(rlkernels::set_param<Q>(p, "termination_enabled", "maybe"), Catch::Contains("true/false"));
  unchanged();

  // A two-number range (Hopper's healthy_z_range) takes "low,high".
  using H = rlkernels::hopper<double>;
  H::Params h{};
  rlkernels::set_param<H>(h, "healthy_z_range", "0.5,2");
  CHECK(h.healthy_z_range[0] == 0.5);
  CHECK(h.healthy_z_range[1] == 2.0);
  CHECK_THROWS_WITH(rlkernels::set_param<H>(h, "healthy_z_range", "0.5"), Catch::Contains("low,high"));
  CHECK(h.healthy_z_range[0] == 0.5);
}

TEST_CASE("the bundled Crazyflie policy (train_td3, policy file) flies l2f.Environment() from its initial states",
          "[quadrotor][policy]") {
  // tests/reference/l2f_crazyflie_td3_policy.txt: docs/quadrotor.md, "Using the policy". Evaluated
  // with policy_file::act in double on quadrotor<double> with l2f.Environment()'s Params unchanged:
  // learning-to-fly's settling fraction (episodes that run all 500 steps and end within 0.2 m) over
  // 100 episodes is at least 0.9, as when the policy was exported (from other initial states).
  using Q = quadrotor<double>;
  const policy_file policy = policy_file::load(rlk_test::reference_dir() + "/l2f_crazyflie_td3_policy.txt");
  REQUIRE(policy.env == "L2F-Crazyflie-v0");
  REQUIRE(policy.observation_size == Q::observation_size);
  REQUIRE(policy.action_size == Q::action_size);
  REQUIRE(policy.rescale);
  const Q::Params params{};
  constexpr int episodes = 100;
  int settled = 0, terminated = 0;
  double obs[Q::observation_size], action[Q::action_size];
  for (int i = 0; i < episodes; ++i) {
    rlkernels::rng gen(20261205, std::uint64_t(i), 0);
    Q::State s{};
    Q::reset(params, s, gen);
    bool ended = false;
    for (int t = 0; t < 500 && !ended; ++t) {
      Q::observe(params, s, obs);
      policy.act(obs, action);
      for (double a : action) REQUIRE((a >= -1 && a <= 1));
      ended = Q::step(params, s, action, gen).terminated;
    }
    const double distance =
        std::sqrt(s.position[0] * s.position[0] + s.position[1] * s.position[1] + s.position[2] * s.position[2]);
    terminated += ended ? 1 : 0;
    settled += !ended && distance < 0.2 ? 1 : 0;
  }
  INFO("settled " << settled << ", terminated " << terminated << " of " << episodes);
  CHECK(settled >= 90);
}
