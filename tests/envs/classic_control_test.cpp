// Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0 and Acrobot-v1 against golden trajectories
// recorded from the real Gymnasium package (tests/reference/classic_control_gymnasium.py): single
// steps from every recorded state in double and float, and whole episodes through vec_env with the
// time limit, final observations and auto-reset; the double envs' float64 state after every step,
// bit for bit (tests/reference/classic_control_float64.py). Plus the env-specific rules the data
// may not reach, and the registry of Gymnasium ids.
#include <rlkernels/envs/acrobot.hpp>
#include <rlkernels/envs/mountain_car.hpp>
#include <rlkernels/envs/mountain_car_continuous.hpp>
#include <rlkernels/envs/pendulum.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../test_backend.hpp"
#include "golden_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace rlkernels;
using rlk_test::golden_table;

namespace {

// ---- what each env's golden file holds and how exact each comparison is ------------------------
//
// Comparisons are relative to max(|reference|, scale), with `scale` the natural size of each
// component (its bound or typical range): components that pass through zero make a purely relative
// error meaningless there. `file` holds the float32 observations of long episodes
// (classic_control_gymnasium.py); `float64_file` the float64 state before and after each step of
// short trajectories that reach every branch (classic_control_float64.py). `double_exact` says
// where Gymnasium computes the step in float64, so that the double env must match it bit for bit.

struct pendulum_spec {
  template <class S> using env = pendulum<S>;
  static constexpr const char* file = "pendulum_v1.csv";
  static constexpr const char* float64_file = "pendulum_v1_float64.csv";
  static constexpr double obs_scale[3] = {1, 1, 8};
  static constexpr double state_scale[2] = {1, 8};
  static constexpr double reward_scale = 1;
  static constexpr int episodes = 16;
  /// With a float64 action Gymnasium computes in float64 throughout, so double must match exactly.
  /// With a float32 action NumPy 2 (NEP 50) computes 3*u and 0.001*u**2 in float32, which the
  /// double env keeps in double: 1e-6 relative then.
  static bool double_exact(const golden_table& g, std::size_t i) { return g.at(i, "action_dtype") == 64; }
  static bool is_reset_observation(const double* obs) {
    return std::abs(obs[0] * obs[0] + obs[1] * obs[1] - 1) < 1e-12 && std::abs(obs[2]) <= 1;
  }
};

struct mountain_car_spec {
  template <class S> using env = mountain_car<S>;
  static constexpr const char* file = "mountain_car_v0.csv";
  static constexpr const char* float64_file = "mountain_car_v0_float64.csv";
  static constexpr double obs_scale[2] = {1, 0.07};
  static constexpr double state_scale[2] = {1, 0.07};
  static constexpr double reward_scale = 1;
  static constexpr int episodes = 16;
  static bool double_exact(const golden_table&, std::size_t) { return true; }  // float64 throughout
  static bool is_reset_observation(const double* obs) { return obs[0] >= -0.6 && obs[0] <= -0.4 && obs[1] == 0; }
};

struct mountain_car_continuous_spec {
  template <class S> using env = mountain_car_continuous<S>;
  static constexpr const char* file = "mountain_car_continuous_v0.csv";
  static constexpr const char* float64_file = "mountain_car_continuous_v0_float64.csv";
  static constexpr double obs_scale[2] = {1, 0.07};
  static constexpr double state_scale[2] = {1, 0.07};
  static constexpr double reward_scale = 1;
  static constexpr int episodes = 16;
  /// Gymnasium stores this env's state as float32 after each step and, under NumPy 2's promotion,
  /// updates the velocity in float32 when the action is float32; the double env computes in
  /// double: 1e-6 relative. (The reward, computed in float64 there too, is still exact.)
  static bool double_exact(const golden_table&, std::size_t) { return false; }
  static bool is_reset_observation(const double* obs) { return obs[0] >= -0.6 && obs[0] <= -0.4 && obs[1] == 0; }
};

struct acrobot_spec {
  template <class S> using env = acrobot<S>;
  static constexpr const char* file = "acrobot_v1.csv";
  static constexpr const char* float64_file = "acrobot_v1_float64.csv";
  static constexpr double obs_scale[6] = {1, 1, 1, 1, 4 * M_PI, 9 * M_PI};
  static constexpr double state_scale[4] = {1, 1, 4 * M_PI, 9 * M_PI};
  static constexpr double reward_scale = 1;
  static constexpr int episodes = 16;
  static bool double_exact(const golden_table&, std::size_t) { return true; }  // float64 throughout
  static bool is_reset_observation(const double* obs) {
    const double c = std::cos(0.1), s = std::sin(0.1);
    return obs[0] >= c && std::abs(obs[1]) <= s && obs[2] >= c && std::abs(obs[3]) <= s && std::abs(obs[4]) <= 0.1 &&
           std::abs(obs[5]) <= 0.1;
  }
};

template <class Spec, class S>
using env_of = typename Spec::template env<S>;

/// Number of scalars in Env::State (the env's State is its scalars in the order Gymnasium keeps them).
template <class Env>
constexpr int state_size = int(sizeof(typename Env::State) / sizeof(typename Env::scalar_type));

/// The recorded state of row i: before the step (columns s0..), or after it (prefix "n": n0..).
template <class Env>
typename Env::State state_of(const golden_table& g, std::size_t i, const char* prefix = "s") {
  using S = typename Env::scalar_type;
  constexpr int n = state_size<Env>;
  static_assert(sizeof(typename Env::State) == n * sizeof(S), "State must be plain scalars");
  S values[n];
  for (int k = 0; k < n; ++k) values[k] = S(g.at(i, prefix + std::to_string(k)));
  typename Env::State s;
  std::memcpy(&s, values, sizeof(s));
  return s;
}

/// The components of a state as doubles.
template <class Env>
std::vector<double> components(const typename Env::State& s) {
  typename Env::scalar_type values[state_size<Env>];
  std::memcpy(values, &s, sizeof(s));
  return std::vector<double>(std::begin(values), std::end(values));
}

template <class Env>
step_result<typename Env::scalar_type> step_row(typename Env::State& s, const golden_table& g, std::size_t i) {
  rng unused(0, 0);
  if constexpr (Env::action_space == action_kind::discrete) {
    return Env::step(typename Env::Params{}, s, std::int32_t(g.at(i, "action")), unused);
  } else {
    const typename Env::scalar_type a = typename Env::scalar_type(g.at(i, "action"));
    return Env::step(typename Env::Params{}, s, &a, unused);
  }
}

/// |x - ref| / max(|ref|, scale)
double relative_error(double x, double ref, double scale) { return std::abs(x - ref) / std::max(std::abs(ref), scale); }

}  // namespace

