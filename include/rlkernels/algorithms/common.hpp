// rlkernels/algorithms/common.hpp
// Pieces every trainer shares: the evaluation result and loop (fresh envs, one episode each), the
// recent-episodes return window that progress lines and stopping rules use, and small detail
// helpers (greedy actions, per-purpose random keys, the hyperparameters text of checkpoints).
#pragma once

#include "../core/backend.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/reduce.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"

#include <algorithm>
#include <chrono>
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

/// Wall-clock marks inside a training iteration that cost no host wait: steady_clock on the host
/// backends (their work is done when the call returns), CUDA events recorded on the stream on
/// CUDA, whose times are read after the iteration's final host read has waited for them anyway.
template <class Backend>
class phase_timer {
 public:
  explicit phase_timer(const Backend&) {}
  /// Records mark k (0 .. 2).
  void mark(int k) { marks_[k] = std::chrono::steady_clock::now(); }
  /// Seconds from mark a to mark b (after the stream has reached mark b).
  double seconds(int a, int b) const { return std::chrono::duration<double>(marks_[b] - marks_[a]).count(); }

 private:
  std::chrono::steady_clock::time_point marks_[3];
};

#if RLK_HAS_CUDA
template <>
class phase_timer<cuda_backend> {
 public:
  explicit phase_timer(const cuda_backend& backend) : stream_(backend.stream), device_(backend.device) {}
  phase_timer(const phase_timer&) = delete;
  phase_timer& operator=(const phase_timer&) = delete;
  phase_timer(phase_timer&& other) noexcept : stream_(other.stream_), device_(other.device_) {
    for (int k = 0; k < 3; ++k) std::swap(events_[k], other.events_[k]);
  }
  phase_timer& operator=(phase_timer&&) = delete;
  ~phase_timer() {
    const device_guard guard(device_, std::nothrow);
    for (cudaEvent_t e : events_)
      if (e) (void)cudaEventDestroy(e);
  }
  void mark(int k) {
    const device_guard guard(device_);  // events belong to the device of the stream they time
    if (!events_[k]) RLK_CUDA_CHECK(cudaEventCreate(&events_[k]));
    RLK_CUDA_CHECK(cudaEventRecord(events_[k], stream_));
  }
  double seconds(int a, int b) const {
    RLK_CUDA_CHECK(cudaEventSynchronize(events_[b]));  // already complete after the iteration's read
    float ms = 0;
    RLK_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[a], events_[b]));
    return double(ms) / 1000.0;
  }

 private:
  cudaStream_t stream_;
  int device_;
  cudaEvent_t events_[3] = {nullptr, nullptr, nullptr};
};
#endif

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

/// Copies `env`'s deferred action flag (vec_env::deferred_error_flag) to `dst` in backend memory,
/// next to a loop's statistics, so that one host read brings both.
template <class VecEnv>
void stage_action_flag(VecEnv& env, unsigned long long* dst) {
  copy(env.backend(), env.deferred_error_flag(), view<unsigned long long>(dst, 1));
}
/// After that read: throws the deferred invalid_action when the flag was set (one more read).
template <class VecEnv>
void raise_if_flagged(VecEnv& env, unsigned long long flag) {
  if (flag != ~0ull) env.check_deferred_actions();
}

/// What an evaluation poll reads: the episodes still running and the env's deferred action flag.
struct evaluation_poll {
  std::uint64_t remaining;
  unsigned long long action_flag;
};

/// One evaluation step's bookkeeping, per env: the reward joins the running return until the
/// env's first episode ends; then the return is kept and the env counts as finished.
template <class T>
struct evaluation_step_kernel {
  const T* rewards;
  const std::uint8_t* terminated;
  const std::uint8_t* truncated;
  double* running;
  double* returns;
  std::uint8_t* finished;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    if (finished[i]) return;
    running[i] += double(rewards[i]);
    if (terminated[i] || truncated[i]) {
      finished[i] = 1;
      returns[i] = running[i];
    }
  }
};
struct unfinished_term {
  const std::uint8_t* finished;
  RLK_HOST_DEVICE std::uint64_t operator()(std::size_t i) const { return finished[i] ? 0u : 1u; }
};
struct plus_u64 {
  RLK_HOST_DEVICE std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a + b; }
};

/// Runs `episodes` fresh envs (seeded with `seed`) until each has finished one episode, asking
/// `act(observations [n, obs] (a view into the env's array), actions [n, width], first_env, step)`
/// for the actions of envs [first_env, first_env + n) in chunks of at most `chunk` rows.
///
/// Host round trips: returns, finished flags and the action check stay in backend memory; the
/// host asks how many episodes are still running (and whether an action was invalid) only after
/// steps 8, 16, 32, ... (doubling) and at max_steps, so a batch whose longest episode has L steps
/// costs about log2(L / 8) + 1 such reads plus the final copy of the returns, whatever the number
/// of episodes. The host backends poll after every step without counting it (free there; the envs
/// then stop exactly when the last episode ends) and count the reads CUDA makes.
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
  RLK_EXPECTS(max_steps >= 1, std::invalid_argument, who, ": max_steps must be >= 1");
  policy_evaluation result;
  env_type env(backend, episodes, seed, params);
  buffer<A, Backend> actions(backend, episodes * width);
  buffer<double, Backend> running(backend, episodes), returns(backend, episodes);
  buffer<std::uint8_t, Backend> finished(backend, episodes);
  buffer<evaluation_poll, Backend> poll(backend, 1);
  const auto read_poll = [&](bool counted) {
    deterministic_sum_into(backend, episodes, unfinished_term{finished.data()}, std::uint64_t(0), plus_u64{},
                           &poll.data()->remaining);
    stage_action_flag(env, &poll.data()->action_flag);
    if constexpr (is_host_backend_v<Backend>) {
      if (!counted) return *poll.data();
    }
    return poll.get(0);
  };
  std::uint64_t left = episodes;
  std::size_t next_poll = 8;
  for (std::size_t step = 0; left > 0; ++step) {
    for (std::size_t first = 0; first < episodes; first += chunk) {
      const std::size_t n = std::min(chunk, episodes - first);
      act(env.observations().cview().subview(first * obs, n * obs), actions.view().subview(first * width, n * width),
          first, step);
    }
    env.step_deferred(actions.cview());
    for_each_index(backend, episodes,
                   evaluation_step_kernel<T>{env.rewards().data(), env.terminated().data(), env.truncated().data(),
                                             running.data(), returns.data(), finished.data()});
    const bool scheduled = step + 1 == next_poll || step + 1 >= max_steps;
    if (scheduled) next_poll *= 2;
    if (scheduled || is_host_backend_v<Backend>) {
      const evaluation_poll p = read_poll(scheduled);
      left = p.remaining;
      if (scheduled || p.action_flag != ~0ull || left == 0) {
        // On the host, an unscheduled poll that ends the loop stands for CUDA's next poll.
        if (!scheduled) count_host_sync(host_sync_kind::read);
        raise_if_flagged(env, p.action_flag);
        RLK_EXPECTS(left == 0 || step + 1 < max_steps, error, who, ": ", left, " of ", episodes,
                    " evaluation episodes did not end within ", max_steps, " steps");
      }
    }
  }
  result.returns = returns.to_host();
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
