// Hopper-v5, Walker2d-v5 and HalfCheetah-v5 against Gymnasium 1.4 on MuJoCo 3.12.0 (golden data
// from tests/reference/mujoco_gymnasium_record.py): one env step from recorded states (set_state,
// then step, with actions inside and far beyond ctrlrange), the first 100 steps of recorded
// episodes replayed through vec_env from the same resets with the same actions, and the lengths
// and returns of ~1000 whole episodes per env. Plus the serial and OpenMP backends bit for bit,
// float against double, fuzzing with extreme actions and states (never a NaN), the handling of
// steps the engine flags, and the registry ids.
#include <rlkernels/algorithms/policy_file.hpp>
#include <rlkernels/envs/mujoco/ant.hpp>
#include <rlkernels/envs/mujoco/full_capacity.hpp>
#include <rlkernels/envs/param_fields.hpp>
#include <rlkernels/envs/mujoco/half_cheetah.hpp>
#include <rlkernels/envs/mujoco/hopper.hpp>
#include <rlkernels/envs/mujoco/humanoid.hpp>
#include <rlkernels/envs/mujoco/humanoid_standup.hpp>
#include <rlkernels/envs/mujoco/inverted_double_pendulum.hpp>
#include <rlkernels/envs/mujoco/inverted_pendulum.hpp>
#include <rlkernels/envs/mujoco/pusher.hpp>
#include <rlkernels/envs/mujoco/reacher.hpp>
#include <rlkernels/envs/mujoco/swimmer.hpp>
#include <rlkernels/envs/mujoco/task_env.hpp>
#include <rlkernels/envs/mujoco/walker2d.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../reference_dir.hpp"
#include "../stats.hpp"
#include "../test_backend.hpp"
#include "golden_f64.hpp"
#include "gymnasium_tasks.hpp"
#include "../../examples/my_robot/my_robot_task.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace rlkernels;
using rlk_test::backend_t;

namespace {

// ---- the actions: the same counter hash as mujoco_gymnasium_record.py -------------------------

RLK_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Component k of the action at step t of episode e of the env with code `code`, in [-1, 1).
RLK_HOST_DEVICE inline double hash_action(int code, std::uint64_t e, std::uint64_t t, int k) {
  const std::uint64_t h = splitmix64((std::uint64_t(code) << 56) | (e << 32) | (t << 8) | std::uint64_t(k));
  return 2.0 * (double(h >> 11) * 0x1.0p-53) - 1.0;
}

// ---- the golden files: two float64 (rows, cols), then rows x cols float64, little-endian -------

using rlk_test::f64_table;

/// |a - b| relative to max(1, |b|).
double rel_error(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// ---- what differs between the envs -----------------------------------------------------------

struct hopper_spec {
  template <class S> using env = hopper<S>;
  template <class S> using env_with_x = hopper<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 1;
  static constexpr const char* stem = "hopper_v5";
  static constexpr const char* id = "Hopper-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 1000;
};
struct walker2d_spec {
  template <class S> using env = walker2d<S>;
  template <class S> using env_with_x = walker2d<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 2;
  static constexpr const char* stem = "walker2d_v5";
  static constexpr const char* id = "Walker2d-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 1000;
};
struct half_cheetah_spec {
  template <class S> using env = half_cheetah<S>;
  template <class S> using env_with_x = half_cheetah<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 3;
  static constexpr const char* stem = "half_cheetah_v5";
  static constexpr const char* id = "HalfCheetah-v5";
  static constexpr bool terminates = false;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 100;
};

struct ant_spec {
  template <class S> using env = ant<S>;
  template <class S> using env_with_x = ant<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 4;
  static constexpr const char* stem = "ant_v5";
  static constexpr const char* id = "Ant-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 500;
};

struct humanoid_spec {
  template <class S> using env = humanoid<S>;
  template <class S> using env_with_x = humanoid<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 5;
  static constexpr const char* stem = "humanoid_v5";
  static constexpr const char* id = "Humanoid-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 300;  // a Humanoid step costs ~10 Hopper steps
  static constexpr double random_stats_effective_size = 1000;
};
struct humanoid_standup_spec {
  template <class S> using env = humanoid_standup<S>;
  template <class S> using env_with_x = humanoid_standup<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 6;
  static constexpr const char* stem = "humanoid_standup_v5";
  static constexpr const char* id = "HumanoidStandup-v5";
  static constexpr bool terminates = false;
  static constexpr int fuzz_steps = 300;  // a Humanoid step costs ~10 Hopper steps
  static constexpr double random_stats_effective_size = 50;
};

struct inverted_pendulum_spec {
  template <class S> using env = inverted_pendulum<S>;
  static constexpr int code = 7;
  static constexpr const char* stem = "inverted_pendulum_v5";
  static constexpr const char* id = "InvertedPendulum-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 1000;
};
struct inverted_double_pendulum_spec {
  template <class S> using env = inverted_double_pendulum<S>;
  static constexpr int code = 8;
  static constexpr const char* stem = "inverted_double_pendulum_v5";
  static constexpr const char* id = "InvertedDoublePendulum-v5";
  static constexpr bool terminates = true;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 1000;
};

struct swimmer_spec {
  template <class S> using env = swimmer<S>;
  template <class S> using env_with_x = swimmer<S, false>;  // exclude_current_positions_from_observation=False
  static constexpr int code = 9;
  static constexpr const char* stem = "swimmer_v5";
  static constexpr const char* id = "Swimmer-v5";
  static constexpr bool terminates = false;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 100;
};

struct reacher_spec {
  template <class S> using env = reacher<S>;
  static constexpr int code = 10;
  static constexpr const char* stem = "reacher_v5";
  static constexpr const char* id = "Reacher-v5";
  static constexpr bool terminates = false;
  static constexpr int fuzz_steps = 1200;
  static constexpr double random_stats_effective_size = 1000;
};

struct pusher_spec {
  template <class S> using env = pusher<S>;
  static constexpr int code = 11;
  static constexpr const char* stem = "pusher_v5";
  static constexpr const char* id = "Pusher-v5";
  static constexpr bool terminates = false;
  static constexpr int fuzz_steps = 300;  // a Pusher step (5 steps with table contacts) costs ~4 Reacher steps
  static constexpr double random_stats_effective_size = 300;  // (the test command's time)
};

template <class Env, class = void>
struct has_set_state : std::false_type {};
template <class Env>
struct has_set_state<Env, decltype(void(Env::set_state(std::declval<const typename Env::Params&>(),
                                                       std::declval<typename Env::State&>(), nullptr, nullptr)))>
    : std::true_type {};

std::string file_of(const char* stem, const char* kind) { return std::string("mujoco_") + stem + "_" + kind + ".f64"; }

/// The state qpos = q, qvel = v, qacc_warmstart = w (0 if null).
template <class Env, class T>
typename Env::State make_state(const T* q, const T* v, const T* w) {
  typename Env::State s{};
  for (int i = 0; i < Env::nq; ++i) s.qpos[i] = typename Env::scalar_type(q[i]);
  for (int i = 0; i < Env::nv; ++i) {
    s.qvel[i] = typename Env::scalar_type(v[i]);
    s.qacc_warmstart[i] = w ? typename Env::scalar_type(w[i]) : typename Env::scalar_type(0);
  }
  // Gymnasium's set_state runs mj_forward: what an env keeps besides qpos and qvel (Ant: the main
  // body's position) follows from them
  if constexpr (has_set_state<Env>::value) Env::set_state(typename Env::Params{}, s, s.qpos, s.qvel);
  return s;
}

/// The reset states of the episodes file (columns e, length, return, terminated, qpos, qvel).
template <class Env>
std::vector<typename Env::State> reset_states(const f64_table& episodes, std::size_t n) {
  std::vector<typename Env::State> out;
  for (std::size_t i = 0; i < n; ++i) {
    const double* r = episodes.row(i);
    out.push_back(make_state<Env>(r + 4, r + 4 + Env::nq, static_cast<const double*>(nullptr)));
  }
  return out;
}

/// The hash actions of episodes first..first+n-1 at step t, [n, nu].
template <class Env>
std::vector<typename Env::scalar_type> actions_at(int code, std::size_t n, std::uint64_t t, std::uint64_t first = 0) {
  std::vector<typename Env::scalar_type> a(n * Env::nu);
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < Env::nu; ++k)
      a[i * Env::nu + k] = typename Env::scalar_type(hash_action(code, first + i, t, k));
  return a;
}

/// Two batches that must be equal bit for bit: the outputs of their last step.
template <class A, class B>
void require_same_step_outputs(const A& a, const B& b) {
  REQUIRE(a.final_observations().to_host() == b.final_observations().to_host());
  REQUIRE(a.observations().to_host() == b.observations().to_host());
  REQUIRE(a.rewards().to_host() == b.rewards().to_host());
  REQUIRE(a.terminated().to_host() == b.terminated().to_host());
  REQUIRE(a.truncated().to_host() == b.truncated().to_host());
}

/// Runs env i from resets[i] with the hash actions of episode i until it terminates or reaches the
/// time limit; writes its length and return (one whole episode per index, on the backend).
template <class Env>
struct episode_kernel {
  typename Env::Params params;
  int code;
  const typename Env::State* resets;
  std::int32_t* lengths;
  double* returns;
  std::uint32_t* unstable;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    using S = typename Env::scalar_type;
    typename Env::State s = resets[i];
    rng gen(0, i);
    double ret = 0;
    std::int32_t t = 0;
    S a[Env::nu];
    while (t < params.max_episode_steps) {
      for (int k = 0; k < Env::nu; ++k) a[k] = S(hash_action(code, i, std::uint64_t(t), k));
      const step_result<S> r = Env::step(params, s, a, gen);
      ret += double(r.reward);
      ++t;
      if (r.terminated || r.truncated) break;  // truncated: a step the engine could not take
    }
    lengths[i] = t;
    returns[i] = ret;
    unstable[i] = s.unstable_steps;
  }
};

}  // namespace

// ---- one step from recorded states -------------------------------------------------------------

TEMPLATE_TEST_CASE("one env step from a recorded state matches Gymnasium (set_state, then step)",
                   "[mujoco][envs][reference]", hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  using Env = typename TestType::template env<double>;
  constexpr int nq = Env::nq, nv = Env::nv, nobs = Env::observation_size;
  const f64_table g(file_of(TestType::stem, "one_step"));
  REQUIRE(g.cols == std::size_t(3 + nq + 2 * nv + 2 + nq + 2 * nv + nobs));
  const typename Env::Params p{};
  double max_state = 0, max_ws = 0, max_obs = 0, max_reward = 0;
  std::size_t terminated = 0, beyond_range = 0;
  for (std::size_t i = 0; i < g.rows; ++i) {
    const double* r = g.row(i);
    const int e = int(r[0]), t = int(r[1]);
    const double scale = r[2];
    const double* pre = r + 3;
    const double gym_reward = pre[nq + 2 * nv];
    const bool gym_terminated = pre[nq + 2 * nv + 1] != 0;
    const double* post = pre + nq + 2 * nv + 2;
    const double* gym_obs = post + nq + 2 * nv;
    typename Env::State s = make_state<Env>(pre, pre + nq, pre + nq + nv);
    double a[Env::nu];
    for (int k = 0; k < Env::nu; ++k) a[k] = scale * hash_action(TestType::code, std::uint64_t(e), std::uint64_t(t), k);
    rng gen(0, 0);
    const step_result<double> res = Env::step(p, s, a, gen);
    double obs[nobs];
    Env::observe(p, s, obs);
    INFO(TestType::id << " row " << i << " (episode " << e << ", step " << t << ", action scale " << scale << ")");
    double row_state = 0, row_ws = 0, row_obs = 0;
    for (int k = 0; k < nq; ++k) row_state = std::max(row_state, rel_error(s.qpos[k], post[k]));
    for (int k = 0; k < nv; ++k) row_state = std::max(row_state, rel_error(s.qvel[k], post[nq + k]));
    // qacc_warmstart is the last frame's acceleration: large numbers (1e3..1e5), relative to their size.
    double ws_scale = 1;
    for (int k = 0; k < nv; ++k) ws_scale = std::max(ws_scale, std::abs(post[nq + nv + k]));
    for (int k = 0; k < nv; ++k) row_ws = std::max(row_ws, std::abs(s.qacc_warmstart[k] - post[nq + nv + k]) / ws_scale);
    for (int k = 0; k < nobs; ++k) row_obs = std::max(row_obs, rel_error(obs[k], gym_obs[k]));
    // Not exact for the rewards: Reacher's and Pusher's recorded rewards carry, in their last bits
    // (up to 2 ulp), the recording machine's BLAS (Gymnasium's np.linalg.norm is a BLAS ddot; see
    // docs/physics.md, "Fidelity against Gymnasium"). These limits and the ones below are far above
    // that, so no outcome here depends on which BLAS recorded the data.
    const double row_reward = rel_error(res.reward, gym_reward);
    CHECK(row_state <= 1e-7);
    CHECK(row_obs <= 1e-7);
    CHECK(row_reward <= 1e-7);
    CHECK(row_ws <= 1e-6);
    CHECK(res.terminated == gym_terminated);
    CHECK(s.unstable_steps == 0u);
    max_state = std::max(max_state, row_state);
    max_ws = std::max(max_ws, row_ws);
    max_obs = std::max(max_obs, row_obs);
    max_reward = std::max(max_reward, row_reward);
    terminated += gym_terminated;
    beyond_range += scale > 1;
  }
  std::printf("%s one step from %zu recorded states (%zu with actions beyond ctrlrange, %zu terminated): max error "
              "qpos/qvel %.3g, qacc_warmstart %.3g, obs %.3g, reward %.3g\n",
              TestType::id, g.rows, beyond_range, terminated, max_state, max_ws, max_obs, max_reward);
}

