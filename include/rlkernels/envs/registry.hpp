// rlkernels/envs/registry.hpp
// The bundled environments by their Gymnasium id ("CartPole-v1", "Pendulum-v1", "Hopper-v5",
// "MinAtar/Breakout-v1", ...), each with the parameters and time limit its reference registers for
// it, so programs can take the env name on the command line: visit_env(id, visitor) calls the visitor
// with the env type and its settings.
#pragma once

#include "../core/config.hpp"
#include "acrobot.hpp"
#include "cartpole.hpp"
#include "minatar/asterix.hpp"
#include "minatar/breakout.hpp"
#include "minatar/freeway.hpp"
#include "minatar/seaquest.hpp"
#include "minatar/space_invaders.hpp"
#include "env.hpp"
#include "grid/maze.hpp"
#include "grid/snake.hpp"
#include "mountain_car.hpp"
#include "mujoco/ant.hpp"
#include "mujoco/half_cheetah.hpp"
#include "mujoco/hopper.hpp"
#include "mujoco/humanoid.hpp"
#include "mujoco/humanoid_standup.hpp"
#include "mujoco/inverted_double_pendulum.hpp"
#include "mujoco/inverted_pendulum.hpp"
#include "mujoco/pusher.hpp"
#include "mujoco/reacher.hpp"
#include "mujoco/swimmer.hpp"
#include "mujoco/walker2d.hpp"
#include "mountain_car_continuous.hpp"
#include "pendulum.hpp"
#include "quadrotor.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief What the registry knows about one environment id (the spaces come from the env type).
struct env_info {
  std::string_view id;            ///< Gymnasium id, e.g. "Pendulum-v1"
  std::string_view type_name;     ///< rlkernels type, e.g. "pendulum"
  action_kind action_space;       ///< discrete or continuous
  int observation_size;           ///< scalars per observation
  int num_actions;                ///< discrete: number of actions; continuous: 0
  int action_size;                ///< continuous: scalars per action; discrete: 1 (one index)
  double action_low;              ///< continuous: lower bound of every component; discrete: 0
  double action_high;             ///< continuous: upper bound; discrete: num_actions - 1
  int max_episode_steps;          ///< time limit (truncation); 0 = none
  double reward_threshold;        ///< Gymnasium's reward_threshold ("solved"); NaN where it has none
};

/// @brief One registry entry as the visitor of visit_env() receives it: the env type as
/// `typename std::decay_t<decltype(entry)>::env_type`, the Gymnasium settings in `params` (pass
/// them to vec_env) and the description in `info`.
template <class Env>
struct registered_env {
  using env_type = Env;                ///< the environment type
  typename Env::Params params;         ///< Gymnasium's settings for this id (time limit included)
  env_info info;                       ///< id, spaces, time limit, reward threshold
};

namespace detail {

template <class Env>
registered_env<Env> make_entry(std::string_view id, std::string_view type_name, typename Env::Params params,
                               double reward_threshold) {
  env_info info{};
  info.id = id;
  info.type_name = type_name;
  info.action_space = Env::action_space;
  info.observation_size = Env::observation_size;
  if constexpr (Env::action_space == action_kind::discrete) {
    info.num_actions = Env::num_actions;
    info.action_size = 1;
    info.action_low = 0;
    info.action_high = Env::num_actions - 1;
  } else {
    info.num_actions = 0;
    info.action_size = Env::action_size;
    info.action_low = double(Env::action_low);
    info.action_high = double(Env::action_high);
  }
  info.max_episode_steps = params.max_episode_steps;
  info.reward_threshold = reward_threshold;
  return {params, info};
}

constexpr double no_threshold = std::numeric_limits<double>::quiet_NaN();

}  // namespace detail

/// @brief A registry-style entry for an env of your own (not in the registry), for the code that
/// takes one (the training examples' training_main_for, examples/my_robot): its id, Params, spaces
/// and time limit (params.max_episode_steps).
/// @param id the name it goes by (messages, file names)
/// @param params its parameters (default: the env's defaults)
/// @param reward_threshold the return that counts as solved (default: none, NaN)
template <class Env>
registered_env<Env> make_env_entry(std::string_view id, typename Env::Params params = {},
                                   double reward_threshold = std::numeric_limits<double>::quiet_NaN()) {
  return detail::make_entry<Env>(id, id, params, reward_threshold);
}

}  // namespace rlkernels

// Envs of your own in the registry: a program (the Python module, train_ppo, random_policy) compiled
// with RLK_USER_ENVS_HEADER defined as a quoted header path (CMake: -DRLK_USER_ENVS_HEADER=path, which
// defines it for every target) finds them by id after the bundled ones. The header defines
//   namespace rlkernels_user_envs {
//   template <class Scalar, class F> bool for_each_entry(F&& f) {   // f(entry) for each env; stop when it returns true
//     return f(rlkernels::make_env_entry<rlkernels::mujoco_env<my_task, Scalar>>("MyRobot-v0"));
//   }
//   }
// (examples/my_robot/my_robot_envs.hpp; docs/physics.md, "Your own robot").
#ifdef RLK_USER_ENVS_HEADER
#include RLK_USER_ENVS_HEADER
#endif