TEMPLATE_TEST_CASE("golden data covers both episode endings", "[classic_control][reference]", pendulum_spec,
                   mountain_car_spec, mountain_car_continuous_spec, acrobot_spec) {
  const golden_table g(TestType::file);
  int terminated = 0, truncated = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    terminated += g.at(i, "terminated") != 0;
    truncated += g.at(i, "truncated") != 0;
  }
  CHECK(g.size() >= 2500);
  CHECK(terminated + truncated == TestType::episodes);
  CHECK(truncated >= 4);
  if (!std::is_same_v<TestType, pendulum_spec>) CHECK(terminated >= 8);  // Pendulum never terminates
}

TEMPLATE_TEST_CASE("double step reproduces Gymnasium (bit for bit where it computes in float64)",
                   "[classic_control][reference]", pendulum_spec, mountain_car_spec, mountain_car_continuous_spec,
                   acrobot_spec) {
  using Env = env_of<TestType, double>;
  const golden_table g(TestType::file);
  int exact_rows = 0;
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    typename Env::State s = state_of<Env>(g, i);
    const step_result<double> out = step_row<Env>(s, g, i);
    double obs[Env::observation_size];
    Env::observe({}, s, obs);
    const double ref_reward = g.at(i, "reward");
    INFO("row " << i << " seed " << g.at(i, "seed") << " episode " << g.at(i, "episode") << " t " << g.at(i, "t"));
    if (TestType::double_exact(g, i)) {
      ++exact_rows;
      for (int k = 0; k < Env::observation_size; ++k) {
        INFO("component " << k);
        REQUIRE(rlk_test::float_bits(float(obs[k])) == rlk_test::float_bits(float(g.at(i, "obs" + std::to_string(k)))));
      }
      REQUIRE(rlk_test::double_bits(out.reward) == rlk_test::double_bits(ref_reward));
    } else {
      for (int k = 0; k < Env::observation_size; ++k) {
        const double e = relative_error(obs[k], g.at(i, "obs" + std::to_string(k)), TestType::obs_scale[k]);
        worst = std::max(worst, e);
        INFO("component " << k);
        REQUIRE(e <= 1e-6);
      }
      REQUIRE(relative_error(out.reward, ref_reward, TestType::reward_scale) <= 1e-6);
    }
    REQUIRE(out.terminated == (g.at(i, "terminated") != 0));
  }
  // Measured worst relative error of the inexact rows: Pendulum 3.1e-8, MountainCarContinuous
  // 5.8e-8, i.e. within the float32 rounding of the observation itself.
  CHECK(worst < 1e-6);
  if (std::is_same_v<TestType, pendulum_spec>) CHECK(exact_rows >= 1000);
  if (std::is_same_v<TestType, mountain_car_continuous_spec>) CHECK(exact_rows == 0);
  if (std::is_same_v<TestType, mountain_car_spec> || std::is_same_v<TestType, acrobot_spec>)
    CHECK(exact_rows == int(g.size()));
}