// ---- the first 100 steps of recorded episodes, through vec_env ---------------------------------

TEMPLATE_TEST_CASE("Gymnasium episodes replayed from the same resets with the same actions: 100 steps within 1e-9",
                   "[mujoco][envs][reference]", hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  using Env = typename TestType::template env<double>;
  constexpr int nobs = Env::observation_size;
  const f64_table episodes(file_of(TestType::stem, "episodes"));
  const f64_table steps(file_of(TestType::stem, "steps"));
  REQUIRE(steps.cols == std::size_t(5 + nobs));
  std::size_t n = 0;
  for (std::size_t i = 0; i < steps.rows; ++i) n = std::max(n, std::size_t(steps.row(i)[0]) + 1);
  // index of each (episode, step) row; step -1 is the reset
  std::vector<std::vector<const double*>> rows(n);
  for (std::size_t i = 0; i < steps.rows; ++i) rows[std::size_t(steps.row(i)[0])].push_back(steps.row(i));

  vec_env<Env, backend_t> envs(rlk_test::backend(), n, 1);
  envs.set_states(reset_states<Env>(episodes, n));
  {
    const auto obs = envs.observations().to_host();
    for (std::size_t e = 0; e < n; ++e) {
      REQUIRE(rows[e][0][1] == -1);
      for (int k = 0; k < nobs; ++k) REQUIRE(obs[e * nobs + k] == rows[e][0][5 + k]);  // a copy of qpos, qvel
    }
  }
  std::vector<bool> alive(n, true);
  double max_obs = 0, max_reward = 0;
  std::size_t compared = 0, ends = 0;
  for (std::uint64_t t = 0; t < 100; ++t) {
    envs.step(rlk_test::make(actions_at<Env>(TestType::code, n, t)).cview());
    const auto obs = envs.final_observations().to_host();
    const auto rewards = envs.rewards().to_host();
    const auto term = envs.terminated().to_host();
    const auto trunc = envs.truncated().to_host();
    for (std::size_t e = 0; e < n; ++e) {
      if (!alive[e] || rows[e].size() <= t + 1) continue;
      const double* r = rows[e][t + 1];
      REQUIRE(r[1] == double(t));
      INFO(TestType::id << " episode " << e << " step " << t);
      double row_obs = 0;
      for (int k = 0; k < nobs; ++k) row_obs = std::max(row_obs, rel_error(obs[e * nobs + k], r[5 + k]));
      const double row_reward = rel_error(rewards[e], r[2]);  // not exact: the BLAS's bits (above)
      CHECK(row_obs <= 1e-9);
      CHECK(row_reward <= 1e-9);
      CHECK(bool(term[e]) == (r[3] != 0));
      CHECK(bool(trunc[e]) == (r[4] != 0));
      max_obs = std::max(max_obs, row_obs);
      max_reward = std::max(max_reward, row_reward);
      ++compared;
      if (r[3] != 0 || r[4] != 0) {
        alive[e] = false;
        ++ends;
      }
    }
  }
  CHECK(unstable_steps(envs) == 0u);
  std::printf("%s: %zu episodes, %zu steps compared (%zu episode ends): max error obs %.3g, reward %.3g\n",
              TestType::id, n, compared, ends, max_obs, max_reward);
}

// ---- whole episodes: lengths and returns -------------------------------------------------------

TEMPLATE_TEST_CASE("Gymnasium episodes replayed whole: the same length in >= 99% of them, close returns",
                   "[mujoco][envs][reference]", hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  using Env = typename TestType::template env<double>;
  const f64_table episodes(file_of(TestType::stem, "episodes"));
  const std::size_t n = rlk_test::sanitized_length(episodes.rows);  // the first quarter under the sanitizers
  auto resets = rlk_test::make(reset_states<Env>(episodes, n));
  auto lengths = rlk_test::zeros<std::int32_t>(n);
  auto returns = rlk_test::zeros<double>(n);
  auto unstable = rlk_test::zeros<std::uint32_t>(n);
  for_each_index(rlk_test::backend(), n,
                 episode_kernel<Env>{typename Env::Params{}, TestType::code, resets.data(), lengths.data(),
                                     returns.data(), unstable.data()});
  const auto len = lengths.to_host();
  const auto ret = returns.to_host();
  const auto bad = unstable.to_host();
  std::size_t same = 0, close = 0, terminated_match = 0;
  double max_same_len_return = 0, sum_return = 0, sum_gym_return = 0;
  std::vector<double> return_errors;
  for (std::size_t i = 0; i < n; ++i) {
    const double* r = episodes.row(i);
    CHECK(bad[i] == 0u);
    const bool same_length = len[i] == std::int32_t(r[1]);
    same += same_length;
    terminated_match += (len[i] < typename Env::Params{}.max_episode_steps) == (r[3] != 0);
    const double err = std::abs(ret[i] - r[2]) / std::max(1.0, std::abs(r[2]));
    return_errors.push_back(err);
    if (same_length) max_same_len_return = std::max(max_same_len_return, err);
    close += err <= 1e-6;
    sum_return += ret[i];
    sum_gym_return += r[2];
  }
  std::sort(return_errors.begin(), return_errors.end());
  const double fraction = double(same) / double(n);
  std::printf("%s: %zu whole episodes, the same length in %.4f of them; return relative error median %.3g, max %.3g "
              "(%.4f within 1e-6); mean return %.6g (Gymnasium %.6g)\n",
              TestType::id, n, fraction, return_errors[n / 2], return_errors.back(), double(close) / double(n),
              sum_return / double(n), sum_gym_return / double(n));
  CHECK(fraction >= 0.99);
  CHECK(terminated_match == n);
  // Episodes that end at the same step followed the same trajectory to the end: their returns agree
  // to the per-step accuracy (HalfCheetah runs 1000 steps, where chaos separates the trajectories,
  // so only the mean is compared there).
  if (TestType::terminates) {
    CHECK(double(close) / double(n) >= 0.99);
  } else {
    CHECK(std::abs(sum_return - sum_gym_return) / double(n) <= 0.05 * std::max(1.0, std::abs(sum_gym_return) / double(n)));
  }
}

// ---- backends, float, fuzzing -------------------------------------------------------------------

#if defined(RLK_BACKEND_OPENMP)
TEMPLATE_TEST_CASE("the serial and OpenMP backends step the MuJoCo envs bit for bit", "[mujoco][envs][determinism]",
                   hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  auto run = [](auto scalar_tag) {
    using Env = typename TestType::template env<decltype(scalar_tag)>;
    const std::size_t n = 67;
    vec_env<Env, serial_backend> a(serial, n, 3);
    vec_env<Env, openmp_backend> b(openmp_backend{2, 0}, n, 3);
    REQUIRE(a.observations().to_host() == b.observations().to_host());
    for (std::uint64_t t = 0; t < 150; ++t) {
      const auto actions = actions_at<Env>(TestType::code, n, t, 5000);
      a.step(view<const typename Env::scalar_type>(actions.data(), actions.size()));
      b.step(view<const typename Env::scalar_type>(actions.data(), actions.size()));
      require_same_step_outputs(a, b);
    }
    const auto sa = a.get_episode_statistics(), sb = b.get_episode_statistics();
    CHECK(sa.count == sb.count);
    CHECK(sa.mean_return == sb.mean_return);
    if (TestType::terminates) CHECK(sa.count > 0);
  };
  run(double{});
  run(float{});
}
#endif

TEMPLATE_TEST_CASE("float envs stay close to the double envs over a few steps", "[mujoco][envs][float]", hopper_spec,
                   walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  using Ed = typename TestType::template env<double>;
  using Ef = typename TestType::template env<float>;
  constexpr int nobs = Ed::observation_size;
  const f64_table episodes(file_of(TestType::stem, "episodes"));
  const std::size_t n = std::min<std::size_t>(64, episodes.rows);
  // The double env starts from the float-rounded resets, so both start from the same state.
  std::vector<typename Ef::State> sf = reset_states<Ef>(episodes, n);
  std::vector<typename Ed::State> sd(n);
  for (std::size_t i = 0; i < n; ++i) sd[i] = make_state<Ed>(sf[i].qpos, sf[i].qvel, sf[i].qacc_warmstart);
  vec_env<Ed, backend_t> d(rlk_test::backend(), n, 1);
  vec_env<Ef, backend_t> f(rlk_test::backend(), n, 1);
  d.set_states(sd);
  f.set_states(sf);
  std::vector<bool> alive(n, true);
  double max_obs = 0, max_reward = 0;
  constexpr int steps = 5;
  double per_step[steps];
  for (int t = 0; t < steps; ++t) {
    const auto ad = actions_at<Ed>(TestType::code, n, std::uint64_t(t));
    const auto af = actions_at<Ef>(TestType::code, n, std::uint64_t(t));
    d.step(rlk_test::make(ad).cview());
    f.step(rlk_test::make(af).cview());
    const auto od = d.final_observations().to_host();
    const auto of = f.final_observations().to_host();
    const auto rd = d.rewards().to_host();
    const auto rf = f.rewards().to_host();
    const auto td = d.terminated().to_host();
    const auto tf = f.terminated().to_host();
    double step_obs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!alive[i]) continue;
      for (int k = 0; k < nobs; ++k) step_obs = std::max(step_obs, rel_error(of[i * nobs + k], od[i * nobs + k]));
      max_reward = std::max(max_reward, rel_error(rf[i], rd[i]));
      if (td[i] || tf[i]) alive[i] = false;
    }
    max_obs = std::max(max_obs, step_obs);
    per_step[t] = step_obs;
  }
  std::printf("%s float vs double, %zu envs x %d steps: max error obs %.3g (per step %.2g %.2g %.2g %.2g %.2g), "
              "reward %.3g\n", TestType::id, n, steps, max_obs, per_step[0], per_step[1], per_step[2], per_step[3],
              per_step[4], max_reward);
  // Float rounding moves the instant a contact activates, after which the trajectories differ at
  // the 1e-3 level (HalfCheetah, step 5: 1.4e-3); smooth stretches stay near 1e-5.
  CHECK(max_obs <= 5e-3);
  CHECK(max_reward <= 1e-3);

  // One float step from each recorded state (rounded to float) against Gymnasium's double step.
  const f64_table g(file_of(TestType::stem, "one_step"));
  constexpr int nq = Ed::nq, nv = Ed::nv;
  const typename Ef::Params pf{};
  double one_obs = 0, one_reward = 0;
  std::size_t flag_mismatch = 0;
  for (std::size_t i = 0; i < g.rows; ++i) {
    const double* r = g.row(i);
    const double* pre = r + 3;
    const double* gym_obs = pre + nq + 2 * nv + 2 + nq + 2 * nv;
    typename Ef::State st = make_state<Ef>(pre, pre + nq, pre + nq + nv);
    float a[Ef::nu];
    for (int k = 0; k < Ef::nu; ++k)
      a[k] = float(r[2] * hash_action(TestType::code, std::uint64_t(r[0]), std::uint64_t(r[1]), k));
    rng gen(0, 0);
    const step_result<float> res = Ef::step(pf, st, a, gen);
    float obs[nobs];
    Ef::observe(pf, st, obs);
    for (int k = 0; k < nobs; ++k) one_obs = std::max(one_obs, rel_error(obs[k], gym_obs[k]));
    one_reward = std::max(one_reward, rel_error(res.reward, pre[nq + 2 * nv]));
    flag_mismatch += res.terminated != (pre[nq + 2 * nv + 1] != 0);
    CHECK(st.unstable_steps == 0u);
  }
  std::printf("%s float, one step from %zu recorded states against Gymnasium: max error obs %.3g, reward %.3g, "
              "%zu terminated flags differ\n", TestType::id, g.rows, one_obs, one_reward, flag_mismatch);
  CHECK(one_obs <= 1e-3);
  CHECK(one_reward <= 1e-3);
}