namespace rlkernels {
namespace detail {

/// Calls f(entry) for every registered id, in registration order; stops when f returns true.
template <class Scalar, class F>
void for_each_entry(F&& f) {
  typename cartpole<Scalar>::Params cartpole_v0{};
  cartpole_v0.max_episode_steps = 200;
  if (f(make_entry<cartpole<Scalar>>("CartPole-v0", "cartpole", cartpole_v0, 195.0))) return;
  if (f(make_entry<cartpole<Scalar>>("CartPole-v1", "cartpole", {}, 475.0))) return;
  if (f(make_entry<mountain_car<Scalar>>("MountainCar-v0", "mountain_car", {}, -110.0))) return;
  if (f(make_entry<mountain_car_continuous<Scalar>>("MountainCarContinuous-v0", "mountain_car_continuous", {}, 90.0)))
    return;
  if (f(make_entry<pendulum<Scalar>>("Pendulum-v1", "pendulum", {}, no_threshold))) return;
  if (f(make_entry<acrobot<Scalar>>("Acrobot-v1", "acrobot", {}, -100.0))) return;
  // MuJoCo (Gymnasium's v5 envs on the rlkernels physics engine), with Gymnasium's time limits
  // (1000 steps) and reward thresholds (Walker2d-v5 and the Humanoids register none).
  if (f(make_entry<ant<Scalar>>("Ant-v5", "ant", {}, 6000.0))) return;
  if (f(make_entry<half_cheetah<Scalar>>("HalfCheetah-v5", "half_cheetah", {}, 4800.0))) return;
  if (f(make_entry<hopper<Scalar>>("Hopper-v5", "hopper", {}, 3800.0))) return;
  if (f(make_entry<humanoid<Scalar>>("Humanoid-v5", "humanoid", {}, no_threshold))) return;
  if (f(make_entry<humanoid_standup<Scalar>>("HumanoidStandup-v5", "humanoid_standup", {}, no_threshold))) return;
  if (f(make_entry<walker2d<Scalar>>("Walker2d-v5", "walker2d", {}, no_threshold))) return;
  if (f(make_entry<inverted_pendulum<Scalar>>("InvertedPendulum-v5", "inverted_pendulum", {}, 950.0))) return;
  if (f(make_entry<inverted_double_pendulum<Scalar>>("InvertedDoublePendulum-v5", "inverted_double_pendulum", {},
                                                     9100.0)))
    return;
  if (f(make_entry<swimmer<Scalar>>("Swimmer-v5", "swimmer", {}, 360.0))) return;
  if (f(make_entry<reacher<Scalar>>("Reacher-v5", "reacher", {}, -3.75))) return;  // 50 steps
  if (f(make_entry<pusher<Scalar>>("Pusher-v5", "pusher", {}, 0.0))) return;  // 100 steps
  // RLtools' Learning-to-Fly Crazyflie, as the l2f package defines it (l2f.Environment())
  if (f(make_entry<quadrotor<Scalar>>("L2F-Crazyflie-v0", "quadrotor", {}, no_threshold))) return;
  // MinAtar, as the minatar package registers it with Gymnasium: -v0 the full 6-action set, -v1 the
  // game's minimal set; no time limit (gymnax uses 1000 steps, 2500 for Freeway: set
  // params.max_episode_steps).
  constexpr minatar_action_set full = minatar_action_set::full, minimal = minatar_action_set::minimal;
  if (f(make_entry<minatar_asterix<Scalar, full>>("MinAtar/Asterix-v0", "minatar_asterix", {}, no_threshold))) return;
  if (f(make_entry<minatar_asterix<Scalar, minimal>>("MinAtar/Asterix-v1", "minatar_asterix", {}, no_threshold))) return;
  if (f(make_entry<minatar_breakout<Scalar, full>>("MinAtar/Breakout-v0", "minatar_breakout", {}, no_threshold))) return;
  if (f(make_entry<minatar_breakout<Scalar, minimal>>("MinAtar/Breakout-v1", "minatar_breakout", {}, no_threshold)))
    return;
  if (f(make_entry<minatar_freeway<Scalar, full>>("MinAtar/Freeway-v0", "minatar_freeway", {}, no_threshold))) return;
  if (f(make_entry<minatar_freeway<Scalar, minimal>>("MinAtar/Freeway-v1", "minatar_freeway", {}, no_threshold))) return;
  if (f(make_entry<minatar_seaquest<Scalar, full>>("MinAtar/Seaquest-v0", "minatar_seaquest", {}, no_threshold))) return;
  if (f(make_entry<minatar_seaquest<Scalar, minimal>>("MinAtar/Seaquest-v1", "minatar_seaquest", {}, no_threshold)))
    return;
  if (f(make_entry<minatar_space_invaders<Scalar, full>>("MinAtar/SpaceInvaders-v0", "minatar_space_invaders", {},
                                                         no_threshold)))
    return;
  if (f(make_entry<minatar_space_invaders<Scalar, minimal>>("MinAtar/SpaceInvaders-v1", "minatar_space_invaders", {},
                                                            no_threshold)))
    return;
  // Jumanji's Snake-v1 (12x12, time limit 4000 steps as truncation) and the procedural maze
  // (25x25, 7x7 egocentric view, turn/forward actions, time limit 4 * 25 * 25).
  if (f(make_entry<snake<Scalar>>("Snake-v1", "snake", {}, no_threshold))) return;
  if (f(make_entry<maze<Scalar>>("Maze-v0", "maze", {}, no_threshold))) return;
#ifdef RLK_USER_ENVS_HEADER
  // yours (see RLK_USER_ENVS_HEADER above)
  if (rlkernels_user_envs::for_each_entry<Scalar>(f)) return;
#endif
}

/// Levenshtein distance, for "did you mean" suggestions.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min(std::min(above + 1, row[j - 1] + 1), substitute);
      diagonal = above;
    }
  }
  return row[b.size()];
}