TEMPLATE_TEST_CASE("float step stays within 1e-5 relative of Gymnasium", "[classic_control][reference]", pendulum_spec,
                   mountain_car_spec, mountain_car_continuous_spec, acrobot_spec) {
  using Env = env_of<TestType, float>;
  const golden_table g(TestType::file);
  int flag_mismatches = 0;
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    typename Env::State s = state_of<Env>(g, i);
    const step_result<float> out = step_row<Env>(s, g, i);
    float obs[Env::observation_size];
    Env::observe({}, s, obs);
    INFO("row " << i << " seed " << g.at(i, "seed") << " episode " << g.at(i, "episode") << " t " << g.at(i, "t"));
    for (int k = 0; k < Env::observation_size; ++k) {
      const double e = relative_error(obs[k], g.at(i, "obs" + std::to_string(k)), TestType::obs_scale[k]);
      worst = std::max(worst, e);
      INFO("component " << k);
      REQUIRE(e <= 1e-5);
    }
    REQUIRE(relative_error(out.reward, g.at(i, "reward"), TestType::reward_scale) <= 1e-5);
    flag_mismatches += out.terminated != (g.at(i, "terminated") != 0);
  }
  // The float state can land on the other side of a threshold only when the reference lands within
  // float rounding of it; the recorded data has no such case.
  CHECK(flag_mismatches == 0);
  // Measured worst: Pendulum 5.8e-6 (its unwrapped angle reaches 73 rad, where rounding the recorded
  // state to float moves it by up to 3.8e-6 before the step even starts), Acrobot 5.4e-7,
  // MountainCar 1.2e-7, MountainCarContinuous 6.0e-8.
  CHECK(worst < 1e-5);
}