namespace {

/// Fuzz actions: uniform in [-1, 1], bang-bang at the bounds, slightly beyond, far beyond, above
/// MuJoCo's 1e10 "bad control" bound (clamped before that check), the largest finite value and
/// infinities (never NaN).
template <class S>
struct fuzz_actions {
  std::uint64_t t;
  S* actions;
  int width;
  S largest = std::numeric_limits<S>::max();        // set on the host (numeric_limits is host-only in CUDA)
  S infinity = std::numeric_limits<S>::infinity();
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(99, i, t);
    const std::uint32_t mode = gen.uniform_int(8);
    for (int k = 0; k < width; ++k) {
      const S u = gen.template uniform<S>(S(-1), S(1));
      const S sign = u < 0 ? S(-1) : S(1);
      S a = u;
      switch (mode) {
        case 0: case 1: case 2: a = u; break;
        case 3: a = sign; break;
        case 4: a = S(3) * u; break;
        case 5: a = S(1e6) * u; break;
        case 6: a = sign * S(1e11); break;
        default: a = gen.uniform_int(2) ? sign * largest : sign * infinity;
      }
      actions[i * std::size_t(width) + std::size_t(k)] = a;
    }
  }
};

}  // namespace

TEMPLATE_TEST_CASE("fuzzing with extreme actions never yields a NaN observation or reward", "[mujoco][envs][fuzz]",
                   hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  auto run = [](auto scalar_tag) {
    using S = decltype(scalar_tag);
    using Env = typename TestType::template env<S>;
    const std::size_t n = 48;
    vec_env<Env, backend_t> envs(rlk_test::backend(), n, 11);
    auto actions = rlk_test::zeros<S>(n * Env::nu);
    std::size_t ends = 0;
    const std::size_t steps = rlk_test::sanitized_length(std::size_t(TestType::fuzz_steps));
    for (std::uint64_t t = 0; t < steps; ++t) {
      for_each_index(rlk_test::backend(), n, fuzz_actions<S>{t, actions.data(), Env::nu});
      envs.step(actions.cview());
      const auto obs = envs.observations().to_host();
      const auto fin = envs.final_observations().to_host();
      const auto rew = envs.rewards().to_host();
      const auto term = envs.terminated().to_host();
      const auto trunc = envs.truncated().to_host();
      bool finite = true, no_nan = true;
      for (std::size_t k = 0; k < obs.size(); ++k) finite &= std::isfinite(obs[k]) && std::isfinite(fin[k]);
      for (std::size_t i = 0; i < n; ++i) {
        no_nan &= !std::isnan(rew[i]);  // -inf where the raw action's square overflows (the control cost)
        ends += term[i] || trunc[i];
      }
      INFO(TestType::id << " step " << t);
      REQUIRE(finite);
      REQUIRE(no_nan);
    }
    std::printf("%s<%s> fuzz: %zu envs x %zu steps, %zu episode ends, %llu unstable steps\n", TestType::id,
                sizeof(S) == 4 ? "float" : "double", n, steps, ends, (unsigned long long)unstable_steps(envs));
    // (HumanoidStandup never terminates and 300 steps stay below its time limit, as do HalfCheetah's
    // 300 steps under the sanitizers)
    if (TestType::terminates || steps > 1000) CHECK(ends > 0);
    CHECK(capacity_overflows(envs) == 0u);
  };
  run(double{});
  run(float{});
}

namespace {

// What a failed step pays: the control cost of the action it was given (as the step would have),
// for the envs with one (ctrl_cost_weight or reward_control_weight); 0 for the inverted pendulums.
template <class P, class = void>
struct has_ctrl_cost_weight : std::false_type {};
template <class P>
struct has_ctrl_cost_weight<P, decltype(void(std::declval<P&>().ctrl_cost_weight))> : std::true_type {};
template <class P, class = void>
struct has_reward_control_weight : std::false_type {};
template <class P>
struct has_reward_control_weight<P, decltype(void(std::declval<P&>().reward_control_weight))> : std::true_type {};
template <class I, class = void>
struct has_x_position : std::false_type {};
template <class I>
struct has_x_position<I, decltype(void(std::declval<I&>().x_position))> : std::true_type {};

template <class I, class = void>
struct has_reward_ctrl : std::false_type {};
template <class I>
struct has_reward_ctrl<I, decltype(void(std::declval<I&>().reward_ctrl))> : std::true_type {};
template <class I, class = void>
struct has_reward_quadctrl : std::false_type {};
template <class I>
struct has_reward_quadctrl<I, decltype(void(std::declval<I&>().reward_quadctrl))> : std::true_type {};

template <class Env>
double failed_step_reward(const typename Env::Params& p, double sum_of_squares) {
  if constexpr (has_ctrl_cost_weight<typename Env::Params>::value) return -(p.ctrl_cost_weight * sum_of_squares);
  if constexpr (has_reward_control_weight<typename Env::Params>::value)
    return -(sum_of_squares * p.reward_control_weight);
  return 0.0;
}

}  // namespace

TEMPLATE_TEST_CASE("a step the engine flags ends the episode as truncated, keeps the state and is counted",
                   "[mujoco][envs][unstable]", hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec, humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  using Env = typename TestType::template env<double>;
  constexpr int nobs = Env::observation_size;
  const std::size_t n = 6;
  vec_env<Env, backend_t> envs(rlk_test::backend(), n, 2);
  CHECK(unstable_steps(envs) == 0u);
  std::vector<typename Env::State> states = envs.states().to_host();
  // Envs 1 and 4: a velocity above MuJoCo's 1e10 bound (mj_checkVel flags it at the first frame).
  states[1].qvel[0] = 1e11;
  states[4].qvel[Env::nv - 1] = -3e10;
  envs.set_states(states);
  const auto before = envs.observations().to_host();
  std::vector<double> zero(n * Env::nu, 0.0);

  // The env itself: the step is not taken (the state is the one before it, the failure counted)
  // and it ends the episode as truncated, not terminated: the engine failed, the robot did not.
  {
    const typename Env::Params p{};
    typename Env::State s = states[1];
    rng gen(0, 0);
    const step_result<double> r = Env::step(p, s, zero.data(), gen);
    CHECK_FALSE(r.terminated);
    CHECK(r.truncated);
    CHECK(r.reward == 0.0);
    double obs[nobs];
    Env::observe(p, s, obs);
    for (int k = 0; k < nobs; ++k) CHECK(obs[k] == before[1 * nobs + k]);
    CHECK(s.unstable_steps == 1u);
    CHECK(s.capacity_overflows == 0u);
    // With a non-zero action, the failed step pays the action's control cost, as Gymnasium's step
    // would have, and its info holds that term and the kept state's position.
    {
      typename Env::State f = states[1];
      typename Env::step_info info;
      double half[Env::nu];
      for (int k = 0; k < Env::nu; ++k) half[k] = k % 2 ? 0.5 : -0.5;
      const step_result<double> rf = Env::step_with_info(p, f, half, info);
      CHECK(rf.truncated);
      CHECK_FALSE(rf.terminated);
      const double expected = failed_step_reward<Env>(p, 0.25 * Env::nu);
      CHECK(rf.reward == expected);
      if constexpr (has_ctrl_cost_weight<typename Env::Params>::value) CHECK(expected < 0.0);
      if constexpr (has_x_position<typename Env::step_info>::value) CHECK(info.x_position == f.qpos[0]);
      if constexpr (has_reward_ctrl<typename Env::step_info>::value) CHECK(info.reward_ctrl == expected);
      if constexpr (has_reward_quadctrl<typename Env::step_info>::value) CHECK(info.reward_quadctrl == expected);
    }
    // A step the engine takes leaves truncated false (the vec_env's time limit is its own).
    typename Env::State ok = states[0];
    const step_result<double> r0 = Env::step(p, ok, zero.data(), gen);
    CHECK_FALSE(r0.truncated);
  }

  envs.step(rlk_test::make(zero).cview());
  const auto term = envs.terminated().to_host();
  const auto trunc = envs.truncated().to_host();
  const auto fin = envs.final_observations().to_host();
  const auto next = envs.observations().to_host();
  const auto rew = envs.rewards().to_host();
  const auto lengths = envs.episode_lengths().to_host();
  for (std::size_t i = 0; i < n; ++i) {
    const bool flagged = i == 1 || i == 4;
    INFO("env " << i);
    if (flagged) {
      CHECK(term[i] == 0);   // not a terminal state: a learner bootstraps from V(final observation)
      CHECK(trunc[i] == 1);
      CHECK(rew[i] == 0.0);  // no progress, no survival reward, zero control cost
      // The final observation is the state before the failed step (finite), not what the engine produced.
      for (int k = 0; k < nobs; ++k) CHECK(fin[i * nobs + k] == before[i * nobs + k]);
      // ... and the env has reset: a new episode starts from a reset state
      CHECK(lengths[i] == 0);
      bool reset = false;
      for (int k = 0; k < nobs; ++k) reset |= next[i * nobs + k] != before[i * nobs + k];
      CHECK(reset);
    } else {
      CHECK(trunc[i] == 0);
      CHECK(lengths[i] == 1);
    }
  }
  // The two episodes are counted as completed, once each.
  const episode_statistics stats = envs.get_episode_statistics();
  CHECK(stats.count == 2u);
  CHECK(stats.mean_length == 1.0);
  CHECK(stats.mean_return == 0.0);
  CHECK(unstable_steps(envs) == 2u);
  CHECK(capacity_overflows(envs) == 0u);
  // The count survives the automatic reset and further steps, until vec_env::reset().
  for (int t = 0; t < 3; ++t) envs.step(rlk_test::make(zero).cview());
  CHECK(unstable_steps(envs) == 2u);
  const auto after = envs.states().to_host();
  CHECK(after[1].unstable_steps == 1u);
  CHECK(after[0].unstable_steps == 0u);
  envs.reset();
  CHECK(unstable_steps(envs) == 0u);
}

// ---- the env itself: spaces, Params, reset, reward terms -----------------------------------------