inline std::string_view env_name_without_version(std::string_view id) {
  const std::size_t v = id.rfind("-v");
  return v == std::string_view::npos ? id : id.substr(0, v);
}

}  // namespace detail

/// @brief Descriptions of every registered environment, in registration order (for --help
/// listings and for looping over all envs).
inline std::vector<env_info> registered_envs() {
  std::vector<env_info> out;
  detail::for_each_entry<float>([&](const auto& entry) {
    out.push_back(entry.info);
    return false;
  });
  return out;
}

/// True if `id` names a registered environment.
inline bool is_registered(std::string_view id) {
  bool found = false;
  detail::for_each_entry<float>([&](const auto& entry) { return found = entry.info.id == id; });
  return found;
}

/// @brief The error visit_env() throws for an unknown id: names the id, suggests the closest
/// registered one ("Pendulum-v0" -> "Pendulum-v1", "cartpole-v1" -> "CartPole-v1") and lists all.
class unknown_env : public std::invalid_argument {
public:
  /// @param id the id that was asked for
  explicit unknown_env(std::string_view id) : std::invalid_argument(message(id)), id_(id) {}
  /// The id that was asked for.
  const std::string& id() const noexcept { return id_; }

private:
  static std::string message(std::string_view id) {
    std::string all, suggestion;
    std::size_t best = std::string_view::npos;
    for (const env_info& info : registered_envs()) {
      all += all.empty() ? "" : ", ";
      all += info.id;
      std::string lower_id(id), lower_info(info.id);
      for (char& c : lower_id) c = char(std::tolower(static_cast<unsigned char>(c)));
      for (char& c : lower_info) c = char(std::tolower(static_cast<unsigned char>(c)));
      // The same name in another case or version counts as one edit (a later version wins a
      // tie); otherwise up to three edits ("Acrobt-v1") are worth a suggestion.
      std::size_t d = detail::edit_distance(lower_id, lower_info);
      const bool same_name =
          detail::env_name_without_version(lower_id) == detail::env_name_without_version(lower_info);
      if (same_name) d = std::min<std::size_t>(d, 1);
      if ((d < best || (same_name && d == best)) && d <= 3) {
        best = d;
        suggestion = std::string(info.id);
      }
    }
    std::string out = "rlkernels: unknown environment id '" + std::string(id) + "'";
    if (!suggestion.empty()) out += "; did you mean '" + suggestion + "'?";
    return out + " Registered: " + all;
  }
  std::string id_;
};

/// @brief Calls `visitor(entry)` with the registered_env for `id`, and returns what it returns
/// (by value; the visitor must return the same type for every env type).
///
/// @code
/// rlkernels::visit_env("Pendulum-v1", [&](auto entry) {
///   using Env = typename decltype(entry)::env_type;      // rlkernels::pendulum<float>
///   rlkernels::vec_env<Env, rlkernels::openmp_backend> envs(rlkernels::openmp, 4096, seed, entry.params);
///   ...
/// });
/// @endcode
/// @tparam Scalar float (default) or double: the scalar type of the env types passed to the visitor
/// @throw unknown_env (a std::invalid_argument) if no env is registered as `id`
template <class Scalar = float, class Visitor>
auto visit_env(std::string_view id, Visitor&& visitor) {
  using first_entry = registered_env<cartpole<Scalar>>;
  using result = std::decay_t<std::invoke_result_t<Visitor&, first_entry>>;
  if constexpr (std::is_void_v<result>) {
    bool found = false;
    detail::for_each_entry<Scalar>([&](auto entry) {
      if (entry.info.id != id) return false;
      visitor(entry);
      return found = true;
    });
    if (!found) throw unknown_env(id);
  } else {
    std::optional<result> out;
    detail::for_each_entry<Scalar>([&](auto entry) {
      if (entry.info.id != id) return false;
      out.emplace(visitor(entry));
      return true;
    });
    if (!out) throw unknown_env(id);
    return std::move(*out);
  }
}

}  // namespace rlkernels