TEMPLATE_TEST_CASE("vec_env replays Gymnasium episodes: flags, time limit, final observation, auto-reset",
                   "[classic_control][vec_env][reference]", pendulum_spec, mountain_car_spec,
                   mountain_car_continuous_spec, acrobot_spec) {
  using Env = env_of<TestType, double>;
  using venv = vec_env<Env, rlk_test::backend_t>;
  constexpr int obs_size = Env::observation_size;
  const golden_table g(TestType::file);
  venv env(rlk_test::backend(), 1, 7);
  buffer<typename venv::action_type, rlk_test::backend_t> action(rlk_test::backend(), venv::action_width);
  int episodes = 0;
  double return_sum = 0, episode_return = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double t = g.at(i, "t");
    REQUIRE(env.episode_lengths().get(0) == t);  // auto-reset restarted the count
    // Continue from the recorded state (Gymnasium's reset draws come from NumPy, not our rng).
    env.set_states({state_of<Env>(g, i)});
    action.assign(std::vector<typename venv::action_type>{typename venv::action_type(g.at(i, "action"))});
    env.step(action.cview());

    const std::vector<double> final_obs = env.final_observations().to_host();
    const std::vector<double> obs = env.observations().to_host();
    INFO("row " << i << " seed " << g.at(i, "seed") << " episode " << g.at(i, "episode") << " t " << t);
    for (int k = 0; k < obs_size; ++k) {
      const double ref = g.at(i, "obs" + std::to_string(k));
      if (!rlk_test::on_cuda && TestType::double_exact(g, i)) {
        REQUIRE(rlk_test::float_bits(float(final_obs[k])) == rlk_test::float_bits(float(ref)));
      } else {
        // CUDA's sin/cos/pow may differ from glibc's in the last bit of a double.
        REQUIRE(relative_error(final_obs[k], ref, TestType::obs_scale[k]) <= 1e-6);
      }
    }
    const double reward = env.rewards().get(0);
    REQUIRE(relative_error(reward, g.at(i, "reward"), TestType::reward_scale) <= 1e-6);
    REQUIRE(bool(env.terminated().get(0)) == (g.at(i, "terminated") != 0));
    REQUIRE(bool(env.truncated().get(0)) == (g.at(i, "truncated") != 0));
    episode_return += reward;
    if (env.terminated().get(0) || env.truncated().get(0)) {
      ++episodes;
      return_sum += episode_return;
      episode_return = 0;
      // Auto-reset in the same step: observations() is a fresh start inside the reset bounds.
      REQUIRE(TestType::is_reset_observation(obs.data()));
      REQUIRE(env.episode_lengths().get(0) == 0);
      REQUIRE(env.episode_returns().get(0) == 0.0);
    } else {
      REQUIRE(obs == final_obs);
      REQUIRE(env.episode_lengths().get(0) == t + 1);
    }
  }
  CHECK(episodes == TestType::episodes);
  const episode_statistics stats = env.get_episode_statistics();
  CHECK(stats.count == std::uint64_t(TestType::episodes));
  CHECK(stats.mean_length == Approx(double(g.size()) / TestType::episodes).epsilon(1e-12));
  CHECK(stats.mean_return == Approx(return_sum / TestType::episodes).epsilon(1e-12));
}

// ---- the float64 state after every step -----------------------------------------------------------