TEMPLATE_TEST_CASE("the MuJoCo envs' spaces, defaults, reset noise and reward terms", "[mujoco][envs]", hopper_spec,
                   walker2d_spec, half_cheetah_spec) {
  using Env = typename TestType::template env<double>;
  static_assert(check_env<Env>());
  static_assert(check_env<typename TestType::template env<float>>());
  const typename Env::Params p{};
  for (int k = 0; k < Env::nu; ++k) {  // the action space is the actuators' ctrlrange
    CHECK(p.model.actuator_ctrlrange[k][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[k][1] == Env::action_high);
    CHECK(p.model.actuator_ctrllimited[k] == 1);
  }
  CHECK(p.max_episode_steps == 1000);
  // Reset: qpos0 + noise within the scale, qacc_warmstart zero, unstable_steps kept.
  typename Env::State s{};
  s.unstable_steps = 7;
  rng gen(5, 0);
  double max_noise = 0;
  for (int r = 0; r < 200; ++r) {
    Env::reset(p, s, gen);
    for (int i = 0; i < Env::nq; ++i) {
      const double noise = s.qpos[i] - p.model.qpos0[i];
      CHECK(std::abs(noise) <= p.reset_noise_scale);
      max_noise = std::max(max_noise, std::abs(noise));
    }
    for (int i = 0; i < Env::nv; ++i) CHECK(s.qacc_warmstart[i] == 0.0);
    if (TestType::terminates)
      for (int i = 0; i < Env::nv; ++i) CHECK(std::abs(s.qvel[i]) <= p.reset_noise_scale);
  }
  CHECK(max_noise > 0.9 * p.reset_noise_scale);
  CHECK(s.unstable_steps == 7u);
  // The reward is the sum of its terms, computed on the raw action (an action beyond ctrlrange
  // costs its full square).
  Env::reset(p, s, gen);
  typename Env::step_info info;
  double a[Env::nu];
  for (int k = 0; k < Env::nu; ++k) a[k] = 2.0 * (k % 2 ? 1 : -1);
  const double x0 = s.qpos[0];
  const step_result<double> r = Env::step_with_info(p, s, a, info);
  CHECK(info.reward_ctrl == -p.ctrl_cost_weight * 4.0 * Env::nu);
  CHECK(info.x_position == s.qpos[0]);
  CHECK(info.x_velocity == (s.qpos[0] - x0) / (p.model.timestep * p.frame_skip));
  double sum = info.reward_forward + info.reward_ctrl;
  if constexpr (TestType::terminates) sum = (info.reward_forward + info.reward_survive) + info.reward_ctrl;
  CHECK(r.reward == sum);
  // The observation: qpos[1:], then qvel (clipped to [-10, 10] for Hopper and Walker2d).
  s.qvel[0] = 25;
  s.qvel[1] = -40;
  double obs[Env::observation_size];
  Env::observe(p, s, obs);
  CHECK(obs[0] == s.qpos[1]);
  CHECK(obs[Env::nq - 1] == (TestType::terminates ? 10.0 : 25.0));
  CHECK(obs[Env::nq] == (TestType::terminates ? -10.0 : -40.0));
  using Full = typename TestType::template env_with_x<double>;
  static_assert(Full::observation_size == Env::observation_size + 1);
  double full[Full::observation_size];
  Full::observe(typename Full::Params{}, s, full);
  CHECK(full[0] == s.qpos[0]);
}

TEST_CASE("Swimmer's spaces, defaults, reset noise, observations and reward terms", "[mujoco][envs]") {
  using Env = swimmer<double>;
  static_assert(check_env<Env>() && check_env<swimmer<float>>());
  const Env::Params p{};
  for (int k = 0; k < Env::nu; ++k) {
    CHECK(p.model.actuator_ctrlrange[k][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[k][1] == Env::action_high);
  }
  CHECK(p.frame_skip == 4);
  CHECK(p.model.timestep == 0.01);
  CHECK(p.model.density == 4000.0);
  CHECK(p.model.viscosity == 0.1);
  CHECK(p.ctrl_cost_weight == 1e-4);
  CHECK(p.max_episode_steps == 1000);
  // Reset: U(-0.1, 0.1) on qpos and on qvel (uniform, not normal: no value beyond the scale).
  Env::State s{};
  rng gen(6, 0);
  double max_q = 0, max_v = 0;
  for (int r = 0; r < 300; ++r) {
    Env::reset(p, s, gen);
    for (int i = 0; i < Env::nq; ++i) max_q = std::max(max_q, std::abs(s.qpos[i] - p.model.qpos0[i]));
    for (int i = 0; i < Env::nv; ++i) max_v = std::max(max_v, std::abs(s.qvel[i]));
  }
  CHECK(max_q <= p.reset_noise_scale);
  CHECK(max_v <= p.reset_noise_scale);
  CHECK(max_q > 0.9 * p.reset_noise_scale);
  CHECK(max_v > 0.9 * p.reset_noise_scale);
  // The reward: x velocity minus the control cost of the raw action; never terminated.
  Env::reset(p, s, gen);
  Env::step_info info;
  const double a[2] = {2.0, -0.5};
  const double x0 = s.qpos[0], y0 = s.qpos[1];
  const step_result<double> r = Env::step_with_info(p, s, a, info);
  CHECK_FALSE(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(info.reward_ctrl == -(1e-4 * (4.0 + 0.25)));
  CHECK(info.x_velocity == (s.qpos[0] - x0) / 0.04);
  CHECK(info.y_velocity == (s.qpos[1] - y0) / 0.04);
  CHECK(info.x_position == s.qpos[0]);
  CHECK(info.y_position == s.qpos[1]);
  CHECK(r.reward == info.reward_forward + info.reward_ctrl);
  // The observation: qpos[2:], then qvel; with the positions, all of qpos.
  double obs[Env::observation_size];
  static_assert(Env::observation_size == 8);
  Env::observe(p, s, obs);
  for (int i = 2; i < Env::nq; ++i) CHECK(obs[i - 2] == s.qpos[i]);
  for (int i = 0; i < Env::nv; ++i) CHECK(obs[Env::nq - 2 + i] == s.qvel[i]);
  using Full = swimmer<double, false>;
  static_assert(Full::observation_size == 10);
  double full[Full::observation_size];
  Full::observe(Full::Params{}, s, full);
  CHECK(full[0] == s.qpos[0]);
  CHECK(full[1] == s.qpos[1]);
  // The medium acts: the same state and action without fluid forces gives another step.
  Env::Params dry = p;
  dry.model.density = 0;
  dry.model.viscosity = 0;
  Env::State s1{}, s2{};
  Env::reset(p, s1, gen);
  s2 = s1;
  Env::step_with_info(p, s1, a, info);
  Env::step_with_info(dry, s2, a, info);
  CHECK(s1.qvel[0] != s2.qvel[0]);
}

TEST_CASE("Reacher's spaces, defaults, reset distribution, observations and reward terms", "[mujoco][envs]") {
  using Env = reacher<double>;
  static_assert(check_env<Env>() && check_env<reacher<float>>());
  static_assert(Env::observation_size == 10 && Env::nu == 2 && Env::nq == 4);
  const Env::Params p{};
  for (int k = 0; k < Env::nu; ++k) {
    CHECK(p.model.actuator_ctrlrange[k][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[k][1] == Env::action_high);
  }
  CHECK(p.frame_skip == 2);
  CHECK(p.model.timestep == 0.01);
  CHECK(p.reward_dist_weight == 1.0);
  CHECK(p.reward_control_weight == 1.0);
  CHECK(p.max_episode_steps == 50);
  // Reset: the arm within 0.1 of qpos0 moving at most 0.005, the target in the disc of radius 0.2
  // (uniform over it: a quarter of the draws in the inner half radius) and at rest.
  Env::State s{};
  rng gen(7, 0);
  double max_q = 0, max_v = 0, max_goal = 0;
  int inner = 0;
  const int resets = 4000;
  for (int r = 0; r < resets; ++r) {
    Env::reset(p, s, gen);
    for (int i = 0; i < 2; ++i) max_q = std::max(max_q, std::abs(s.qpos[i] - p.model.qpos0[i]));
    for (int i = 0; i < 2; ++i) max_v = std::max(max_v, std::abs(s.qvel[i]));
    CHECK(s.qvel[2] == 0.0);
    CHECK(s.qvel[3] == 0.0);
    const double g = std::hypot(s.qpos[2], s.qpos[3]);
    max_goal = std::max(max_goal, g);
    inner += g < 0.1;
  }
  CHECK(max_q <= 0.1);
  CHECK(max_q > 0.09);
  CHECK(max_v <= 0.005);
  CHECK(max_v > 0.0045);
  CHECK(max_goal < 0.2);
  CHECK(max_goal > 0.19);
  CHECK(std::abs(double(inner) / resets - 0.25) < 0.03);
  // The observation: cos and sin of the arm's angles, the target, the arm's velocities, and
  // fingertip - target in the plane, from the bodies' frames.
  Env::reset(p, s, gen);
  double obs[Env::observation_size];
  Env::observe(p, s, obs);
  CHECK(obs[0] == std::cos(s.qpos[0]));
  CHECK(obs[1] == std::cos(s.qpos[1]));
  CHECK(obs[2] == std::sin(s.qpos[0]));
  CHECK(obs[3] == std::sin(s.qpos[1]));
  CHECK(obs[4] == s.qpos[2]);
  CHECK(obs[5] == s.qpos[3]);
  CHECK(obs[6] == s.qvel[0]);
  CHECK(obs[7] == s.qvel[1]);
  // the fingertip 0.21 from the shoulder at angle q0 + q1 after the first link's 0.1 at q0; the
  // target at its slides' positions (measured from their ref 0.1, -0.1 to the body at (0.1, -0.1))
  const double tip_x = 0.1 * std::cos(s.qpos[0]) + 0.11 * std::cos(s.qpos[0] + s.qpos[1]);
  const double tip_y = 0.1 * std::sin(s.qpos[0]) + 0.11 * std::sin(s.qpos[0] + s.qpos[1]);
  CHECK(std::abs(obs[8] - (tip_x - s.qpos[2])) < 1e-12);
  CHECK(std::abs(obs[9] - (tip_y - s.qpos[3])) < 1e-12);
  CHECK(s.vec[2] == 0.0);
  // The reward: minus the distance (from the last physics step's frames) minus the control cost of
  // the raw action; never terminated.
  Env::step_info info;
  const double a[2] = {2.0, -0.5};
  const step_result<double> r = Env::step_with_info(p, s, a, info);
  CHECK_FALSE(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(info.reward_ctrl == -(4.0 + 0.25));
  CHECK(info.reward_dist == -std::sqrt(s.vec[0] * s.vec[0] + s.vec[1] * s.vec[1] + s.vec[2] * s.vec[2]));
  CHECK(r.reward == info.reward_dist + info.reward_ctrl);
  // vec is the last forward pass's (before that step's integration), not the end state's frames
  Env::State fresh = s;
  Env::set_state(p, fresh, s.qpos, s.qvel);
  CHECK(fresh.vec[0] != s.vec[0]);
  // The weights scale their terms.
  Env::Params w = p;
  w.reward_dist_weight = 3;
  w.reward_control_weight = 0.5;
  Env::State s2 = fresh;
  Env::State s3 = fresh;
  Env::step_info i2, i3;
  Env::step_with_info(p, s2, a, i2);
  Env::step_with_info(w, s3, a, i3);
  CHECK(i3.reward_dist == 3 * i2.reward_dist);
  CHECK(i3.reward_ctrl == 0.5 * i2.reward_ctrl);
}

TEST_CASE("Pusher's spaces, defaults, reset distribution, observations and reward terms", "[mujoco][envs]") {
  using Env = pusher<double>;
  static_assert(check_env<Env>() && check_env<pusher<float>>());
  static_assert(Env::observation_size == 23 && Env::nu == 7 && Env::nq == 11);
  const Env::Params p{};
  for (int k = 0; k < Env::nu; ++k) {
    CHECK(p.model.actuator_ctrlrange[k][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[k][1] == Env::action_high);
  }
  CHECK(p.frame_skip == 5);
  CHECK(p.model.timestep == 0.01);
  CHECK(p.reward_near_weight == 0.5);
  CHECK(p.reward_dist_weight == 1.0);
  CHECK(p.reward_control_weight == 0.1);
  CHECK(p.max_episode_steps == 100);
  // Reset: the arm at 0 moving at most 0.005; the object uniform over its box less the disc of
  // radius 0.17 around the goal, at rest; the goal at 0.
  Env::State s{};
  rng gen(7, 0);
  double max_q = 0, max_v = 0, min_obj = 1, lo[2] = {1, 1}, hi[2] = {-1, -1};
  const int resets = 4000;
  for (int r = 0; r < resets; ++r) {
    Env::reset(p, s, gen);
    for (int i = 0; i < 7; ++i) max_q = std::max(max_q, std::abs(s.qpos[i]));
    for (int i = 0; i < 7; ++i) max_v = std::max(max_v, std::abs(s.qvel[i]));
    for (int i = 7; i < 11; ++i) CHECK(s.qvel[i] == 0.0);
    CHECK(s.qpos[9] == 0.0);
    CHECK(s.qpos[10] == 0.0);
    min_obj = std::min(min_obj, std::hypot(s.qpos[7], s.qpos[8]));
    for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], s.qpos[7 + k]), hi[k] = std::max(hi[k], s.qpos[7 + k]);
  }
  CHECK(max_q == 0.0);
  CHECK(max_v <= 0.005);
  CHECK(max_v > 0.0045);
  CHECK(min_obj > 0.17);
  CHECK(min_obj < 0.175);
  CHECK(lo[0] >= -0.3);
  CHECK(lo[0] < -0.29);
  CHECK(hi[0] <= 0.0);
  CHECK(hi[0] > -0.01);
  CHECK(lo[1] >= -0.2);
  CHECK(lo[1] < -0.19);
  CHECK(hi[1] <= 0.2);
  CHECK(hi[1] > 0.19);
  // The observation: the arm's qpos and qvel, then the fingertip, the object and the goal.
  Env::reset(p, s, gen);
  double obs[Env::observation_size];
  Env::observe(p, s, obs);
  for (int i = 0; i < 7; ++i) CHECK(obs[i] == s.qpos[i]);
  for (int i = 0; i < 7; ++i) CHECK(obs[7 + i] == s.qvel[i]);
  // the object's body at (0.45, -0.05, -0.275) moved by its slides (y, then x); the goal's at
  // (0.45, -0.05, -0.323)
  CHECK(obs[17] == 0.45 + s.qpos[8]);
  CHECK(obs[18] == -0.05 + s.qpos[7]);
  CHECK(obs[19] == -0.275);
  CHECK(obs[20] == 0.45);
  CHECK(obs[21] == -0.05);
  CHECK(obs[22] == -0.323);
  // The reward: the three terms from the last physics step's frames; never terminated.
  Env::step_info info;
  const double a[7] = {3.0, -0.5, 0, 0, 0, 0, 1};
  const step_result<double> r = Env::step_with_info(p, s, a, info);
  CHECK_FALSE(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(info.reward_ctrl == -((9.0 + 0.25 + 1.0) * 0.1));
  auto dist = [](const double* x, const double* y) {
    const double d[3] = {x[0] - y[0], x[1] - y[1], x[2] - y[2]};
    return std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  };
  CHECK(info.reward_near == -(dist(s.xpos[1], s.xpos[0]) * 0.5));
  CHECK(info.reward_dist == -dist(s.xpos[1], s.xpos[2]));
  CHECK(r.reward == info.reward_dist + info.reward_ctrl + info.reward_near);
  // the positions are the last forward pass's (before that step's integration)
  Env::State fresh = s;
  Env::set_state(p, fresh, s.qpos, s.qvel);
  CHECK(fresh.xpos[0][0] != s.xpos[0][0]);
  // The weights scale their terms.
  Env::Params w = p;
  w.reward_near_weight = 2;
  w.reward_dist_weight = 3;
  w.reward_control_weight = 0.5;
  Env::State s2 = fresh;
  Env::State s3 = fresh;
  Env::step_info i2, i3;
  Env::step_with_info(p, s2, a, i2);
  Env::step_with_info(w, s3, a, i3);
  CHECK(i3.reward_near == 4 * i2.reward_near);
  CHECK(i3.reward_dist == 3 * i2.reward_dist);
  CHECK(i3.reward_ctrl == -((9.0 + 0.25 + 1.0) * 0.5));
  CHECK(i2.reward_ctrl == info.reward_ctrl);
}

// ---- the generic env: mujoco_env<Task> -------------------------------------------------------------


namespace {

/// Steps bundled env A and its task version B side by side from the same seed and actions, through
/// auto-resets: the same bits in every array.
template <class A, class B>
void check_task_gives_the_bits_of() {
  static_assert(check_env<B>());
  static_assert(B::observation_size == A::observation_size && B::action_size == A::action_size);
  const std::size_t n = 24;
  vec_env<A, backend_t> a(rlk_test::backend(), n, 42);
  vec_env<B, backend_t> b(rlk_test::backend(), n, 42);
  REQUIRE(a.observations().to_host() == b.observations().to_host());
  for (std::uint64_t t = 0; t < 1100; ++t) {  // past the time limit: the auto-reset too
    const auto actions = actions_at<A>(9, n, t, 7000);
    a.step(rlk_test::make(actions).cview());
    b.step(rlk_test::make(actions).cview());
    require_same_step_outputs(a, b);
  }
  const auto sa = a.get_episode_statistics(), sb = b.get_episode_statistics();
  CHECK(sa.count == sb.count);
  CHECK(sa.mean_return == sb.mean_return);
}

}  // namespace

TEST_CASE("mujoco_env<Task>: Swimmer-v5 and Hopper-v5 as tasks give their bits; the example robot is an env",
          "[mujoco][envs][task]") {
  check_task_gives_the_bits_of<hopper<double>, mujoco_env<rlk_tasks::hopper_task, double>>();
  check_task_gives_the_bits_of<swimmer<double>, mujoco_env<rlk_tasks::swimmer_task, double>>();
  static_assert(check_env<mujoco_env<rlk_tasks::swimmer_task, float>>());
  // The eleven bundled envs are this generic env with their Gymnasium tasks.
  static_assert(std::is_base_of<mujoco_env<hopper_task<>, double>, hopper<double>>::value);
  static_assert(std::is_base_of<mujoco_env<walker2d_task<>, float>, walker2d<float>>::value);
  static_assert(std::is_base_of<mujoco_env<half_cheetah_task<false>, double>, half_cheetah<double, false>>::value);
  static_assert(std::is_base_of<mujoco_env<ant_task<>, float>, ant<float>>::value);
  static_assert(std::is_base_of<mujoco_env<humanoid_task<>, float>, humanoid<float>>::value);
  static_assert(std::is_base_of<mujoco_env<humanoid_standup_task<>, float>, humanoid_standup<float>>::value);
  static_assert(std::is_base_of<mujoco_env<inverted_pendulum_task, float>, inverted_pendulum<float>>::value);
  static_assert(std::is_base_of<mujoco_env<inverted_double_pendulum_task, float>, inverted_double_pendulum<float>>::value);
  static_assert(std::is_base_of<mujoco_env<swimmer_task<>, float>, swimmer<float>>::value);
  static_assert(std::is_base_of<mujoco_env<reacher_task, float>, reacher<float>>::value);
  static_assert(std::is_base_of<mujoco_env<pusher_task, float>, pusher<float>>::value);
  {
    using Env = my_robot_env<double>;
    static_assert(check_env<Env>() && check_env<my_robot_env<float>>());
    static_assert(Env::observation_size == 27 && Env::action_size == 8);
    const Env::Params p{};
    for (int k = 0; k < Env::nu; ++k) {  // the action space is the servos' ctrlrange
      CHECK(p.model.actuator_ctrlrange[k][0] == Env::action_low);
      CHECK(p.model.actuator_ctrlrange[k][1] == Env::action_high);
    }
    // reset: qpos0 + U(-0.05, 0.05), zero warm start; the robot stands, healthy, and a standing step pays
    // the healthy reward
    Env::State s{};
    rng gen(8, 0);
    Env::reset(p, s, gen);
    for (int i = 0; i < Env::nq; ++i) CHECK(std::abs(s.qpos[i] - p.model.qpos0[i]) <= 0.05);
    const double zero[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    step_result<double> r{};
    for (int t = 0; t < 50; ++t) r = Env::step(p, s, zero, gen);
    CHECK_FALSE(r.terminated);
    CHECK(s.qpos[2] > 0.2);
    CHECK(r.reward == Approx(0.5).margin(0.05));
    // upside down: terminated
    s.qpos[3] = 0;
    s.qpos[4] = 1;  // 180 degrees about x
    r = Env::step(p, s, zero, gen);
    CHECK(r.terminated);
    // a velocity the engine cannot take: truncated, the state kept, counted
    Env::reset(p, s, gen);
    s.qvel[0] = 1e11;
    const Env::State kept = s;
    r = Env::step(p, s, zero, gen);
    CHECK(r.truncated);
    CHECK(r.reward == 0.0);
    CHECK(s.unstable_steps == 1u);
    CHECK(s.qvel[0] == kept.qvel[0]);
    // a batch through auto-resets, with actions beyond the ctrlrange, huge and infinite: finite observations
    const std::size_t n = 16;
    vec_env<Env, backend_t> envs(rlk_test::backend(), n, 3);
    std::vector<double> a(n * Env::nu);
    for (std::uint64_t t = 0; t < 400; ++t) {
      for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = t % 50 == 7 ? (i % 2 ? 1e30 : -std::numeric_limits<double>::infinity()) : 3.0 * hash_action(20, i, t, 0);
      envs.step(rlk_test::make(a).cview());
      for (double o : envs.observations().to_host()) REQUIRE(std::isfinite(o));
    }
    CHECK(capacity_overflows(envs) == 0u);
  }
}

TEST_CASE("the inverted pendulums' spaces, defaults, reset noise, observations and reward terms", "[mujoco][envs]") {
  {
    using Env = inverted_pendulum<double>;
    static_assert(check_env<Env>() && check_env<inverted_pendulum<float>>());
    const Env::Params p{};
    CHECK(p.model.actuator_ctrlrange[0][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[0][1] == Env::action_high);
    CHECK(Env::action_high == 3.0);
    CHECK(p.frame_skip == 2);
    CHECK(p.model.timestep == 0.02);
    CHECK(p.max_episode_steps == 1000);
    // Reset: U(-0.01, 0.01) on qpos and on qvel (uniform, not normal: no value beyond the scale).
    Env::State s{};
    rng gen(3, 0);
    double max_q = 0, max_v = 0;
    for (int r = 0; r < 300; ++r) {
      Env::reset(p, s, gen);
      for (int i = 0; i < Env::nq; ++i) max_q = std::max(max_q, std::abs(s.qpos[i] - p.model.qpos0[i]));
      for (int i = 0; i < Env::nv; ++i) max_v = std::max(max_v, std::abs(s.qvel[i]));
    }
    CHECK(max_q <= p.reset_noise_scale);
    CHECK(max_v <= p.reset_noise_scale);
    CHECK(max_q > 0.9 * p.reset_noise_scale);
    CHECK(max_v > 0.9 * p.reset_noise_scale);
    // Reward 1 while |angle| <= 0.2, 0 on the terminal step; the observation is qpos, qvel.
    Env::reset(p, s, gen);
    Env::step_info info;
    const double push = 0.0;
    step_result<double> r = Env::step_with_info(p, s, &push, info);
    CHECK_FALSE(r.terminated);
    CHECK(r.reward == 1.0);
    CHECK(info.reward_survive == 1.0);
    double obs[Env::observation_size];
    Env::observe(p, s, obs);
    CHECK(obs[0] == s.qpos[0]);
    CHECK(obs[1] == s.qpos[1]);
    CHECK(obs[2] == s.qvel[0]);
    CHECK(obs[3] == s.qvel[1]);
    s.qpos[1] = 0.25;  // beyond 0.2 after the step too (the pole keeps falling)
    s.qvel[1] = 1.0;
    r = Env::step_with_info(p, s, &push, info);
    CHECK(r.terminated);
    CHECK(r.reward == 0.0);
  }
  {
    using Env = inverted_double_pendulum<double>;
    static_assert(check_env<Env>() && check_env<inverted_double_pendulum<float>>());
    const Env::Params p{};
    CHECK(p.model.actuator_ctrlrange[0][0] == Env::action_low);
    CHECK(p.model.actuator_ctrlrange[0][1] == Env::action_high);
    CHECK(p.frame_skip == 5);
    CHECK(p.model.timestep == 0.01);
    CHECK(p.healthy_reward == 10.0);
    CHECK(p.max_episode_steps == 1000);
    // The site "tip" sits 0.6 above pole2's origin: upright, at x = 0 and height 1.2.
    Env::State s{};
    for (int i = 0; i < Env::nq; ++i) s.qpos[i] = 0;
    physics::data<double, Env::dims> d{};
    for (int i = 0; i < Env::nq; ++i) d.qpos[i] = s.qpos[i];
    physics::kinematics(p.model, d);
    CHECK(d.site_xpos[0][0] == Approx(0.0).margin(1e-15));
    CHECK(d.site_xpos[0][2] == Approx(1.2).epsilon(1e-15));
    // Reward terms: alive bonus, distance and velocity penalties from the tip and qvel[1:3].
    rng gen(4, 0);
    Env::reset(p, s, gen);
    Env::step_info info;
    const double push = 0.0;
    step_result<double> r = Env::step_with_info(p, s, &push, info);
    CHECK_FALSE(r.terminated);
    CHECK(info.reward_survive == 10.0);
    CHECK(info.velocity_penalty == -(1e-3 * (s.qvel[1] * s.qvel[1]) + 5e-3 * (s.qvel[2] * s.qvel[2])));
    CHECK(info.distance_penalty <= -0.8 * 0.8);  // the tip is at height 1.2 at most: (y - 2)^2 >= 0.64
    CHECK(info.distance_penalty > -1.01);        // not terminated: y > 1, and x stays near 0
    CHECK(r.reward == (info.reward_survive + info.distance_penalty) + info.velocity_penalty);
    // The observation: x, sin and cos of both angles, clipped velocities, the slider's clipped constraint force.
    s.qpos[1] = 0.3;
    s.qpos[2] = -0.2;
    s.qvel[0] = 25;
    s.qvel[2] = -12;
    s.qfrc_constraint0 = -30;
    double obs[Env::observation_size];
    Env::observe(p, s, obs);
    CHECK(obs[0] == s.qpos[0]);
    CHECK(obs[1] == std::sin(0.3));
    CHECK(obs[2] == std::sin(-0.2));
    CHECK(obs[3] == std::cos(0.3));
    CHECK(obs[4] == std::cos(-0.2));
    CHECK(obs[5] == 10.0);
    CHECK(obs[6] == s.qvel[1]);
    CHECK(obs[7] == -10.0);
    CHECK(obs[8] == -10.0);
    // Fallen over: the tip below height 1 terminates with no alive bonus.
    Env::reset(p, s, gen);
    s.qpos[1] = 1.5;
    r = Env::step_with_info(p, s, &push, info);
    CHECK(r.terminated);
    CHECK(info.reward_survive == 0.0);
    CHECK(r.reward == (0.0 + info.distance_penalty) + info.velocity_penalty);
  }
}

TEST_CASE("Hopper-v5's and Walker2d-v5's healthy checks", "[mujoco][envs]") {
  {
    using Env = hopper<double>;
    const Env::Params p{};
    Env::State s{};
    for (int i = 0; i < Env::nq; ++i) s.qpos[i] = p.model.qpos0[i];
    CHECK(Env::is_healthy(p, s));
    s.qpos[1] = 0.7;  // open interval
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qpos[1] = 0.71;
    s.qpos[2] = 0.2;
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qpos[2] = -0.19;
    CHECK(Env::is_healthy(p, s));
    s.qvel[0] = 100;  // healthy_state_range covers qpos[2:] and every qvel
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qvel[0] = 99;
    s.qpos[5] = -100.5;
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qpos[5] = 0;
    s.qpos[0] = 1e6;  // x is not checked
    CHECK(Env::is_healthy(p, s));
    s.qpos[1] = std::nan("");
    CHECK_FALSE(Env::is_healthy(p, s));
  }
  {
    using Env = walker2d<double>;
    const Env::Params p{};
    Env::State s{};
    for (int i = 0; i < Env::nq; ++i) s.qpos[i] = p.model.qpos0[i];
    CHECK(Env::is_healthy(p, s));
    s.qpos[1] = 2.0;
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qpos[1] = 0.81;
    s.qpos[2] = -1.0;
    CHECK_FALSE(Env::is_healthy(p, s));
    s.qpos[2] = 0.99;
    s.qvel[3] = 1e5;  // Walker2d-v5 has no healthy_state_range
    CHECK(Env::is_healthy(p, s));
  }
}

TEST_CASE("the registry knows HalfCheetah-v5, Hopper-v5 and Walker2d-v5 with Gymnasium's settings",
          "[mujoco][envs][registry]") {
  struct expected {
    const char* id;
    int obs, act;
    double threshold;
  };
  for (const expected& x : {expected{"HalfCheetah-v5", 17, 6, 4800.0}, expected{"Hopper-v5", 11, 3, 3800.0},
                            expected{"Walker2d-v5", 17, 6, std::nan("")}}) {
    INFO(x.id);
    REQUIRE(is_registered(x.id));
    bool found = false;
    for (const env_info& e : registered_envs()) {
      if (e.id != x.id) continue;
      found = true;
      CHECK(e.action_space == action_kind::continuous);
      CHECK(e.observation_size == x.obs);
      CHECK(e.action_size == x.act);
      CHECK(e.action_low == -1.0);
      CHECK(e.action_high == 1.0);
      CHECK(e.max_episode_steps == 1000);
      if (std::isnan(x.threshold)) CHECK(std::isnan(e.reward_threshold));
      else CHECK(e.reward_threshold == x.threshold);
    }
    CHECK(found);
  }
  visit_env<double>("Hopper-v5", [](auto entry) {
    using Env = typename decltype(entry)::env_type;
    CHECK(std::is_same_v<Env, hopper<double>>);
    if constexpr (std::is_same_v<Env, hopper<double>>) CHECK(entry.params.frame_skip == 4);
  });
  CHECK_THROWS_AS(visit_env("Hopper-v4", [](auto) {}), unknown_env);
}

// ---- statistics under the random policy ----------------------------------------------------------

namespace {

/// One whole episode per index under the uniform random policy, with rlkernels' own random
/// streams: reset (the env's reset noise) and actions uniform on the action space from rng(seed, i),
/// as action_space.sample() draws them ([-1, 1] for the walkers and Ant, [-0.4, 0.4] for the
/// Humanoids).
template <class Env>
struct random_episode_kernel {
  typename Env::Params params;
  std::uint64_t seed;
  std::int32_t* lengths;
  double* returns;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    using S = typename Env::scalar_type;
    rng gen(seed, i);
    typename Env::State s{};
    Env::reset(params, s, gen);
    double ret = 0;
    std::int32_t t = 0;
    S a[Env::nu];
    while (t < params.max_episode_steps) {
      for (int k = 0; k < Env::nu; ++k) a[k] = gen.template uniform<S>(Env::action_low, Env::action_high);
      const step_result<S> r = Env::step(params, s, a, gen);
      ret += double(r.reward);
      ++t;
      if (r.terminated || r.truncated) break;  // truncated: a step the engine could not take
    }
    lengths[i] = t;
    returns[i] = ret;
  }
};

/// The episodes of env `id` in a Gymnasium statistics file under tests/reference/ (columns
/// env,episode,length,return,terminated): mujoco_random_policy_stats.csv or
/// mujoco_trained_policy_stats.csv.
void gymnasium_episodes(const char* file, const std::string& id, std::vector<double>& lengths,
                        std::vector<double>& returns, std::vector<double>* x_velocities = nullptr) {
  const std::string path = rlk_test::reference_dir() + "/" + file;
  INFO("reading " << path);
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const std::size_t c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1),
                      c4 = line.find(',', c3 + 1);
    if (line.substr(0, c1) != id) continue;
    lengths.push_back(std::stod(line.substr(c2 + 1, c3 - c2 - 1)));
    returns.push_back(std::stod(line.substr(c3 + 1, c4 - c3 - 1)));
    if (x_velocities) {  // the trained-policy file's sixth column, where the env records it
      const std::size_t c5 = line.find(',', c4 + 1);
      const std::string xv = c5 == std::string::npos ? std::string() : line.substr(c5 + 1);
      if (!xv.empty()) x_velocities->push_back(std::stod(xv));
    }
  }
  REQUIRE(!lengths.empty());
  if (x_velocities && !x_velocities->empty()) REQUIRE(x_velocities->size() == lengths.size());
}

/// The random-policy comparison of env `id`: as many episodes of ours as give the two-sample tests
/// the effective sample size `effective` against Gymnasium's episodes in the reference file
/// (rlk_test::episodes_for_effective_size; 4 to 8 times as many of Gymnasium's as of ours where
/// our episodes are long, so the test runs fewer of them for the same power).
template <class Env>
void check_random_policy_statistics(const char* id, const char* scalar_name, double effective) {
  std::vector<double> gym_lengths, gym_returns;
  gymnasium_episodes("mujoco_random_policy_stats.csv", id, gym_lengths, gym_returns);
  const std::size_t n = rlk_test::episodes_for_effective_size(effective, gym_lengths.size());
  INFO(gym_lengths.size() << " reference episodes for an effective sample size of " << effective);
  REQUIRE(n > 0);
  auto lengths = rlk_test::zeros<std::int32_t>(n);
  auto returns = rlk_test::zeros<double>(n);
  for_each_index(rlk_test::backend(), n,
                 random_episode_kernel<Env>{typename Env::Params{}, 2026, lengths.data(), returns.data()});
  const auto len_i = lengths.to_host();
  const auto ret = returns.to_host();
  const std::vector<double> len(len_i.begin(), len_i.end());
  const auto ks_len = rlk_test::ks_two_sample(len, gym_lengths);
  const auto ks_ret = rlk_test::ks_two_sample(ret, gym_returns);
  const auto welch_len = rlk_test::welch_means(len, gym_lengths);
  const auto welch_ret = rlk_test::welch_means(ret, gym_returns);
  auto mean = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x / double(v.size());
    return m;
  };
  const double mean_len = mean(len), mean_ret = mean(ret), gym_len = mean(gym_lengths), gym_ret = mean(gym_returns);
  std::printf("%s<%s> random policy, %zu episodes (Gymnasium %zu): mean length %.3f (Gymnasium %.3f), mean return "
              "%.4g (%.4g); KS p: length %.3g, return %.3g; Welch p: length %.3g, return %.3g\n",
              id, scalar_name, n, gym_lengths.size(), mean_len, gym_len, mean_ret, gym_ret, ks_len.p_value,
              ks_ret.p_value, welch_len.p_value, welch_ret.p_value);
  // The same MDP with independent random streams: no test may reject at the 0.1% level (the
  // samples are fixed by the seeds, so this is deterministic). HalfCheetah's and HumanoidStandup's
  // episodes all last 1000 steps: only their returns carry information.
  CHECK(ks_ret.p_value > 1e-3);
  CHECK(welch_ret.p_value > 1e-3);
  if (gym_len < 999) {
    CHECK(ks_len.p_value > 1e-3);
    CHECK(welch_len.p_value > 1e-3);
  } else {
    CHECK(std::all_of(len.begin(), len.end(), [](double l) { return l == 1000.0; }));
  }
}

}  // namespace

// Hidden ([.]): CTest runs the [statistics] cases once, as mujoco_envs_test_statistics (OpenMP
// variant; not under the sanitizers, where their ~3 * 10^6 env steps take many minutes).
TEMPLATE_TEST_CASE("under the random policy, episode lengths and returns are distributed as Gymnasium's",
                   "[.][mujoco][envs][statistics]", hopper_spec, walker2d_spec, half_cheetah_spec, ant_spec,
                   humanoid_spec, humanoid_standup_spec,
                   inverted_pendulum_spec, inverted_double_pendulum_spec, swimmer_spec, reacher_spec,
                   pusher_spec) {
  check_random_policy_statistics<typename TestType::template env<double>>(TestType::id, "double",
                                                                          TestType::random_stats_effective_size);
  // float at half the effective size: double is the exact anchor (a physics error shows there
  // first); float is checked for what rounding adds, which moves the statistics far less
  check_random_policy_statistics<typename TestType::template env<float>>(TestType::id, "float",
                                                                         TestType::random_stats_effective_size / 2);
}

// ---- statistics under a trained policy --------------------------------------------------------

namespace {

/// `n` whole episodes of Env under the policy (evaluated in double on the host, as the Python
/// script does), reset from rlkernels' own streams rng(seed, i).
/// Whether Env's step info has Gymnasium's x_velocity term.
template <class Env, class = void>
struct has_x_velocity_info : std::false_type {};
template <class Env>
struct has_x_velocity_info<Env, std::void_t<decltype(std::declval<typename Env::step_info&>().x_velocity)>>
    : std::true_type {};

template <class Env>
void trained_policy_episodes(const policy_file& p, std::size_t n, std::uint64_t seed, std::vector<double>& lengths,
                             std::vector<double>& returns, std::vector<double>* x_velocities = nullptr) {
  using S = typename Env::scalar_type;
  REQUIRE(p.observation_size == Env::observation_size);
  REQUIRE(p.action_size == Env::nu);
  lengths.assign(n, 0.0);
  returns.assign(n, 0.0);
  if (x_velocities) x_velocities->assign(n, 0.0);
  const typename Env::Params params{};
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic)
#endif
  for (long i = 0; i < long(n); ++i) {
    rng gen(seed, std::uint64_t(i));
    typename Env::State s{};
    Env::reset(params, s, gen);
    S obs[Env::observation_size], a[Env::nu];
    double x[Env::observation_size], y[Env::nu];
    double ret = 0, xsum = 0;
    int t = 0;
    while (t < params.max_episode_steps) {
      Env::observe(params, s, obs);
      for (int k = 0; k < Env::observation_size; ++k) x[k] = double(obs[k]);
      p.act(x, y);
      for (int k = 0; k < Env::nu; ++k) a[k] = S(y[k]);
      step_result<S> r;
      if constexpr (has_x_velocity_info<Env>::value) {  // Gymnasium's info["x_velocity"]
        typename Env::step_info info{};
        r = Env::step_with_info(params, s, a, info);
        xsum += double(info.x_velocity);
      } else {
        r = Env::step(params, s, a, gen);
      }
      ret += double(r.reward);
      ++t;
      if (r.terminated || r.truncated) break;  // truncated: a step the engine could not take
    }
    lengths[std::size_t(i)] = double(t);
    returns[std::size_t(i)] = ret;
    if (x_velocities) (*x_velocities)[std::size_t(i)] = xsum / double(t);
  }
}

template <class Env>
void check_trained_policy_statistics(const char* id, const char* policy, const char* scalar_name, double effective,
                                     double min_gym_mean_return = 1000) {
  const policy_file p = policy_file::load(rlk_test::reference_dir() + "/" + policy);
  REQUIRE(p.env == id);
  std::vector<double> gym_lengths, gym_returns, gym_xv, len, ret, xv;
  gymnasium_episodes("mujoco_trained_policy_stats.csv", id, gym_lengths, gym_returns, &gym_xv);
  // As many episodes of ours as give the effective sample size `effective` (as the random-policy
  // comparison does).
  const std::size_t n = rlk_test::episodes_for_effective_size(effective, gym_lengths.size());
  INFO(gym_lengths.size() << " reference episodes for an effective sample size of " << effective);
  REQUIRE(n > 0);
  trained_policy_episodes<Env>(p, n, 4242, len, ret, &xv);
  const auto ks_len = rlk_test::ks_two_sample(len, gym_lengths);
  const auto ks_ret = rlk_test::ks_two_sample(ret, gym_returns);
  const auto welch_len = rlk_test::welch_means(len, gym_lengths);
  const auto welch_ret = rlk_test::welch_means(ret, gym_returns);
  auto mean = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x / double(v.size());
    return m;
  };
  std::printf("%s<%s> trained policy, %zu episodes (Gymnasium %zu): mean length %.1f (Gymnasium %.1f), mean return "
              "%.1f (%.1f); KS p: length %.3g, return %.3g; Welch p: length %.3g, return %.3g\n",
              id, scalar_name, n, gym_lengths.size(), mean(len), mean(gym_lengths), mean(ret), mean(gym_returns),
              ks_len.p_value, ks_ret.p_value, welch_len.p_value, welch_ret.p_value);
  // A policy that walks makes long episodes and returns in the thousands (one that reaches, returns
  // near 0): a wrong force, contact or reward term moves them far beyond what the reset noise does.
  // No test may reject at 0.1%.
  CHECK(mean(gym_returns) > min_gym_mean_return);
  CHECK(ks_ret.p_value > 1e-3);
  if (!gym_xv.empty()) {
    // Humanoid-v5 (the env that records its walking speed): a mixture of full 1000-step walks and
    // rare falls (about 2% of Gymnasium's episodes). A mean over ~100 episodes swings with the one
    // or two falls it happens to hold, so Welch's test is not valid on the whole sample: the fall
    // rate is compared by a binomial test, and the walks' returns and x velocities by Welch and KS.
    const double full = double(typename Env::Params{}.max_episode_steps);
    auto walks = [&](const std::vector<double>& lengths, const std::vector<double>& v) {
      std::vector<double> w;
      for (std::size_t i = 0; i < v.size(); ++i)
        if (lengths[i] == full) w.push_back(v[i]);
      return w;
    };
    const std::vector<double> ret_w = walks(len, ret), gym_ret_w = walks(gym_lengths, gym_returns),
                              xv_w = walks(len, xv), gym_xv_w = walks(gym_lengths, gym_xv);
    const std::size_t falls = len.size() - ret_w.size(), gym_falls = gym_lengths.size() - gym_ret_w.size();
    // Two-sided binomial tail of our fall count under Gymnasium's rate.
    const double rate = double(gym_falls) / double(gym_lengths.size());
    double below = 0, above = 0, pk = std::pow(1.0 - rate, double(len.size()));  // P(X = 0)
    for (std::size_t k = 0; k <= len.size(); ++k) {
      if (k <= falls) below += pk;
      if (k >= falls) above += pk;
      pk *= rate > 0 && rate < 1 ? (double(len.size() - k) / double(k + 1)) * rate / (1.0 - rate) : 0.0;
    }
    const double p_falls = std::min(1.0, 2.0 * std::min(below, above));
    const auto welch_ret_w = rlk_test::welch_means(ret_w, gym_ret_w), ks_ret_w = rlk_test::ks_two_sample(ret_w, gym_ret_w);
    const auto welch_xv_w = rlk_test::welch_means(xv_w, gym_xv_w), ks_xv_w = rlk_test::ks_two_sample(xv_w, gym_xv_w);
    std::printf("%s<%s> trained policy: falls %zu of %zu (Gymnasium %zu of %zu; binomial p %.3g); the full episodes' "
                "mean return %.1f (%.1f; Welch p %.3g, KS p %.3g) and mean x velocity %.4f m/s (%.4f; Welch p %.3g, "
                "KS p %.3g)\n",
                id, scalar_name, falls, len.size(), gym_falls, gym_lengths.size(), p_falls, mean(ret_w), mean(gym_ret_w),
                welch_ret_w.p_value, ks_ret_w.p_value, mean(xv_w), mean(gym_xv_w), welch_xv_w.p_value, ks_xv_w.p_value);
    CHECK(p_falls > 1e-3);
    CHECK(welch_ret_w.p_value > 1e-3);
    CHECK(ks_ret_w.p_value > 1e-3);
    CHECK(welch_xv_w.p_value > 1e-3);
    CHECK(ks_xv_w.p_value > 1e-3);
    return;
  }
  CHECK(welch_ret.p_value > 1e-3);
  if (mean(gym_lengths) < 999) {
    CHECK(ks_len.p_value > 1e-3);
    CHECK(welch_len.p_value > 1e-3);
  }
}

}  // namespace

// Hidden ([.]), as the random-policy statistics: CTest runs both as mujoco_envs_test_statistics.
TEST_CASE("under a trained policy, episode lengths and returns are distributed as Gymnasium's",
          "[.][mujoco][envs][statistics]") {
  // Effective sample sizes n_ours n_gym / (n_ours + n_gym): 222 for the walkers and 143 for Ant (an
  // Ant step, with its 256-256 policy, costs about four walker steps): 250 and 154 episodes of ours
  // against Gymnasium's 2000; float at half those (as for the random policy: double is the anchor).
  check_trained_policy_statistics<walker2d<double>>("Walker2d-v5", "mujoco_walker2d_v5_policy.txt", "double", 222);
  check_trained_policy_statistics<walker2d<float>>("Walker2d-v5", "mujoco_walker2d_v5_policy.txt", "float", 111);
  check_trained_policy_statistics<hopper<double>>("Hopper-v5", "mujoco_hopper_v5_policy.txt", "double", 222);
  check_trained_policy_statistics<hopper<float>>("Hopper-v5", "mujoco_hopper_v5_policy.txt", "float", 111);
  check_trained_policy_statistics<ant<double>>("Ant-v5", "mujoco_ant_v5_policy.txt", "double", 143);
  check_trained_policy_statistics<ant<float>>("Ant-v5", "mujoco_ant_v5_policy.txt", "float", 72);
  // Reacher's 50-step episodes are cheap: 2000 of ours against Gymnasium's 2000 (effective 1000);
  // the random policy scores about -43, the trained one about -4.
  check_trained_policy_statistics<reacher<double>>("Reacher-v5", "mujoco_reacher_v5_policy.txt", "double", 1000, -10);
  check_trained_policy_statistics<reacher<float>>("Reacher-v5", "mujoco_reacher_v5_policy.txt", "float", 1000, -10);
  // Pusher: the policy pushes the object (capsule-cylinder contacts by GJK/EPA); -150 at random
  // (effective size 300: 353 of ours against Gymnasium's 2000, for the test command's time)
  check_trained_policy_statistics<pusher<double>>("Pusher-v5", "mujoco_pusher_v5_policy.txt", "double", 300, -40);
  check_trained_policy_statistics<pusher<float>>("Pusher-v5", "mujoco_pusher_v5_policy.txt", "float", 150, -40);
  // Humanoid: the policy of docs/training.md walks at about 2.6 m/s (above 5500; standing earns
  // 5000), with 17 actuators and its contacts at its feet; its x velocity is compared too. Effective
  // size 100: 112 episodes of ours against Gymnasium's 1000 (a step with its 256-256 ELU policy
  // costs about ten walker steps).
  check_trained_policy_statistics<humanoid<double>>("Humanoid-v5", "mujoco_humanoid_v5_policy.txt", "double", 100, 5500);
  check_trained_policy_statistics<humanoid<float>>("Humanoid-v5", "mujoco_humanoid_v5_policy.txt", "float", 50, 5500);
}

// ---- capacities: a step that needs more contacts or rows than the workspace holds ------------------

TEST_CASE("full_capacity_t has room for every contact the pairs can make and every row", "[mujoco][envs][capacity]") {
  // The figures the generator writes as ncon_full / nefc_full (docs/physics.md's table).
  static_assert(full_capacity_t<hopper<double>>::dims::ncon == 14 && full_capacity_t<hopper<double>>::dims::nefc == 44);
  static_assert(full_capacity_t<walker2d<float>>::dims::ncon == 14 && full_capacity_t<walker2d<float>>::dims::nefc == 68);
  static_assert(full_capacity_t<half_cheetah<double, false>>::dims::ncon == 16 &&
                full_capacity_t<half_cheetah<double, false>>::dims::nefc == 76);
  static_assert(full_capacity_t<ant<float>>::dims::ncon == 25 && full_capacity_t<ant<float>>::dims::nefc == 116);
  static_assert(full_capacity_t<humanoid<float>>::dims::ncon == 190 && full_capacity_t<humanoid<float>>::dims::nefc == 311);
  static_assert(full_capacity_t<humanoid_standup<double>>::dims::ncon == 190 &&
                full_capacity_t<humanoid_standup<double>>::dims::nefc == 311);
  // The measured defaults (docs/physics.md): below the full capacities.
  static_assert(walker2d<float>::dims::ncon == 10 && walker2d<float>::dims::nefc == 36);
  static_assert(half_cheetah<double>::dims::ncon == 14 && half_cheetah<double>::dims::nefc == 47);
  static_assert(std::is_same_v<full_capacity_t<pusher<double>>, pusher<double>>);  // full already
  static_assert(check_env<full_capacity_t<humanoid<double>>>());
  static_assert(check_env<full_capacity_t<walker2d<float>>>() && check_env<full_capacity_t<half_cheetah<double>>>());
  static_assert(full_capacity_t<walker2d<float, false>>::observation_size == 18);
  // Smaller capacities of the user's grow to the full ones; larger ones stay.
  using small = physics::dims_with_capacity<models::hopper_dims, 2, 8>;
  using big = physics::dims_with_capacity<models::hopper_dims, 20, 50>;
  static_assert(physics::dims_full_capacity<small>::ncon == 14 && physics::dims_full_capacity<small>::nefc == 44);
  static_assert(std::is_same_v<physics::dims_full_capacity<big>, big>);
  // The Gymnasium keywords reach an env of any capacities (param_fields).
  full_capacity_t<hopper<double>>::Params p;
  set_param<full_capacity_t<hopper<double>>>(p, "ctrl_cost_weight", "0.5");
  CHECK(p.ctrl_cost_weight == 0.5);
  full_capacity_t<walker2d<float>>::Params pw;
  set_param<full_capacity_t<walker2d<float>>>(pw, "terminate_when_unhealthy", "false");
  set_param<full_capacity_t<walker2d<float>>>(pw, "healthy_z_range", "0.5,3");
  CHECK(!pw.terminate_when_unhealthy);
  CHECK((pw.healthy_z_range[0] == 0.5f && pw.healthy_z_range[1] == 3.0f));
  full_capacity_t<half_cheetah<double>>::Params pc;
  set_param<full_capacity_t<half_cheetah<double>>>(pc, "reset_noise_scale", "0.25");
  CHECK(pc.reset_noise_scale == 0.25);
}

namespace {
/// Builds two envs of Env with terminate_when_unhealthy set; returns how many were built.
template <class Env>
std::size_t build_with_termination(bool terminate) {
  typename Env::Params p{};
  p.terminate_when_unhealthy = terminate;
  vec_env<Env, rlk_test::backend_t> envs(rlk_test::backend(), 2, 1, p);
  return envs.num_envs();
}
}  // namespace

TEST_CASE("terminate_when_unhealthy = false is refused with capacities too small for a robot on the floor",
          "[mujoco][envs][capacity]") {
  // The measured capacities: refused, with the setting, both capacities and the way out named.
  CHECK_THROWS_WITH(build_with_termination<hopper<double>>(false),
                    Catch::Contains("rlkernels::hopper: terminate_when_unhealthy = false lets the robot lie on the floor, "
                                    "which needs 8 contacts and 32 constraint rows") &&
                        Catch::Contains("these Dims hold 6 and 20") && Catch::Contains("full_capacity_t<hopper<...>>"));
  CHECK_THROWS_WITH(build_with_termination<walker2d<float>>(false), Catch::Contains("needs 10 contacts and 43"));
  CHECK_THROWS_WITH(build_with_termination<humanoid<float>>(false),
                    Catch::Contains("needs 24 contacts and 80") &&
                        Catch::Contains("dims_with_capacity<models::humanoid_dims, 24, 80>"));
  // The default termination, full capacity or the recommended capacities: built.
  CHECK(build_with_termination<hopper<double>>(true) == 2);
  CHECK(build_with_termination<full_capacity_t<hopper<double>>>(false) == 2);
  CHECK(build_with_termination<hopper<double, true, physics::dims_with_capacity<models::hopper_dims, 8, 32>>>(false) == 2);
  CHECK(build_with_termination<full_capacity_t<walker2d<float>>>(false) == 2);
  CHECK(build_with_termination<humanoid<float, true, true, true, true, true,
                                        physics::dims_with_capacity<models::humanoid_dims, 24, 80>>>(false) == 2);
}

TEST_CASE("a step beyond the contact or row capacity is truncated, counted, and changes nothing below it",
          "[mujoco][envs][capacity]") {
  using Full = ant<double>;
  // Ant's feet make up to 4 contacts with the floor (16 rows) and its limits up to 16 rows:
  // capacities of 3 contacts and 14 rows run out now and then.
  using Small = ant<double, true, true, physics::dims_with_capacity<models::ant_dims, 3, 14>>;
  static_assert(check_env<Small>());
  static_assert(sizeof(physics::data<double, Small::dims>) < sizeof(physics::data<double, Full::dims>));
  const std::size_t n = 32;
  vec_env<Full, backend_t> full(rlk_test::backend(), n, 17);
  vec_env<Small, backend_t> small(rlk_test::backend(), n, 17);
  REQUIRE(full.observations().to_host() == small.observations().to_host());
  std::vector<bool> same(n, true);
  std::size_t compared = 0, overflow_ends = 0;
  for (std::uint64_t t = 0; t < 300; ++t) {
    const auto actions = actions_at<Full>(ant_spec::code, n, t, 9000);
    const auto prev_small = small.observations().to_host();  // of the states the step starts from
    full.step(rlk_test::make(actions).cview());
    small.step(rlk_test::make(actions).cview());
    const auto of = full.final_observations().to_host(), os = small.final_observations().to_host();
    const auto rf = full.rewards().to_host(), rs = small.rewards().to_host();
    const auto tf = full.terminated().to_host(), ts = small.terminated().to_host();
    const auto states = small.states().to_host();
    for (std::size_t i = 0; i < n; ++i) {
      if (!same[i]) continue;
      const int nobs = Full::observation_size;
      const bool obs_equal = std::equal(of.begin() + i * nobs, of.begin() + (i + 1) * nobs, os.begin() + i * nobs);
      if (states[i].capacity_overflows > 0) {  // this step overflowed: the small env ended its episode
        CHECK(ts[i] == 0);  // as truncated: the workspace ran out, the MDP did not end
        CHECK(small.truncated().get(i) == 1);
        // the final observation is the observation of the state before the step, which it kept
        CHECK(std::equal(prev_small.begin() + i * nobs, prev_small.begin() + (i + 1) * nobs, os.begin() + i * nobs));
        CHECK(std::isfinite(rs[i]));
        ++overflow_ends;
        same[i] = false;
        continue;
      }
      INFO("env " << i << " step " << t);
      REQUIRE(obs_equal);  // below the capacities, the same bits
      REQUIRE(rf[i] == rs[i]);
      REQUIRE(tf[i] == ts[i]);
      ++compared;
      if (tf[i]) same[i] = false;  // the resets draw the same numbers, but stop comparing here
    }
  }
  const std::uint64_t overflows = capacity_overflows(small);
  std::printf("Ant-v5 with capacities 3 contacts / 14 rows (full: %d / %d): %zu env steps equal to the full "
              "capacity's before the first overflow; %llu steps overflowed (each ended its episode); unstable %llu\n",
              Full::dims::ncon, Full::dims::nefc, compared, (unsigned long long)overflows,
              (unsigned long long)unstable_steps(small));
  CHECK(overflow_ends > 0);
  CHECK(overflows >= overflow_ends);
  CHECK(unstable_steps(small) == 0u);
  CHECK(capacity_overflows(full) == 0u);
  CHECK(compared > 1000);
}

// ---- measuring the capacities (hidden: run `mujoco_envs_test_openmp "[capacity-measure]"`) -------

namespace {

/// The most contacts and rows any forward pass needed (physics::data::ncon_peak, nefc_peak) over
/// env steps of `n` envs with uniform random actions in the action range (`saturated`: each at the
/// bound of its sign, as forceful as the actuators go), each env step as the envs take it
/// (frame_skip physics steps from the State), episodes reset when they end.
template <class Env>
struct peak_kernel {
  typename Env::Params params;
  std::uint64_t steps;
  int* ncon_peak;
  int* nefc_peak;
  std::uint32_t* overflows;
  bool saturated;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    using S = typename Env::scalar_type;
    rng gen(321, i);
    typename Env::State s{};
    Env::reset(params, s, gen);
    int pc = 0, pr = 0;
    std::int32_t t = 0;
    for (std::uint64_t k = 0; k < steps; ++k) {
      S a[Env::nu];
      for (int j = 0; j < Env::nu; ++j) {
        a[j] = gen.template uniform<S>(Env::action_low, Env::action_high);
        if (saturated) a[j] = a[j] < S(0) ? S(Env::action_low) : S(Env::action_high);
      }
      physics::data<S, typename Env::dims> d{};
      for (int q = 0; q < Env::nq; ++q) d.qpos[q] = s.qpos[q];
      for (int v = 0; v < Env::nv; ++v) { d.qvel[v] = s.qvel[v]; d.qacc_warmstart[v] = s.qacc_warmstart[v]; }
      for (int j = 0; j < Env::nu; ++j) d.ctrl[j] = a[j];
      for (int f = 0; f < params.frame_skip; ++f) physics::step(params.model, d);
      pc = d.ncon_peak > pc ? d.ncon_peak : pc;
      pr = d.nefc_peak > pr ? d.nefc_peak : pr;
      const step_result<S> r = Env::step(params, s, a, gen);  // the env's own step, for its episode end
      if (r.terminated || r.truncated || ++t >= params.max_episode_steps) {
        Env::reset(params, s, gen);
        t = 0;
      }
    }
    ncon_peak[i] = pc;
    nefc_peak[i] = pr;
    overflows[i] = s.capacity_overflows;
  }
};

template <class Env, class = void>
struct has_unhealthy_option : std::false_type {};
template <class Env>
struct has_unhealthy_option<Env, std::void_t<decltype(std::declval<typename Env::Params&>().terminate_when_unhealthy)>>
    : std::true_type {};

template <class Env>
void measure_peaks(const char* id, std::size_t n, std::uint64_t steps, bool terminate_when_unhealthy = true,
                   bool saturated = false) {
  auto pc = rlk_test::zeros<int>(n);
  auto pr = rlk_test::zeros<int>(n);
  auto ov = rlk_test::zeros<std::uint32_t>(n);
  typename Env::Params params{};
  if constexpr (has_unhealthy_option<Env>::value) params.terminate_when_unhealthy = terminate_when_unhealthy;
  for_each_index(rlk_test::backend(), n, peak_kernel<Env>{params, steps, pc.data(), pr.data(), ov.data(), saturated});
  const auto c = pc.to_host(), r = pr.to_host();
  const auto o = ov.to_host();
  std::printf("%s%s, %s actions, %zu envs x %llu env steps: at most %d contacts and %d constraint rows in any "
              "forward pass (capacities %d and %d; %llu steps overflowed)\n",
              id, terminate_when_unhealthy ? "" : " (terminate_when_unhealthy=False)",
              saturated ? "saturated random (+-1)" : "random", n, (unsigned long long)steps,
              *std::max_element(c.begin(), c.end()),
              *std::max_element(r.begin(), r.end()), Env::dims::ncon, Env::dims::nefc,
              (unsigned long long)std::accumulate(o.begin(), o.end(), 0ull));
}

}  // namespace

