// rlkernels/algorithms/dqn_kernels.hpp
// The kernels, random keys and device statistics record of DQN's trainer (rlkernels::detail):
// epsilon-greedy actions, the taken actions' Q values, the divergence check.
#pragma once

#include "../core/backend.hpp"
#include "../core/random.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"
#include "../losses/dqn.hpp"
#include "common.hpp"
#include "data_parallel.hpp"
#include "dqn_config.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rlkernels {
namespace detail {

/// Epsilon-greedy actions: row i draws u from rng(key, first_stream + i, draw); with u < epsilon a
/// uniform action from the same generator, else argmax_a q[i, a] (lowest index among ties).
/// q may be null when epsilon >= 1 (every action is random then).
template <class T>
struct epsilon_greedy_kernel {
  const T* q;
  std::int32_t* actions;
  std::size_t num_actions;
  double epsilon;
  std::uint64_t key;
  std::uint64_t first_stream;
  std::uint64_t draw;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(key, first_stream + i, draw);
    if (gen.uniform<double>() < epsilon) {
      actions[i] = std::int32_t(gen.uniform_int(std::uint32_t(num_actions)));
      return;
    }
    argmax_kernel<T>{q, actions, num_actions}(i);
  }
};

/// Q(s_i, a_i) of the taken actions, for their mean.
template <class T>
struct taken_q_term {
  const T* q;
  const std::int32_t* actions;
  std::size_t num_actions;
  RLK_HOST_DEVICE double operator()(std::size_t i) const { return double(q[i * num_actions + std::size_t(actions[i])]); }
};
struct dqn_plus {
  RLK_HOST_DEVICE double operator()(double a, double b) const { return a + b; }
};

/// What an iteration leaves in backend memory for the host to read once at its end.
struct dqn_device_stats {
  episode_statistics episodes;  // the episodes completed in the iteration's env step
  td_loss_result loss;          // the last gradient step's TD loss
  double q_sum;                 // sum of Q(s_i, a_i) over the last gradient step's batch
  double grad_norm;             // the last gradient step's norm before clipping
  std::uint64_t bad_step;       // the first gradient step (1-based, of the run) with a non-finite loss; 0: none
  double bad_loss;              // that loss
  unsigned long long action_flag;  // a copy of the env's deferred action flag (~0: all valid)
  failed_step_counts failures;     // the envs' failed steps so far (this rank's; all ranks' once gathered)
};

/// Remembers the first gradient step whose loss is not finite (one index; bad_step is cleared at
/// the start of each iteration).
struct dqn_divergence_kernel {
  dqn_device_stats* s;
  std::uint64_t step;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const double l = s->loss.loss;
    if (!(l - l == 0.0) && s->bad_step == 0) {
      s->bad_step = step;
      s->bad_loss = l;
    }
  }
};
struct dqn_start_kernel {
  dqn_device_stats* s;
  RLK_HOST_DEVICE void operator()(std::size_t) const { s->bad_step = 0; }
};

/// Purposes of derive_key in DQN.
enum dqn_key : std::uint64_t {
  dqn_key_weights = 1,
  dqn_key_exploration = 2,
  dqn_key_replay = 3,
  dqn_key_evaluation = 4,
  dqn_key_keep_best = 5
};

}  // namespace detail

}  // namespace rlkernels