TEMPLATE_TEST_CASE("double step leaves Gymnasium's float64 state bit for bit (where it computes in float64)",
                   "[classic_control][reference][float64]", pendulum_spec, mountain_car_spec,
                   mountain_car_continuous_spec, acrobot_spec) {
  // The float32 observations hide a last-bit difference of the double state (a reordered product,
  // x*x for libm's pow(x, 2)); the recorded float64 states do not.
  using Env = env_of<TestType, double>;
  constexpr int n = state_size<Env>;
  SECTION("every branch: both directions, clipping, walls, bounds, wrapping, terminations") {
    const golden_table g(TestType::float64_file);
    int exact_rows = 0, terminated = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      typename Env::State s = state_of<Env>(g, i);
      const step_result<double> out = step_row<Env>(s, g, i);
      const std::vector<double> got = components<Env>(s), ref = components<Env>(state_of<Env>(g, i, "n"));
      INFO(TestType::float64_file << " row " << i << " episode " << g.at(i, "episode") << " t " << g.at(i, "t"));
      if (TestType::double_exact(g, i)) {
        ++exact_rows;
        for (int k = 0; k < n; ++k) {
          INFO("state component " << k << ": ours " << got[k] << " Gymnasium " << ref[k]);
          REQUIRE(rlk_test::double_bits(got[k]) == rlk_test::double_bits(ref[k]));
        }
      } else {
        // MountainCarContinuous: Gymnasium keeps the state in float32 (see its spec above).
        for (int k = 0; k < n; ++k) {
          INFO("state component " << k << ": ours " << got[k] << " Gymnasium " << ref[k]);
          REQUIRE(relative_error(got[k], ref[k], TestType::state_scale[k]) <= 1e-6);
        }
      }
      REQUIRE(rlk_test::double_bits(out.reward) == rlk_test::double_bits(g.at(i, "reward")));
      REQUIRE(out.terminated == (g.at(i, "terminated") != 0));
      terminated += out.terminated;
    }
    CHECK(g.size() >= 150);
    if (!std::is_same_v<TestType, pendulum_spec>) CHECK(terminated >= 2);
    if (std::is_same_v<TestType, mountain_car_continuous_spec>) {
      CHECK(exact_rows == 0);
    } else {
      CHECK(exact_rows == int(g.size()));  // Pendulum's trajectories here use float64 actions only
    }
  }
  SECTION("the long recorded episodes: each step ends in the state the next row starts from") {
    const golden_table g(TestType::file);
    int checked = 0;
    for (std::size_t i = 0; i + 1 < g.size(); ++i) {
      const bool same_episode = g.at(i + 1, "seed") == g.at(i, "seed") && g.at(i + 1, "episode") == g.at(i, "episode");
      if (!same_episode || !TestType::double_exact(g, i)) continue;
      REQUIRE(g.at(i + 1, "t") == g.at(i, "t") + 1);
      typename Env::State s = state_of<Env>(g, i);
      step_row<Env>(s, g, i);
      const std::vector<double> got = components<Env>(s), ref = components<Env>(state_of<Env>(g, i + 1));
      INFO(TestType::file << " row " << i << " seed " << g.at(i, "seed") << " episode " << g.at(i, "episode") << " t "
                          << g.at(i, "t"));
      for (int k = 0; k < n; ++k) {
        INFO("state component " << k << ": ours " << got[k] << " Gymnasium " << ref[k]);
        REQUIRE(rlk_test::double_bits(got[k]) == rlk_test::double_bits(ref[k]));
      }
      ++checked;
    }
    // MountainCarContinuous has no float64 state to compare (float32 in Gymnasium).
    if (std::is_same_v<TestType, mountain_car_continuous_spec>) {
      CHECK(checked == 0);
    } else {
      CHECK(checked >= 1500);
    }
  }
}

TEMPLATE_TEST_CASE("vec_env<double> follows Gymnasium's float64 states step after step",
                   "[classic_control][vec_env][reference][float64]", pendulum_spec, mountain_car_spec,
                   mountain_car_continuous_spec, acrobot_spec) {
  using Env = env_of<TestType, double>;
  using venv = vec_env<Env, rlk_test::backend_t>;
  constexpr int n = state_size<Env>;
  const golden_table g(TestType::float64_file);
  typename Env::Params params;
  params.max_episode_steps = 1 << 30;  // the trajectories follow each other without a reset
  venv env(rlk_test::backend(), 1, 7, params);
  buffer<typename venv::action_type, rlk_test::backend_t> action(rlk_test::backend(), venv::action_width);
  for (std::size_t i = 0; i < g.size(); ++i) {
    // On the host the env runs free from each trajectory's start; on CUDA (whose sin/cos/pow may
    // differ in the last bit, which Acrobot's chaos amplifies) it restarts from every recorded state.
    if (g.at(i, "t") == 0 || rlk_test::on_cuda) env.set_states({state_of<Env>(g, i)});
    action.assign(std::vector<typename venv::action_type>{typename venv::action_type(g.at(i, "action"))});
    env.step(action.cview());
    INFO(TestType::float64_file << " row " << i << " episode " << g.at(i, "episode") << " t " << g.at(i, "t"));
    REQUIRE(bool(env.terminated().get(0)) == (g.at(i, "terminated") != 0));
    const double reward = env.rewards().get(0);
    if (rlk_test::on_cuda) {
      REQUIRE(relative_error(reward, g.at(i, "reward"), TestType::reward_scale) <= 1e-6);
    } else {
      REQUIRE(rlk_test::double_bits(reward) == rlk_test::double_bits(g.at(i, "reward")));
    }
    if (g.at(i, "terminated") != 0) continue;  // auto-reset replaced the state; the single steps check it
    const std::vector<double> got = components<Env>(env.states().to_host()[0]);
    const std::vector<double> ref = components<Env>(state_of<Env>(g, i, "n"));
    for (int k = 0; k < n; ++k) {
      INFO("state component " << k << ": ours " << got[k] << " Gymnasium " << ref[k]);
      if (!rlk_test::on_cuda && TestType::double_exact(g, i)) {
        REQUIRE(rlk_test::double_bits(got[k]) == rlk_test::double_bits(ref[k]));
      } else {
        REQUIRE(relative_error(got[k], ref[k], TestType::state_scale[k]) <= 1e-6);
      }
    }
  }
}