TEST_CASE("the most contacts and rows the robots need under random actions", "[.][capacity-measure]") {
  measure_peaks<hopper<double>>("Hopper-v5", 16, 20000);
  measure_peaks<walker2d<double>>("Walker2d-v5", 16, 20000);
  measure_peaks<half_cheetah<double>>("HalfCheetah-v5", 16, 20000);
  // no trained HalfCheetah policy yet: actions at the bounds, the most forceful random ones
  measure_peaks<half_cheetah<double>>("HalfCheetah-v5", 16, 20000, true, true);
  measure_peaks<ant<double>>("Ant-v5", 16, 20000);
  measure_peaks<humanoid<double>>("Humanoid-v5", 16, 20000);
  measure_peaks<humanoid_standup<double>>("HumanoidStandup-v5", 16, 20000);
  // Gymnasium's terminate_when_unhealthy=False: the robots lie on the floor and flail.
  measure_peaks<hopper<double>>("Hopper-v5", 16, 20000, false);
  measure_peaks<walker2d<double>>("Walker2d-v5", 16, 20000, false);
  measure_peaks<ant<double>>("Ant-v5", 16, 20000, false);
  measure_peaks<humanoid<double>>("Humanoid-v5", 16, 20000, false);
  // ... with the capacities the env docs recommend for it
  measure_peaks<hopper<double, true, physics::dims_with_capacity<models::hopper_dims, 8, 32>>>("Hopper-v5 8/32", 16,
                                                                                             20000, false);
  measure_peaks<full_capacity_t<walker2d<double>>>("Walker2d-v5 full", 16, 20000, false);
  measure_peaks<humanoid<double, true, true, true, true, true, physics::dims_with_capacity<models::humanoid_dims, 24, 80>>>(
      "Humanoid-v5 24/80", 16, 20000, false);
}

