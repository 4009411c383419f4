// rlkernels/algorithms/common.hpp
// Pieces every trainer shares: the evaluation result and loop (fresh envs, one episode each), the
// recent-episodes return window that progress lines and stopping rules use, and small detail
// helpers (greedy actions, per-purpose random keys, the hyperparameters text of checkpoints).
#pragma once

#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/vec_env.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief Result of a trainer's evaluate(): the return of the first episode of each evaluation env.
struct policy_evaluation {
  std::vector<double> returns;  ///< one per episode
  double mean = 0;              ///< mean return
  double std = 0;               ///< population standard deviation
  double min = 0;               ///< smallest return
  double max = 0;               ///< largest return
};
/// The name PPO's evaluate() used first.
using ppo_evaluation = policy_evaluation;

/// @brief Mean return over the most recent completed episodes, at least `min_episodes` of them,
/// counted in whole iterations (SB3's ep_rew_mean uses the last 100 episodes): feed it each
/// iteration's episode count and return sum.
class return_window {
 public:
  /// @param min_episodes how many recent episodes the mean covers at least (100 in SB3)
  explicit return_window(std::uint64_t min_episodes = 100) : min_(min_episodes ? min_episodes : 1) {}
  /// Adds one iteration's completed episodes.
  void add(std::uint64_t episodes, double return_sum) {
    if (episodes == 0) return;
    entries_.push_back({episodes, return_sum});
    count_ += episodes;
    sum_ += return_sum;
    while (!entries_.empty() && count_ - entries_.front().first >= min_) {
      count_ -= entries_.front().first;
      sum_ -= entries_.front().second;
      entries_.pop_front();
    }
  }
  /// Episodes the mean covers (fewer than min_episodes only early in training).
  std::uint64_t episodes() const noexcept { return count_; }
  /// True once at least min_episodes episodes have completed.
  bool full() const noexcept { return count_ >= min_; }
  /// The mean return (NaN before the first episode).
  double mean() const noexcept { return count_ ? sum_ / double(count_) : std::numeric_limits<double>::quiet_NaN(); }

 private:
  std::uint64_t min_;
  std::deque<std::pair<std::uint64_t, double>> entries_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

namespace detail {

/// actions[i] = argmax_a values[i, a] (the lowest index among ties, like torch.argmax): the greedy
/// action of a categorical policy's logits or of a Q-network's values [B, A].
template <class T>
struct argmax_kernel {
  const T* logits;
  std::int32_t* actions;
  std::size_t num_actions;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    const T* row = logits + i * num_actions;
    std::size_t best = 0;
    for (std::size_t a = 1; a < num_actions; ++a)
      if (row[a] > row[best]) best = a;
    actions[i] = std::int32_t(best);
  }
};

/// A key for one purpose of a run's randomness (exploration, replay sampling, initial weights),
/// derived from the run's seed with SplitMix64's finaliser, so that it never shares Philox
/// streams with the envs, which draw from rng(seed, env index).
RLK_HOST_DEVICE constexpr std::uint64_t derive_key(std::uint64_t seed, std::uint64_t purpose) noexcept {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (purpose + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Builds a config's hyperparameters() text: one "key=value\n" line per field, numbers written so
/// that they read back exactly (17 significant digits), vectors comma-separated, bools true/false.
class hyperparameter_lines {
 public:
  /// Appends "key=value\n".
  template <class V>
  hyperparameter_lines& add(const char* key, const V& value) {
    out_ << key << '=';
    write(value);
    out_ << '\n';
    return *this;
  }
  /// The text.
  std::string str() const { return out_.str(); }

 private:
  template <class V>
  void write(const V& v) {
    if constexpr (std::is_same_v<V, bool>) {
      out_ << (v ? "true" : "false");
    } else if constexpr (std::is_enum_v<V>) {
      out_ << static_cast<long long>(v);
    } else if constexpr (std::is_floating_point_v<V>) {
      out_ << std::setprecision(17) << v;
    } else if constexpr (std::is_same_v<V, std::vector<int>>) {
      for (std::size_t i = 0; i < v.size(); ++i) out_ << (i ? "," : "") << v[i];
    } else {
      out_ << v;
    }
  }
  std::ostringstream out_;
};

/// Runs `episodes` fresh envs (seeded with `seed`) until each has finished one episode, asking
/// `act(observations [n, obs] (a view into the env's array), actions [n, width], first_env, step)`
/// for the actions of envs [first_env, first_env + n) in chunks of at most `chunk` rows.
template <class Env, class Backend, class Act>
policy_evaluation evaluate_policy(const Backend& backend, const typename Env::Params& params, std::size_t episodes,
                                  std::uint64_t seed, std::size_t chunk, std::size_t max_steps, const char* who,
                                  Act&& act) {
  using env_type = vec_env<Env, Backend>;
  using T = typename env_type::scalar_type;
  using A = typename env_type::action_type;
  constexpr std::size_t obs = std::size_t(env_type::observation_size);
  constexpr std::size_t width = std::size_t(env_type::action_width);
  RLK_EXPECTS(episodes >= 1, std::invalid_argument, who, ": episodes must be >= 1");
  RLK_EXPECTS(chunk >= 1, std::invalid_argument, who, ": chunk must be >= 1");
  policy_evaluation result;
  result.returns.assign(episodes, 0.0);
  std::vector<char> finished(episodes, 0);
  std::size_t remaining = episodes;
  env_type env(backend, episodes, seed, params);
  buffer<A, Backend> actions(backend, episodes * width);
  std::vector<double> running(episodes, 0.0);
  for (std::size_t step = 0; remaining > 0; ++step) {
    RLK_EXPECTS(step < max_steps, error, who, ": ", remaining, " of ", episodes,
                " evaluation episodes did not end within ", max_steps, " steps");
    for (std::size_t first = 0; first < episodes; first += chunk) {
      const std::size_t n = std::min(chunk, episodes - first);
      act(env.observations().cview().subview(first * obs, n * obs), actions.view().subview(first * width, n * width),
          first, step);
    }
    env.step(actions.cview());
    const std::vector<T> r = env.rewards().to_host();
    const std::vector<std::uint8_t> te = env.terminated().to_host(), tr = env.truncated().to_host();
    for (std::size_t i = 0; i < episodes; ++i) {
      if (finished[i]) continue;
      running[i] += double(r[i]);
      if (te[i] || tr[i]) {
        finished[i] = 1;
        result.returns[i] = running[i];
        --remaining;
      }
    }
  }
  double sum = 0, sq = 0;
  result.min = result.max = result.returns[0];
  for (double x : result.returns) {
    sum += x;
    result.min = std::min(result.min, x);
    result.max = std::max(result.max, x);
  }
  result.mean = sum / double(episodes);
  for (double x : result.returns) sq += (x - result.mean) * (x - result.mean);
  result.std = std::sqrt(sq / double(episodes));
  return result;
}

}  // namespace detail
}  // namespace rlkernels