// ---- rules and settings beyond the recorded data ------------------------------------------------

TEST_CASE("pendulum: angle_normalize is floor-style modulo into [-pi, pi)", "[classic_control][pendulum]") {
  using P = pendulum<double>;
  CHECK(P::angle_normalize(0.0) == 0.0);
  CHECK(P::angle_normalize(M_PI) == -M_PI);  // ((pi + pi) mod 2pi) - pi
  CHECK(P::angle_normalize(-M_PI) == -M_PI);
  CHECK(P::angle_normalize(3 * M_PI / 2) == Approx(-M_PI / 2));
  CHECK(P::angle_normalize(-3 * M_PI / 2) == Approx(M_PI / 2));
  CHECK(P::angle_normalize(-20.0) == Approx(-20.0 + 3 * 2 * M_PI));  // Python: ((-20 + pi) % 2pi) - pi
  for (double x = -50; x < 50; x += 0.37) {
    const double y = P::angle_normalize(x);
    REQUIRE(y >= -M_PI);
    REQUIRE(y < M_PI);
    REQUIRE(std::abs(std::remainder(x - y, 2 * M_PI)) < 1e-12);
  }
}

TEST_CASE("continuous envs clip the action for the dynamics as Gymnasium does", "[classic_control]") {
  rng unused(0, 0);
  SECTION("pendulum: torque beyond +-2 acts as +-2, including infinities; the cost uses the clipped torque") {
    using P = pendulum<double>;
    for (const double a : {2.0, 3.5, std::numeric_limits<double>::infinity()}) {
      P::State s{0.3, -0.2};
      const step_result<double> r = P::step({}, s, &a, unused);
      P::State ref{0.3, -0.2};
      const double two = 2.0;
      const step_result<double> r2 = P::step({}, ref, &two, unused);
      CHECK(s.theta == ref.theta);
      CHECK(s.theta_dot == ref.theta_dot);
      CHECK(r.reward == r2.reward);
    }
  }
  SECTION("mountain car continuous: the force is clipped, the action cost is not") {
    using M = mountain_car_continuous<double>;
    M::State a{-0.5, 0.01}, b{-0.5, 0.01};
    const double big = 3.0, one = 1.0;
    const step_result<double> ra = M::step({}, a, &big, unused);
    const step_result<double> rb = M::step({}, b, &one, unused);
    CHECK(a.position == b.position);
    CHECK(a.velocity == b.velocity);
    CHECK(ra.reward == Approx(-0.9));
    CHECK(rb.reward == Approx(-0.1));
  }
}

TEST_CASE("mountain car: the left wall stops the car; the goal needs position and velocity", "[classic_control]") {
  rng unused(0, 0);
  mountain_car<double>::State s{-1.19, -0.05};
  mountain_car<double>::step({}, s, 0, unused);
  CHECK(s.position == -1.2);
  CHECK(s.velocity == 0.0);
  mountain_car<double>::Params p;
  p.goal_velocity = 0.01;  // Gymnasium's goal_velocity argument
  mountain_car<double>::State near_goal{0.499, 0.005};
  const step_result<double> r = mountain_car<double>::step(p, near_goal, 2, unused);
  CHECK(near_goal.position >= 0.5);
  CHECK(near_goal.velocity < 0.01);
  CHECK_FALSE(r.terminated);  // too slow
  CHECK(r.reward == -1.0);
}