// ---- the 3D robots: long rollouts, thread counts -------------------------------------------------

TEMPLATE_TEST_CASE("free-joint quaternions stay unit over 10^5 physics steps", "[mujoco][envs][quaternion]", float,
                   double) {
  using S = TestType;
  using Env = ant<S>;
  const typename Env::Params p{};
  typename Env::State s{};
  rng gen(3, 0);
  Env::reset(p, s, gen);
  double worst = 0;
  std::size_t ends = 0;
  const int steps = int(rlk_test::sanitized_length(20000));  // x frame_skip 5 = 10^5 physics steps (a quarter under the sanitizers)
  for (int t = 0; t < steps; ++t) {
    S a[Env::nu];
    for (int k = 0; k < Env::nu; ++k) a[k] = gen.template uniform<S>(S(-1), S(1));
    const step_result<S> r = Env::step(p, s, a, gen);
    const S* q = s.qpos + 3;
    const double norm = std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] + double(q[3]) * q[3]);
    worst = std::max(worst, std::abs(norm - 1.0));
    if (r.terminated) {  // keep going from the same body: only the quaternion matters here
      ++ends;
      for (int i = 0; i < Env::nv; ++i) s.qvel[i] = S(0);
      s.qpos[2] = S(0.75);
    }
  }
  std::printf("Ant-v5<%s>: %d physics steps with random actions (%zu unhealthy states passed through): "
              "| |q| - 1 | at most %.3g\n", sizeof(S) == 4 ? "float" : "double", 5 * steps, ends, worst);
  CHECK(worst <= (sizeof(S) == 4 ? 1e-6 : 1e-14));
  CHECK(s.unstable_steps == 0u);
}

#if defined(RLK_BACKEND_OPENMP)
TEMPLATE_TEST_CASE("the 3D robots give the serial bits on 1 to 4 OpenMP threads", "[mujoco][envs][determinism]",
                   ant<double>, humanoid<double>, humanoid_standup<float>) {
  using Env = TestType;
  using S = typename Env::scalar_type;
  const std::size_t n = 13;
  vec_env<Env, serial_backend> reference(serial, n, 8);
  std::vector<std::unique_ptr<vec_env<Env, openmp_backend>>> others;
  for (int threads = 1; threads <= 4; ++threads)
    others.push_back(std::make_unique<vec_env<Env, openmp_backend>>(openmp_backend{threads, 0}, n, 8));
  for (std::uint64_t t = 0; t < 60; ++t) {
    std::vector<S> a(n * Env::nu);
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = S(Env::action_high * hash_action(7, k / Env::nu, t, int(k % Env::nu)));
    reference.step(view<const S>(a.data(), a.size()));
    const auto obs = reference.final_observations().to_host();
    const auto rew = reference.rewards().to_host();
    for (auto& o : others) {
      o->step(view<const S>(a.data(), a.size()));
      REQUIRE(o->final_observations().to_host() == obs);
      REQUIRE(o->rewards().to_host() == rew);
    }
  }
}
#endif