TEST_CASE("acrobot: nips dynamics drop one term; torque noise perturbs the torque", "[classic_control]") {
  using A = acrobot<double>;
  const A::State s{0.4, -1.1, 0.7, 2.0};
  A::Params book, nips;
  nips.nips_dynamics = true;
  const A::State db = A::derivatives(book, 1.0, s), dn = A::derivatives(nips, 1.0, s);
  CHECK(db.theta1 == dn.theta1);
  CHECK(db.theta2 == dn.theta2);
  // The book's extra term: -m2 l1 lc2 dtheta1^2 sin(theta2) / (m2 lc2^2 + I2 - d2^2 / d1).
  const double d1 = 0.25 + (1 + 0.25 + std::cos(s.theta2)) + 2, d2 = (0.25 + 0.5 * std::cos(s.theta2)) + 1;
  const double extra = -0.5 * s.theta1_dot * s.theta1_dot * std::sin(s.theta2) / (0.25 + 1 - d2 * d2 / d1);
  CHECK(db.theta2_dot - dn.theta2_dot == Approx(extra).epsilon(1e-12));

  A::Params noisy;
  noisy.torque_noise_max = 0.5;
  rng gen_a(1, 0), gen_b(1, 0), gen_c(2, 0);
  A::State a = s, b = s, c = s, quiet = s;
  A::step(noisy, a, 1, gen_a);
  A::step(noisy, b, 1, gen_b);
  A::step(noisy, c, 1, gen_c);
  A::step(book, quiet, 1, gen_c);
  CHECK(a.theta2_dot == b.theta2_dot);  // same stream, same noise
  CHECK(a.theta2_dot != c.theta2_dot);
  CHECK(a.theta2_dot != quiet.theta2_dot);

  // A state set to infinity does not hang the angle wrapping (Gymnasium's loop would not end).
  A::State broken{std::numeric_limits<double>::infinity(), 0.0, 0.0, 0.0};
  A::step(book, broken, 1, gen_a);
  CHECK_FALSE(std::isfinite(broken.theta1));
}

TEMPLATE_TEST_CASE("resets draw from Gymnasium's ranges", "[classic_control]", pendulum_spec, mountain_car_spec,
                   mountain_car_continuous_spec, acrobot_spec) {
  using Env = env_of<TestType, float>;
  vec_env<Env, rlk_test::backend_t> env(rlk_test::backend(), 4096, 11);
  const std::vector<float> obs = env.observations().to_host();
  for (std::size_t i = 0; i < 4096; ++i) {
    double o[Env::observation_size];
    for (int k = 0; k < Env::observation_size; ++k) o[k] = obs[i * Env::observation_size + k];
    INFO("env " << i);
    // float rounding of cos^2 + sin^2
    if constexpr (std::is_same_v<TestType, pendulum_spec>) {
      REQUIRE(std::abs(o[0] * o[0] + o[1] * o[1] - 1) < 1e-6);
      REQUIRE(std::abs(o[2]) <= 1);
    } else {
      REQUIRE(TestType::is_reset_observation(o));
    }
  }
  // The draws fill the range (not a constant or a narrow band).
  const std::vector<typename Env::State> states = env.states().to_host();
  float lo = 1e9f, hi = -1e9f;
  for (const auto& s : states) {
    const float first = *reinterpret_cast<const float*>(&s);
    lo = std::min(lo, first);
    hi = std::max(hi, first);
  }
  const double width = std::is_same_v<TestType, pendulum_spec> ? 2 * M_PI : 0.2;  // theta; theta1; position
  CHECK(hi - lo > 0.99 * width);
  CHECK(hi - lo <= width);
}

TEST_CASE("vec_env with a continuous env rejects NaN actions and changes nothing", "[classic_control][vec_env]") {
  using venv = vec_env<pendulum<float>, rlk_test::backend_t>;
  venv env(rlk_test::backend(), 8, 3);
  const std::vector<float> before = env.observations().to_host();
  std::vector<float> a(8, 0.5f);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  buffer<float, rlk_test::backend_t> actions(rlk_test::backend(), a);
  try {
    env.step(actions.cview());
    FAIL("no exception");
  } catch (const invalid_action& e) {
    CHECK(e.env_index() == 5);
    CHECK(std::string(e.what()).find("NaN") != std::string::npos);
  }
  CHECK(env.observations().to_host() == before);
  CHECK(env.episode_lengths().get(0) == 0);
  buffer<float, rlk_test::backend_t> wrong_size(rlk_test::backend(), 7);
  CHECK_THROWS_AS(env.step(wrong_size.cview()), std::invalid_argument);
}