namespace {

/// As peak_kernel, with a trained policy (policy_file, deterministic) instead of random actions;
/// one env on the host.
template <class Env>
void measure_peaks_with_policy(const char* id, const std::string& path, int episodes) {
  using S = typename Env::scalar_type;
  const policy_file policy = policy_file::load(path);
  REQUIRE(policy.observation_size == Env::observation_size);
  const typename Env::Params params{};
  int pc = 0, pr = 0;
  std::uint32_t overflows = 0;
  double total = 0;
  for (int e = 0; e < episodes; ++e) {
    rng gen(555, std::uint64_t(e));
    typename Env::State s{};
    Env::reset(params, s, gen);
    for (int t = 0; t < params.max_episode_steps; ++t) {
      S obs[Env::observation_size];
      Env::observe(params, s, obs);
      double o[Env::observation_size], a[Env::nu];
      for (int k = 0; k < Env::observation_size; ++k) o[k] = double(obs[k]);
      policy.act(o, a);
      S act[Env::nu];
      for (int k = 0; k < Env::nu; ++k) act[k] = S(a[k]);
      physics::data<S, typename Env::dims> d{};
      for (int q = 0; q < Env::nq; ++q) d.qpos[q] = s.qpos[q];
      for (int v = 0; v < Env::nv; ++v) { d.qvel[v] = s.qvel[v]; d.qacc_warmstart[v] = s.qacc_warmstart[v]; }
      for (int j = 0; j < Env::nu; ++j) d.ctrl[j] = act[j];
      for (int f = 0; f < params.frame_skip; ++f) physics::step(params.model, d);
      pc = std::max(pc, d.ncon_peak);
      pr = std::max(pr, d.nefc_peak);
      const step_result<S> r = Env::step(params, s, act, gen);
      total += double(r.reward);
      if (r.terminated || r.truncated) break;  // truncated: a step the engine could not take
    }
    overflows += s.capacity_overflows;
  }
  std::printf("%s, trained policy %s, %d episodes (mean return %.1f): at most %d contacts and %d constraint rows in any "
              "forward pass (capacities %d and %d; %u steps overflowed)\n",
              id, path.c_str(), episodes, total / episodes, pc, pr, Env::dims::ncon, Env::dims::nefc, overflows);
}

}  // namespace

// RLK_CAPACITY_POLICY=<policy file of train_ppo --export-policy> RLK_CAPACITY_ENV=<Hopper-v5 | Walker2d-v5 |
// HalfCheetah-v5 | Ant-v5 | Humanoid-v5> (tests/reference/ has trained policies for Hopper, Walker2d and Ant)
TEST_CASE("the most contacts and rows the robots need under a trained policy", "[.][capacity-measure-policy]") {
  const char* path = std::getenv("RLK_CAPACITY_POLICY");
  const char* id = std::getenv("RLK_CAPACITY_ENV");
  if (!path || !id) {
    WARN("set RLK_CAPACITY_POLICY and RLK_CAPACITY_ENV");
    return;
  }
  if (std::string(id) == "Hopper-v5") measure_peaks_with_policy<hopper<double>>(id, path, 50);
  if (std::string(id) == "Walker2d-v5") measure_peaks_with_policy<walker2d<double>>(id, path, 50);
  if (std::string(id) == "HalfCheetah-v5") measure_peaks_with_policy<half_cheetah<double>>(id, path, 50);
  if (std::string(id) == "Ant-v5") measure_peaks_with_policy<ant<double>>(id, path, 50);
  if (std::string(id) == "Humanoid-v5") measure_peaks_with_policy<humanoid<double>>(id, path, 50);
}