// ---- registry ----------------------------------------------------------------------------------------

TEST_CASE("registry: Gymnasium ids map to the env types with Gymnasium's time limits", "[registry]") {
  struct expected {
    const char* id;
    const char* type_name;
    int max_steps;
    action_kind space;
    int obs;
  };
  const expected table[] = {{"CartPole-v0", "cartpole", 200, action_kind::discrete, 4},
                            {"CartPole-v1", "cartpole", 500, action_kind::discrete, 4},
                            {"MountainCar-v0", "mountain_car", 200, action_kind::discrete, 2},
                            {"MountainCarContinuous-v0", "mountain_car_continuous", 999, action_kind::continuous, 2},
                            {"Pendulum-v1", "pendulum", 200, action_kind::continuous, 3},
                            {"Acrobot-v1", "acrobot", 500, action_kind::discrete, 6}};
  const std::vector<env_info> all = registered_envs();
  REQUIRE(all.size() >= std::size(table));  // the classic-control ids come first; grid envs follow
  for (std::size_t k = 0; k < std::size(table); ++k) {
    INFO(table[k].id);
    CHECK(all[k].id == table[k].id);
    CHECK(is_registered(table[k].id));
    const env_info info = visit_env(table[k].id, [](auto entry) {
      using Env = typename decltype(entry)::env_type;
      static_assert(std::is_same_v<typename Env::scalar_type, float>);
      CHECK(entry.params.max_episode_steps == entry.info.max_episode_steps);
      return entry.info;
    });
    CHECK(info.type_name == table[k].type_name);
    CHECK(info.max_episode_steps == table[k].max_steps);
    CHECK(info.action_space == table[k].space);
    CHECK(info.observation_size == table[k].obs);
  }
  CHECK(std::isnan(all[4].reward_threshold));  // Pendulum-v1 has none
  CHECK(all[1].reward_threshold == 475.0);
  CHECK(all[3].action_low == -1.0);
  CHECK(all[4].action_high == 2.0);

  // The visitor gets the right type, in double when asked.
  const bool is_pendulum = visit_env<double>("Pendulum-v1", [](auto entry) {
    return std::is_same_v<typename decltype(entry)::env_type, pendulum<double>>;
  });
  CHECK(is_pendulum);
  int calls = 0;
  visit_env("Acrobot-v1", [&](auto) { ++calls; });  // a void visitor
  CHECK(calls == 1);
}

TEST_CASE("registry: an unknown id names the closest registered one and lists them all", "[registry]") {
  const auto message = [](const char* id) {
    try {
      visit_env(id, [](auto) { return 0; });
    } catch (const unknown_env& e) {
      CHECK(e.id() == id);
      return std::string(e.what());
    }
    FAIL("no exception for " << id);
    return std::string();
  };
  CHECK_THAT(message("Pendulum-v0"), Catch::Contains("did you mean 'Pendulum-v1'"));
  CHECK_THAT(message("cartpole-v1"), Catch::Contains("did you mean 'CartPole-v"));
  CHECK_THAT(message("Acrobt-v1"), Catch::Contains("did you mean 'Acrobot-v1'"));
  const std::string none = message("Breakout-MinAtar");
  CHECK_THAT(none, Catch::Contains("unknown environment id 'Breakout-MinAtar'"));
  CHECK_THAT(none, !Catch::Contains("did you mean"));
  CHECK_THAT(none, Catch::Contains("MountainCarContinuous-v0"));
  CHECK_FALSE(is_registered("Pendulum-v0"));
  CHECK_THROWS_AS(visit_env("", [](auto) {}), std::invalid_argument);
}
