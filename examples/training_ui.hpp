// examples/training_ui.hpp
// What the training examples (train_ppo, train_dqn, train_sac, train_td3) share and that has nothing to
// do with the algorithm: the command line (common options, a table of hyperparameter options that
// parses and prints --help), the backend and env dispatch, and the training loop's user interface
// (one updating progress line, the CSV learning curve and its PNG, checkpoints and resuming, the
// final deterministic evaluation), and the data-parallel job (the communicator a launcher's
// environment or --distributed asks for; rank 0 reports for the whole job). Not part of the
// library: an example's helper, included by path.
#pragma once

#include <rlkernels/algorithms/common.hpp>
#include <rlkernels/algorithms/policy_file.hpp>
#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/communicator.hpp>
#if defined(RLK_EXAMPLE_MPI)
#include <rlkernels/distributed/mpi.hpp>
#endif
#if defined(RLK_EXAMPLE_NCCL) && RLK_HAS_CUDA
#include <rlkernels/distributed/nccl.hpp>
#endif
#include <rlkernels/envs/failed_steps.hpp>
#include <rlkernels/envs/mujoco/full_capacity.hpp>
#include <rlkernels/envs/mujoco/task_env.hpp>
#include <rlkernels/envs/param_fields.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/io/checkpoint.hpp>
#include <rlkernels/nn/mlp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#ifndef RLK_PLOT_SCRIPT
#define RLK_PLOT_SCRIPT "scripts/plot_learning_curve.py"
#endif

namespace rlk_example {

// ---- which envs an example trains (MLPs on low-dimensional observations; the registry's grid
// and MinAtar envs are left out to keep the examples' compile time down) ----

/// The classic-control envs.
template <class Env>
struct classic_control : std::false_type {};
template <class S>
struct classic_control<rlkernels::cartpole<S>> : std::true_type {};
template <class S>
struct classic_control<rlkernels::mountain_car<S>> : std::true_type {};
template <class S>
struct classic_control<rlkernels::mountain_car_continuous<S>> : std::true_type {};
template <class S>
struct classic_control<rlkernels::pendulum<S>> : std::true_type {};
template <class S>
struct classic_control<rlkernels::acrobot<S>> : std::true_type {};

/// The MuJoCo envs (Ant-v5, HalfCheetah-v5, Hopper-v5, Humanoid-v5, HumanoidStandup-v5,
/// Walker2d-v5, InvertedPendulum-v5, InvertedDoublePendulum-v5).
template <class Env>
struct mujoco_locomotion : std::false_type {};
template <class S, bool E, bool A, bool B, bool C, bool D, class Dims>  // any capacities
struct mujoco_locomotion<rlkernels::humanoid<S, E, A, B, C, D, Dims>> : std::true_type {};
template <class S, bool E, bool A, bool B, bool C, bool D, class Dims>
struct mujoco_locomotion<rlkernels::humanoid_standup<S, E, A, B, C, D, Dims>> : std::true_type {};
template <class S, bool E, bool C, class Dims>
struct mujoco_locomotion<rlkernels::ant<S, E, C, Dims>> : std::true_type {};
template <class S, bool E, class Dims>
struct mujoco_locomotion<rlkernels::half_cheetah<S, E, Dims>> : std::true_type {};
template <class S, bool E, class Dims>
struct mujoco_locomotion<rlkernels::hopper<S, E, Dims>> : std::true_type {};
template <class S, bool E, class Dims>
struct mujoco_locomotion<rlkernels::walker2d<S, E, Dims>> : std::true_type {};
template <class S>
struct mujoco_locomotion<rlkernels::inverted_pendulum<S>> : std::true_type {};
template <class S, bool E>
struct mujoco_locomotion<rlkernels::swimmer<S, E>> : std::true_type {};
template <class S>
struct mujoco_locomotion<rlkernels::inverted_double_pendulum<S>> : std::true_type {};
template <class S>
struct mujoco_locomotion<rlkernels::reacher<S>> : std::true_type {};
template <class S>
struct mujoco_locomotion<rlkernels::pusher<S>> : std::true_type {};
template <class Task, class S>
struct mujoco_locomotion<rlkernels::mujoco_env<Task, S>> : std::true_type {};  // yours (RLK_USER_ENVS_HEADER)

/// What PPO trains: the classic-control and the MuJoCo locomotion envs.
template <class Env>
struct classic_control_or_locomotion : std::bool_constant<classic_control<Env>::value || mujoco_locomotion<Env>::value> {};

/// The classic-control envs with discrete actions (DQN).
template <class Env>
struct discrete_classic_control
    : std::bool_constant<classic_control<Env>::value && Env::action_space == rlkernels::action_kind::discrete> {};

/// The envs with continuous actions (SAC, TD3): the continuous classic-control ones and the MuJoCo
/// locomotion envs.
template <class Env>
struct continuous_actions : std::bool_constant<Env::action_space == rlkernels::action_kind::continuous> {};

// ---------------------------------------------------------------------------------------------
// Values on the command line
// ---------------------------------------------------------------------------------------------

/// true/false, 1/0 or on/off.
inline bool parse_bool(const std::string& flag, const std::string& v) {
  if (v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  throw std::invalid_argument(flag + " takes true or false, got '" + v + "'");
}

/// A non-negative integer, the whole string (std::stoull alone takes "-1" and "12abc").
inline std::uint64_t parse_count(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  unsigned long long x = 0;
  try {
    if (!v.empty() && v[0] != '-' && v[0] != '+') x = std::stoull(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw std::invalid_argument(flag + " takes a non-negative integer, got '" + v + "'");
  return x;
}

/// A number, the whole string.
inline double parse_real(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw std::invalid_argument(flag + " takes a number, got '" + v + "'");
  return x;
}

/// Comma-separated non-negative integers, e.g. "64,64" (layer widths).
inline std::vector<int> parse_int_list(const std::string& flag, const std::string& v) {
  std::vector<int> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = v.find(',', pos);
    const std::uint64_t x = parse_count(flag, v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (x > std::uint64_t(std::numeric_limits<int>::max())) throw std::invalid_argument(flag + ": " + v + " is too large");
    out.push_back(int(x));
    if (comma == std::string::npos) return out;
    pos = comma + 1;
  }
}

/// "64,64".
inline std::string int_list_string(const std::vector<int>& h) {
  std::string s;
  for (std::size_t i = 0; i < h.size(); ++i) s += (i ? "," : "") + std::to_string(h[i]);
  return s;
}

/// @brief One hyperparameter option: `--flag VALUE` sets part of a Config. `help` empty: the option
/// is listed compactly ("--lr X") under the hyperparameters in --help; otherwise on a line of its own.
template <class Config>
struct option {
  std::string flag;                                            ///< "--lr"
  std::string metavar;                                         ///< "X" in the help
  std::function<void(Config&, const std::string& value)> set;  ///< parses value into the config
  std::string help;                                            ///< one line, or empty

  /// An option of a base of the config (off_policy_config's fields in sac_config) is an option of the config.
  template <class Derived, class = std::enable_if_t<std::is_base_of_v<Config, Derived> && !std::is_same_v<Config, Derived>>>
  operator option<Derived>() const {
    return {flag, metavar, [set = set](Derived& c, const std::string& v) { set(c, v); }, help};
  }
};

/// An option that sets the field `member`, parsed by its type: bool (true/false), an integer
/// (non-negative), a floating-point number, std::vector<int> ("64,64") or std::string.
template <class Config, class Field>
option<Config> field(std::string flag, Field Config::*member, std::string metavar = "", std::string help = "") {
  if (metavar.empty()) {
    if constexpr (std::is_same_v<Field, bool>) metavar = "B";
    else if constexpr (std::is_integral_v<Field>) metavar = "N";
    else if constexpr (std::is_floating_point_v<Field>) metavar = "X";
    else if constexpr (std::is_same_v<Field, std::vector<int>>) metavar = "64,64";
    else metavar = "S";
  }
  auto set = [flag, member](Config& c, const std::string& v) {
    Field& f = c.*member;
    if constexpr (std::is_same_v<Field, bool>) {
      f = parse_bool(flag, v);
    } else if constexpr (std::is_integral_v<Field>) {
      const std::uint64_t x = parse_count(flag, v);
      if (x > std::uint64_t(std::numeric_limits<Field>::max())) throw std::invalid_argument(flag + ": " + v + " is too large");
      f = Field(x);
    } else if constexpr (std::is_floating_point_v<Field>) {
      f = Field(parse_real(flag, v));
    } else if constexpr (std::is_same_v<Field, std::vector<int>>) {
      f = parse_int_list(flag, v);
    } else {
      static_assert(std::is_same_v<Field, std::string>, "field(): bool, integer, floating point, vector<int> or string");
      f = v;
    }
  };
  return {std::move(flag), std::move(metavar), std::move(set), std::move(help)};
}

/// `--activation tanh|relu|elu`: the config's hidden_activation.
template <class Config>
option<Config> activation_option() {
  return {"--activation", "tanh|relu|elu",
          [](Config& c, const std::string& v) {
            if (v == "tanh") c.hidden_activation = rlkernels::activation::tanh;
            else if (v == "relu") c.hidden_activation = rlkernels::activation::relu;
            else if (v == "elu") c.hidden_activation = rlkernels::activation::elu;
            else throw std::invalid_argument("--activation takes tanh, relu or elu, got '" + v + "'");
          },
          ""};
}

/// The data-parallel and gradient accumulation options of every trainer (data_parallel_settings).
template <class Config>
std::vector<option<Config>> data_parallel_options(const char* batch_name) {
  return {{"--reduction", "ordered|native",
           [](Config& c, const std::string& v) {
             if (v == "ordered") c.gradient_reduction = rlkernels::reduction_order::ordered;
             else if (v == "native") c.gradient_reduction = rlkernels::reduction_order::native;
             else throw std::invalid_argument("--reduction takes ordered or native, got '" + v + "'");
           },
           "data parallel: add the ranks' gradients in rank order (default; bit-reproducible) or by MPI's/NCCL's own "
           "all-reduce"},
          field<Config, std::size_t>("--grad-accum", &Config::gradient_accumulation_steps, "K",
                std::string("compute each ") + batch_name +
                    "'s gradient in K micro-batches (the same update, less memory; default 1)"),
          field<Config, std::size_t>("--env-shards", &Config::env_shards, "R",
                "one process as R data-parallel ranks: the envs in R shards that sample and reduce as ranks do, so "
                "--num-envs R*N --env-shards R gives the run of `mpirun -np R` with --num-envs N bit for bit "
                "(default 1; under a launcher every rank is one shard)")};
}

/// @brief Checks --env-shards against --num-envs (after the options are applied) and against the
/// job: a data-parallel rank is one shard.
/// @throw std::invalid_argument naming the options
template <class Config>
void check_env_shards(const Config& c, int ranks) {
  if (c.env_shards == 0 || c.num_envs % c.env_shards != 0)
    throw std::invalid_argument("--env-shards " + std::to_string(c.env_shards) + " must be >= 1 and divide --num-envs (" +
                                std::to_string(c.num_envs) + "): each shard steps num_envs / R envs");
  if (ranks > 1 && c.env_shards != 1)
    throw std::invalid_argument("--env-shards " + std::to_string(c.env_shards) + " with " + std::to_string(ranks) +
                                " ranks: under a launcher every rank is one shard (leave --env-shards at 1; it "
                                "reproduces R ranks in one process)");
}

/// @brief --total-steps, --num-envs, --buffer-size, --batch-size and --learning-starts: the
/// replay data options (off_policy_config's) that train_sac's and train_td3's tables start with.
template <class Config>
std::vector<option<Config>> off_policy_data_options() {
  return {field("--total-steps", &Config::total_timesteps), field("--num-envs", &Config::num_envs),
          field("--buffer-size", &Config::buffer_size), field("--batch-size", &Config::batch_size),
          field("--learning-starts", &Config::learning_starts)};
}

/// @brief `options`, then the options every trainer's table ends with: --hidden (shown with
/// `hidden_metavar`), --activation and data_parallel_options(batch_name).
template <class Config>
std::vector<option<Config>> with_network_options(std::vector<option<Config>> options, const char* hidden_metavar,
                                                 const char* batch_name) {
  options.push_back(field("--hidden", &Config::hidden_sizes, hidden_metavar));
  options.push_back(activation_option<Config>());
  for (auto& o : data_parallel_options<Config>(batch_name)) options.push_back(std::move(o));
  return options;
}

/// Trainer configs with the checkpoint fields of the trainer convention (checkpoint_dir,
/// checkpoint_every, checkpoint_keep).
template <class Config, class = void>
struct has_checkpoint_fields : std::false_type {};
template <class Config>
struct has_checkpoint_fields<Config, std::void_t<decltype(std::declval<Config&>().checkpoint_dir = std::string()),
                                                 decltype(std::declval<Config&>().checkpoint_every = 1),
                                                 decltype(std::declval<Config&>().checkpoint_keep = 1)>>
    : std::true_type {};
/// Off-policy configs: whether checkpoints include the replay buffer.
template <class Config, class = void>
struct has_checkpoint_buffers : std::false_type {};
template <class Config>
struct has_checkpoint_buffers<Config, std::void_t<decltype(std::declval<Config&>().checkpoint_buffers = true)>>
    : std::true_type {};
/// Trainers with load_checkpoint(path) and bind_checkpoint(checkpoint&).
template <class Trainer, class = void>
struct has_checkpoints : std::false_type {};
template <class Trainer>
struct has_checkpoints<Trainer, std::void_t<decltype(std::declval<Trainer&>().load_checkpoint(std::string())),
                                            decltype(std::declval<Trainer&>().bind_checkpoint(
                                                std::declval<rlkernels::checkpoint&>()))>> : std::true_type {};

/// Trainers that keep their automatic checkpoints' directory: checkpoints().
template <class Trainer, class = void>
struct has_automatic_checkpoints : std::false_type {};
template <class Trainer>
struct has_automatic_checkpoints<Trainer, std::void_t<decltype(std::declval<const Trainer&>().checkpoints())>>
    : std::true_type {};

/// Trainers that train data-parallel: comm() and save_checkpoint(checkpoint_directory).
template <class Trainer, class = void>
struct has_communicator : std::false_type {};
template <class Trainer>
struct has_communicator<Trainer, std::void_t<decltype(std::declval<Trainer&>().comm().rank()),
                                             decltype(std::declval<Trainer&>().save_checkpoint(
                                                 std::declval<const rlkernels::checkpoint_directory&>()))>>
    : std::true_type {};

/// The checkpoint options of a config that has the checkpoint fields (none otherwise).
template <class Config>
std::vector<option<Config>> checkpoint_options() {
  std::vector<option<Config>> out;
  if constexpr (has_checkpoint_fields<Config>::value) {
    out.push_back(field("--checkpoint-dir", &Config::checkpoint_dir, "DIR",
                        "save a checkpoint into DIR at the end (and every --checkpoint-every iterations)"));
    out.push_back(field("--checkpoint-every", &Config::checkpoint_every, "N",
                        "iterations between checkpoints (default 0: none)"));
    out.push_back(field("--checkpoint-keep", &Config::checkpoint_keep, "K", "newest checkpoints kept (default 3)"));
  }
  if constexpr (has_checkpoint_buffers<Config>::value) {
    out.push_back(field("--checkpoint-buffers", &Config::checkpoint_buffers, "B",
                        "include the replay buffer (large; default true)"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------------------------

/// @brief What an example is: names and defaults that the shared parts print and use.
struct program {
  std::string name;             ///< "train_ppo" (messages; the CUDA build is name + "_cuda")
  std::string algorithm;        ///< "PPO" (the plot's title)
  std::string file_prefix;      ///< "ppo": the curve is <out>/<prefix>_<env>_seed<seed>.csv/.png
  std::string default_env;      ///< "CartPole-v1"
  std::uint64_t csv_every = 0;  ///< env steps between CSV rows (0: one row per iteration)
  bool exports_policy = false;  ///< takes --export-policy FILE (the trainer writes it)
  bool data_parallel = false;   ///< trains over several processes (--distributed)
};

/// @brief The options every training example has.
struct run_options {
  std::string env;                            ///< Gymnasium id
  std::string preset;                         ///< whose preset to start from (empty: env's)
  std::string backend = RLK_HAS_CUDA ? "cuda" : "openmp";  ///< serial, openmp (host build) or cuda (the _cuda build)
  std::uint64_t seed = 1;                     ///< becomes config.seed
  std::string out_dir = ".";                  ///< where the CSV and PNG go
  std::string plot_script = RLK_PLOT_SCRIPT;  ///< scripts/plot_learning_curve.py
  bool plot = true;                           ///< draw the PNG
  bool quiet = false;                         ///< no progress line
  std::size_t eval_episodes = 100;            ///< deterministic evaluation episodes at the end (0: none)
  double stop_at = std::nan("");  ///< stop once the mean return of the last 100 episodes reaches this
  std::string resume;             ///< checkpoint to load before training (empty: none)
  bool evaluate_only = false;     ///< with resume: evaluate the checkpoint's policy, no training
  std::string export_policy;      ///< where to write the trained deterministic policy (empty: nowhere)
  std::string distributed = "auto";   ///< auto (from the launcher's environment), none, mpi or nccl
  double distributed_timeout = 300;   ///< seconds a collective waits for the other ranks
  /// Stop the run once more than this fraction of its env steps failed (the physics could not take
  /// them: over capacity or unstable; each ended its episode as truncated). 1 never stops.
  double max_failed_fraction = 1e-3;
  /// --env-param NAME=VALUE, in order: fields of the env's Params (rlkernels/envs/param_fields.hpp)
  /// set before the envs are built; they apply to training and to the final evaluation
  std::vector<std::pair<std::string, std::string>> env_params;
};

/// @brief A parsed command line: the common options and the trainer's config (the env's preset,
/// then the hyperparameter options, then seed and checkpoint options; validated).
template <class Config>
struct command_line {
  run_options run;  ///< common options
  Config config;    ///< hyperparameters
};

namespace detail {

inline void print_help(const char* argv0, const std::vector<std::pair<std::string, std::string>>& described,
                       const std::vector<std::string>& compact,
                       const std::vector<std::pair<std::string, std::string>>& checkpoints) {
  std::printf("usage: %s [--env ID] [--backend serial|openmp|cuda] [--seed S] [options]\n", argv0);
  auto lines = [](const std::vector<std::pair<std::string, std::string>>& table) {
    std::size_t width = 19;
    for (const auto& d : table) width = std::max(width, d.first.size());
    for (const auto& d : table) std::printf("  %-*s %s\n", int(width), d.first.c_str(), d.second.c_str());
  };
  lines(described);
  std::printf("hyperparameters (defaults: the preset of the env, printed at the start):\n");
  std::string line = " ";
  for (const std::string& c : compact) {
    if (line.size() > 1 && line.size() + 1 + c.size() > 100) {
      std::printf("%s\n", line.c_str());
      line = " ";
    }
    line += " " + c;
  }
  if (line.size() > 1) std::printf("%s\n", line.c_str());
  if (!checkpoints.empty()) {
    std::printf("checkpoints:\n");
    lines(checkpoints);
  }
}

}  // namespace detail

/// @brief Parses the command line of a training example. `preset(env_id)` gives the config the
/// hyperparameter options override; --seed and the checkpoint options are applied after them and
/// the result is validated (config.validate() throws std::invalid_argument naming a bad field).
/// --help prints the usage and exits.
template <class Config, class Preset>
command_line<Config> parse_command_line(int argc, char** argv, const program& p,
                                        const std::vector<option<Config>>& hyperparameters, Preset&& preset) {
  std::vector<option<Config>> table = hyperparameters;
  const std::vector<option<Config>> checkpoint = checkpoint_options<Config>();
  table.insert(table.end(), checkpoint.begin(), checkpoint.end());

  command_line<Config> out;
  run_options& o = out.run;
  o.env = p.default_env;
  std::vector<std::pair<const option<Config>*, std::string>> overrides;  // applied after the preset
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--env") o.env = value();
    else if (arg == "--preset") o.preset = value();
    else if (arg == "--backend") o.backend = value();
    else if (arg == "--seed") o.seed = parse_count(arg, value());
    else if (arg == "--out") o.out_dir = value();
    else if (arg == "--plot-script") o.plot_script = value();
    else if (arg == "--no-plot") o.plot = false;
    else if (arg == "--quiet") o.quiet = true;
    else if (arg == "--env-param") {
      const std::string v = value();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        throw std::invalid_argument("--env-param takes NAME=VALUE (a field of the env's Params), not '" + v + "'");
      o.env_params.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    }
    else if (arg == "--eval-episodes") o.eval_episodes = parse_count(arg, value());
    else if (arg == "--stop-at") o.stop_at = parse_real(arg, value());
    else if (arg == "--max-failed-fraction") {
      o.max_failed_fraction = parse_real(arg, value());
      if (!(o.max_failed_fraction >= 0 && o.max_failed_fraction <= 1))
        throw std::invalid_argument("--max-failed-fraction must be in [0, 1], got " + std::string(argv[i]));
    }
    else if (arg == "--resume" && !checkpoint.empty()) o.resume = value();
    else if (arg == "--evaluate-only" && !checkpoint.empty()) o.evaluate_only = true;
    else if (arg == "--export-policy" && p.exports_policy) o.export_policy = value();
    else if (arg == "--distributed" && p.data_parallel) o.distributed = value();
    else if (arg == "--distributed-timeout" && p.data_parallel) o.distributed_timeout = parse_real(arg, value());
    else if (arg == "--help" || arg == "-h") {
      std::vector<std::string> compact;
      std::vector<std::pair<std::string, std::string>> described;
      for (const option<Config>& opt : hyperparameters) {
        if (opt.help.empty()) compact.push_back(opt.flag + " " + opt.metavar);
        else described.push_back({opt.flag + " " + opt.metavar, opt.help});
      }
      std::vector<std::pair<std::string, std::string>> general = {
          {"--env ID", "Gymnasium id (default " + p.default_env + "; random_policy --list shows them)"},
          {"--backend B", RLK_HAS_CUDA ? std::string("cuda (the default here; serial and openmp are in ") + p.name + ")"
                                       : "serial, openmp (default) or cuda (in " + p.name + "_cuda)"},
          {"--seed S", "seed of envs, weights and sampling (default 1)"},
          {"--preset ID", "start from the hyperparameters tuned for env ID (default: --env's own; e.g. Ant-v5 "
                          "with --preset Humanoid-v5)"},
          {"--out DIR", "where the CSV and PNG go (default .)"},
          {"--no-plot", "write the CSV only"},
          {"--eval-episodes K", "deterministic evaluation episodes at the end (default 100; 0 skips)"},
          {"--stop-at R", "stop once the mean return of the last 100 episodes reaches R"},
          {"--max-failed-fraction X", "stop once more than X of the env steps failed in the physics (over capacity "
                                      "or unstable; each truncates its episode; default 0.001, 1: never)"},
          {"--env-param NAME=VALUE", "set a field of the env's parameters, for training and evaluation (repeatable; "
                                     "an unknown NAME lists the env's fields)"},
          {"--quiet", "no progress line"}};
      if (p.exports_policy)
        general.push_back({"--export-policy FILE",
                           "write the trained deterministic policy (observation normaliser, if any, and actor) as text (docs/training.md)"});
      if (p.data_parallel) {
        general.push_back({"--distributed D",
                           "auto (default: MPI under mpirun/srun, NCCL under torchrun-style RANK/WORLD_SIZE), none, mpi "
                           "or nccl (docs/distributed.md); --num-envs is per rank"});
        general.push_back({"--distributed-timeout S", "seconds a rank waits for the others before it fails (default 300)"});
      }
      general.insert(general.end(), described.begin(), described.end());
      std::vector<std::pair<std::string, std::string>> checkpoints;
      for (const option<Config>& opt : checkpoint) checkpoints.push_back({opt.flag + " " + opt.metavar, opt.help});
      if (!checkpoint.empty())
        checkpoints.push_back({"--resume FILE", "load FILE (a checkpoint of the same settings) and train on"});
      if (!checkpoint.empty())
        checkpoints.push_back({"--evaluate-only", "with --resume: only evaluate the checkpoint's policy (no training, no CSV)"});
      detail::print_help(argv[0], general, compact, checkpoints);
      std::exit(0);
    } else if (arg.rfind("--", 0) == 0) {
      const option<Config>* match = nullptr;
      for (const option<Config>& opt : table)
        if (opt.flag == arg) match = &opt;
      if (!match) throw std::invalid_argument("unknown option " + arg + " (try --help)");
      overrides.push_back({match, value()});
    } else {
      throw std::invalid_argument("unexpected argument '" + arg + "' (try --help)");
    }
  }
  if (!o.preset.empty()) {
    bool known = false;
    for (const rlkernels::env_info& e : rlkernels::registered_envs()) known |= e.id == o.preset;
    if (!known) throw std::invalid_argument("--preset " + o.preset + ": not a registered env id (random_policy --list)");
  }
  out.config = preset(o.preset.empty() ? o.env : o.preset);
  for (const auto& [opt, v] : overrides) opt->set(out.config, v);
  out.config.seed = o.seed;
  check_env_shards(out.config, 1);
  out.config.validate();
  if (o.evaluate_only && o.resume.empty()) throw std::invalid_argument("--evaluate-only needs --resume FILE");
  if (o.evaluate_only && o.eval_episodes == 0) throw std::invalid_argument("--evaluate-only needs --eval-episodes >= 1");
  if (o.distributed != "auto" && o.distributed != "none" && o.distributed != "mpi" && o.distributed != "nccl")
    throw std::invalid_argument("--distributed takes auto, none, mpi or nccl, got '" + o.distributed + "'");
  if (!(o.distributed_timeout > 0)) throw std::invalid_argument("--distributed-timeout must be > 0");
  return out;
}

// ---------------------------------------------------------------------------------------------
// The data-parallel job
// ---------------------------------------------------------------------------------------------

/// @brief The communicators of a data-parallel run: `bootstrap` (MPI, when NCCL is started from
/// it) and the one the trainer uses; empty for a single process.
struct distributed_job {
  std::unique_ptr<rlkernels::communicator> bootstrap;
  std::unique_ptr<rlkernels::communicator> comm;
  /// The trainer's communicator (the single process's default when there is none).
  rlkernels::communicator& get() const { return comm ? *comm : rlkernels::default_communicator(); }
  /// This process's rank (0 for a single process).
  int rank() const { return get().rank(); }
};

namespace detail {
inline const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
/// True under an MPI launcher (mpirun / mpiexec of Open MPI or MPICH, srun with PMI/PMIx).
inline bool under_mpi_launcher() {
  return env_or_null("OMPI_COMM_WORLD_SIZE") || env_or_null("PMI_SIZE") || env_or_null("PMIX_RANK");
}
/// The rank within this machine an MPI launcher gave (0 when it says nothing).
inline int mpi_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = env_or_null(name)) return std::atoi(v);
  return 0;
}
}  // namespace detail

/// @brief Starts the job's communicator as `o.distributed` says: "auto" takes MPI under an MPI
/// launcher and NCCL under torchrun-style variables (RANK, WORLD_SIZE, ...), else none. On CUDA
/// builds rank r of a machine takes GPU (local rank mod the GPU count). A program that does not
/// train data-parallel refuses to run as several ranks.
/// @throw std::invalid_argument when the build lacks what is asked for; distributed_error
inline distributed_job start_job(int& argc, char**& argv, const run_options& o, const program& p) {
  std::string kind = o.distributed;
  if (kind == "auto") {
    const bool torchrun = detail::env_or_null("RANK") && detail::env_or_null("WORLD_SIZE");
    kind = detail::under_mpi_launcher() ? "mpi" : torchrun ? "nccl" : "none";
    if (!p.data_parallel) {
      const char* size = detail::env_or_null("OMPI_COMM_WORLD_SIZE");
      if (!size) size = detail::env_or_null("PMI_SIZE");
      if (!size) size = detail::env_or_null("WORLD_SIZE");
      if (size && std::atoi(size) > 1)
        throw std::invalid_argument(p.name + " trains in one process; it was launched as one of " + size +
                                    " ranks (data-parallel training is train_ppo's so far)");
      kind = "none";
    }
  }
  distributed_job job;
  if (kind == "none") return job;
#if RLK_HAS_CUDA && (defined(RLK_EXAMPLE_MPI) || defined(RLK_EXAMPLE_NCCL))
  const auto use_local_gpu = [](int local_rank) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) RLK_CUDA_CHECK(cudaSetDevice(local_rank % count));
  };
#endif
  if (kind == "mpi") {
#if defined(RLK_EXAMPLE_MPI)
#if RLK_HAS_CUDA
    use_local_gpu(detail::mpi_local_rank());
#endif
    job.comm = std::make_unique<rlkernels::mpi_communicator>(&argc, &argv, o.distributed_timeout);
#else
    (void)argc, (void)argv;
    throw std::invalid_argument("--distributed mpi: " + p.name +
                                " was built without MPI (install libopenmpi-dev and rebuild; docs/distributed.md)");
#endif
  } else {
#if defined(RLK_EXAMPLE_NCCL) && RLK_HAS_CUDA
    if (detail::under_mpi_launcher()) {
#if defined(RLK_EXAMPLE_MPI)
      const int local = detail::mpi_local_rank();
      use_local_gpu(local);
      job.bootstrap = std::make_unique<rlkernels::mpi_communicator>(&argc, &argv, o.distributed_timeout);
      int count = 1;
      (void)cudaGetDeviceCount(&count);
      job.comm = std::make_unique<rlkernels::nccl_communicator>(*job.bootstrap, local % (count > 0 ? count : 1),
                                                                o.distributed_timeout);
#else
      throw std::invalid_argument("--distributed nccl under an MPI launcher needs MPI in this build");
#endif
    } else {
      const std::optional<rlkernels::launcher_environment> env = rlkernels::launcher_environment::from_env();
      if (!env)
        throw std::invalid_argument("--distributed nccl: no launcher found (set RANK, WORLD_SIZE, LOCAL_RANK, "
                                    "MASTER_ADDR, MASTER_PORT as torchrun does, or start under mpirun)");
      job.comm = std::make_unique<rlkernels::nccl_communicator>(*env, o.distributed_timeout);
    }
#else
    (void)argc, (void)argv;
    throw std::invalid_argument("--distributed nccl: " + p.name + " has no NCCL (" + p.name +
                                "_cuda has, where the CUDA Toolkit's NCCL is found)");
#endif
  }
  return job;
}

/// @brief Runs f() for the job: in a data-parallel job an exception is printed as "error: rank R
/// of N: ..." and ends the whole job at once (MPI_Abort), so that no rank waits out its timeout
/// for a peer that has stopped, and no rank finalises MPI while the others wait in a collective.
/// A single process passes the exception on (guarded_main prints it).
template <class F>
int run_job(const distributed_job& job, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    if (!job.comm || job.comm->size() == 1) throw;
    std::fprintf(stderr, "error: %s: %s\n", job.comm->where_am_i().c_str(), e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    job.comm->abort(1);
  }
  return 1;  // not reached: abort() ends the process
}

// ---------------------------------------------------------------------------------------------
// Dispatch: backend by name, env by id
// ---------------------------------------------------------------------------------------------

/// Calls f(backend) with the backend named `name` (serial, openmp, cuda) and returns what it returns.
/// The nvcc-built <program>_cuda runs the CUDA backend only: the host backends are the host build's
/// (<program>), which keeps nvcc from compiling every trainer three times (a third less nvcc time).
template <class F>
int with_backend(const std::string& name, const program& p, F&& f) {
#if RLK_HAS_CUDA
  if (name == "cuda") return f(rlkernels::cuda_backend{});
  if (name == "serial" || name == "openmp")
    throw std::invalid_argument(p.name + "_cuda runs --backend cuda; the " + name + " backend is in " + p.name +
                                " (the host build beside it)");
#else
  if (name == "serial") return f(rlkernels::serial);
  if (name == "openmp") return f(rlkernels::openmp);
  if (name == "cuda")
    throw std::invalid_argument("this build has no CUDA backend; run " + p.name +
                                "_cuda (built when nvcc is found)");
#endif
  throw std::invalid_argument("unknown backend '" + name + "' (serial, openmp or cuda)");
}

/// Sets run.env_params (--env-param NAME=VALUE) in entry.params and prints them; throws
/// std::invalid_argument naming a bad one.
template <class Env>
void apply_env_params(const run_options& run, rlkernels::registered_env<Env>& entry) {
  for (const auto& [name, value] : run.env_params) {
    try {
      rlkernels::set_param<Env>(entry.params, name, value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--env-param for " + run.env + ": " + e.what());
    }
  }
  if (!run.env_params.empty()) {
    std::string changed;
    for (const auto& [name, value] : run.env_params) changed += (changed.empty() ? "" : ", ") + name + "=" + value;
    std::printf("%s with %s\n", run.env.c_str(), changed.c_str());
  }
}

namespace detail {
/// The entry of full_capacity_t<Env>: the same id and settings, field by field (the two envs have
/// the same param_fields), with the full-capacity env's own model.
template <class Env>
rlkernels::registered_env<rlkernels::full_capacity_t<Env>> full_capacity_entry(const rlkernels::registered_env<Env>& e) {
  using full = rlkernels::full_capacity_t<Env>;
  rlkernels::registered_env<full> out{typename full::Params{}, e.info};
  rlkernels::param_fields<full>::visit(out.params, [&](const char* name, auto& to) {
    rlkernels::param_fields<Env>::visit(e.params, [&](const char* from_name, const auto& from) {
      if constexpr (std::is_same_v<std::decay_t<decltype(to)>, std::decay_t<decltype(from)>>) {
        if (std::string(name) == from_name) std::memcpy(&to, &from, sizeof to);
      }
    });
  });
  return out;
}
}  // namespace detail

/// Calls f(entry) with the registry entry of run.env, its Params changed by run.env_params
/// (printed), if Trains<Env>::value holds for its env type (only those instantiate f, which keeps
/// compile times down), otherwise throws std::invalid_argument(refusal). The host build trains
/// the MuJoCo envs with full capacity (full_capacity_t: room for every contact their pairs can
/// make, at no measurable cost on the host; docs/physics.md), so no step overflows there; the CUDA
/// build keeps the measured capacities, whose workspaces fit a GPU thread.
template <template <class> class Trains, class F>
int with_env(const run_options& run, const std::string& refusal, F&& f) {
  int rc = 0;
  rlkernels::visit_env(run.env, [&](auto entry) {
    using Env = typename decltype(entry)::env_type;
    if constexpr (!Trains<Env>::value) {
      throw std::invalid_argument(refusal);
    } else {
      apply_env_params(run, entry);
#if !RLK_HAS_CUDA
      if constexpr (!std::is_same_v<rlkernels::full_capacity_t<Env>, Env>) {
        rc = f(detail::full_capacity_entry(entry));
      } else
#endif
      {
        rc = f(entry);
      }
    }
  });
  return rc;
}

/// main()'s body: runs f, prints an exception as "error: ..." on stderr and returns 1 (a
/// data-parallel job's failures are reported by run_job).
template <class F>
int guarded_main(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

/// What training_main and training_main_for share: parses the command line, starts the job, and
/// calls run(backend, command_line, entry, communicator) with the entry that
/// with_entry(run_options, f) passes to f and the backend of --backend.
template <class Config, class Preset, class WithEntry, class Run>
int run_training_main(int argc, char** argv, const program& p, std::vector<option<Config>>& hyperparameters,
                      Preset&& preset, WithEntry&& with_entry, Run&& run) {
  return guarded_main([&] {
    const command_line<Config> cl = parse_command_line(argc, argv, p, hyperparameters, preset);
    const distributed_job job = start_job(argc, argv, cl.run, p);
    return run_job(job, [&] {
      check_env_shards(cl.config, job.get().size());
      return with_entry(cl.run, [&](auto entry) {
        return with_backend(cl.run.backend, p, [&](auto backend) { return run(backend, cl, entry, job.get()); });
      });
    });
  });
}

/// @brief A training example's whole main(): parses the command line (`hyperparameters`, the
/// env's `preset`), starts the job, and calls run(backend, command_line, entry, communicator)
/// with the backend and the registry entry of --env, for envs where Trains<Env>::value holds
/// (refused with "<refusal>; <env> is not one of them" otherwise).
/// @return main()'s exit status (errors are printed as guarded_main and run_job print them)
template <template <class> class Trains, class Config, class Preset, class Run>
int training_main(int argc, char** argv, const program& p, std::vector<option<Config>> hyperparameters,
                  Preset&& preset, const std::string& refusal, Run&& run) {
  auto registry_entry = [&](const run_options& opts, auto&& f) {
    return with_env<Trains>(opts, refusal + "; " + opts.env + " is not one of them", f);
  };
  return run_training_main(argc, argv, p, hyperparameters, preset, registry_entry, run);
}

/// @brief training_main for one env of your own instead of the registry's (examples/my_robot):
/// `entry` is its registry-style entry (rlkernels::make_env_entry: id, Params); --env must be
/// its id (the default when program::default_env is that id).
template <class Env, class Config, class Preset, class Run>
int training_main_for(int argc, char** argv, const program& p, std::vector<option<Config>> hyperparameters,
                      Preset&& preset, rlkernels::registered_env<Env> entry, Run&& run) {
  auto own_entry = [&](const run_options& opts, auto&& f) {
    if (opts.env != entry.info.id)
      throw std::invalid_argument(p.name + " trains " + std::string(entry.info.id) + " only; --env " + opts.env +
                                  " is not it");
    rlkernels::registered_env<Env> e = entry;
    apply_env_params(opts, e);
    return f(e);
  };
  return run_training_main(argc, argv, p, hyperparameters, preset, own_entry, run);
}

/// @brief Rank 0 of a data-parallel off-policy job (DQN, SAC, TD3) says how the ranks share the
/// envs, replay buffers and batches; nothing in one process.
inline void print_replay_data_parallel(rlkernels::communicator& comm, std::size_t num_envs, std::size_t batch_size) {
  if (comm.rank() == 0 && comm.size() > 1)
    std::printf("data parallel: %d ranks (%s) x %zu envs = %zu envs, each rank its own replay buffer; batch %zu per rank; "
                "gradients all-reduced in rank order\n",
                comm.size(), comm.name().c_str(), num_envs, std::size_t(comm.size()) * num_envs, batch_size);
}

// ---------------------------------------------------------------------------------------------
// Training: progress line, learning curve, plot, evaluation
// ---------------------------------------------------------------------------------------------

/// @brief A named value the caller reports per iteration: a CSV column, or a key=value field of
/// the progress line.
struct stat {
  std::string name;      ///< column or key
  double value = 0;      ///< the value
  bool integer = false;  ///< written without a fraction (counters)
};

/// A real-valued stat.
inline stat real(std::string name, double value) { return {std::move(name), value, false}; }
/// An integer stat (counts).
inline stat count(std::string name, std::uint64_t value) { return {std::move(name), double(value), true}; }

/// True when stdout is a terminal (the progress line then updates in place).
inline bool stdout_is_terminal() {
#if defined(__unix__) || defined(__APPLE__)
  return isatty(fileno(stdout)) != 0;
#else
  return false;
#endif
}

namespace detail {

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

/// Opens the learning curve. When resuming at `resumed_step` and `path` holds a curve with the
/// same header, its rows up to that step are kept (the rest were trained after the checkpoint)
/// and the seconds go on from its last kept row; otherwise it starts afresh.
inline std::ofstream open_curve(const std::string& path, const std::string& header, bool resuming,
                                std::uint64_t resumed_step, double& seconds_before) {
  seconds_before = 0;
  std::vector<std::string> kept;
  if (resuming) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && line == header) {
      while (std::getline(in, line)) {
        const std::vector<std::string> cells = split_csv_line(line);
        if (cells.size() < 3) break;
        try {
          if (std::stoull(cells[1]) > resumed_step) break;
          seconds_before = std::stod(cells[2]);
        } catch (const std::exception&) {
          break;
        }
        kept.push_back(line);
      }
    }
  }
  std::ofstream csv(path);
  if (!csv) throw std::runtime_error("cannot write " + path);
  csv << header << '\n';
  for (const std::string& line : kept) csv << line << '\n';
  return csv;
}

inline void write_stat(std::ostream& os, const stat& s) {
  if (s.integer) os << (unsigned long long)s.value;
  else os << s.value;
}

/// scripts/plot_learning_curve.py by the first interpreter that has matplotlib.
inline void plot_curve(const run_options& opt, const std::string& csv_path, const std::string& png_path,
                       const std::string& title) {
  // The plot script exits with status 3 when its interpreter lacks matplotlib: try the next one
  // ($RLK_PYTHON if set, python3 on PATH, then the system's /usr/bin/python3).
  std::vector<std::string> pythons;
  if (const char* py = std::getenv("RLK_PYTHON")) pythons.push_back(py);
  pythons.push_back("python3");
  pythons.push_back("/usr/bin/python3");
  const std::string args =
      " \"" + opt.plot_script + "\" \"" + csv_path + "\" \"" + png_path + "\" \"" + title + "\"";
  bool plotted = false;
  for (const std::string& py : pythons) {
    if (std::system((py + args + " 2>/dev/null").c_str()) == 0) {
      plotted = true;
      break;
    }
  }
  if (plotted) {
    std::printf("plot: %s\n", png_path.c_str());
  } else {
    std::printf("no plot written (needs python3 with matplotlib: sudo apt-get install python3-matplotlib); run:\n"
                "  python3%s\n",
                args.c_str());
  }
}

}  // namespace detail

/// train_and_report's default `merge`: show the last iteration that took gradient steps.
struct last_update {
  template <class Stats>
  void operator()(Stats& shown, const Stats& s) const {
    if (s.gradient_steps > 0) shown = s;
  }
};

/// Whether Env's step_with_info reports Gymnasium's `x_velocity` (the MuJoCo locomotion envs).
template <class Env, class = void>
struct reports_x_velocity : std::false_type {};
template <class Env>
struct reports_x_velocity<Env, std::void_t<decltype(std::declval<typename Env::step_info&>().x_velocity)>>
    : std::true_type {};

/// @brief What velocity_evaluation() measured, per episode.
struct velocity_report {
  std::vector<double> returns;          ///< episode returns (equal to agent.evaluate's)
  std::vector<double> mean_x_velocity;  ///< mean of info["x_velocity"] over each episode's steps
  std::vector<std::size_t> lengths;     ///< steps per episode
};

/// @brief The deterministic evaluation of agent.evaluate(episodes, seed, true), replayed on the host
/// through Env::step_with_info to read Gymnasium's info["x_velocity"]: env i resets from
/// rng(seed, i, 0) as vec_env's env i does, all envs step in lock step and the policy acts on them in
/// chunks of agent.max_act_rows() rows as evaluate() does (a policy's rows need not be bitwise the
/// same under another batch size), and each env's first episode ends at termination or at
/// params.max_episode_steps. For the MuJoCo envs (whose steps draw no random numbers) the returns
/// equal agent.evaluate's exactly (print_evaluation checks it).
template <class Trainer>
velocity_report velocity_evaluation(Trainer& agent, std::size_t episodes, std::uint64_t seed) {
  using Env = typename Trainer::env_type::env_type;
  using T = typename Env::scalar_type;
  static_assert(reports_x_velocity<Env>::value, "velocity_evaluation: Env::step_info has no x_velocity");
  constexpr std::size_t obs_size = std::size_t(Env::observation_size), width = std::size_t(Env::action_size);
  const typename Env::Params params = agent.envs().params();
  const auto backend = agent.envs().backend();
  using backend_t = std::decay_t<decltype(backend)>;
  const std::size_t cap = params.max_episode_steps > 0 ? std::size_t(params.max_episode_steps) : std::size_t(1000000);
  const std::size_t chunk = agent.max_act_rows();
  rlkernels::buffer<T, backend_t> obs(backend, episodes * obs_size), act(backend, episodes * width);
  std::vector<T> o(episodes * obs_size);
  std::vector<typename Env::State> states(episodes);
  for (std::size_t i = 0; i < episodes; ++i) {
    rlkernels::rng gen(seed, i, 0);
    Env::reset(params, states[i], gen);
  }
  velocity_report r;
  r.returns.assign(episodes, 0.0);
  r.mean_x_velocity.assign(episodes, 0.0);
  r.lengths.assign(episodes, 0);
  std::vector<bool> done(episodes, false);
  for (std::size_t left = episodes; left > 0;) {
    for (std::size_t i = 0; i < episodes; ++i) Env::observe(params, states[i], o.data() + i * obs_size);
    obs.assign(o);
    for (std::size_t first = 0; first < episodes; first += chunk) {
      const std::size_t n = std::min(chunk, episodes - first);
      agent.act(obs.cview().subview(first * obs_size, n * obs_size), act.view().subview(first * width, n * width), true);
    }
    const std::vector<T> a = act.to_host();
    for (std::size_t i = 0; i < episodes; ++i) {
      if (done[i]) continue;
      typename Env::step_info info{};
      const rlkernels::step_result<T> res = Env::step_with_info(params, states[i], a.data() + i * width, info);
      r.returns[i] += double(res.reward);
      r.mean_x_velocity[i] += double(info.x_velocity);
      ++r.lengths[i];
      if (res.terminated || res.truncated || r.lengths[i] >= cap) {  // truncated: the engine failed
        done[i] = true;
        --left;
      }
    }
  }
  for (std::size_t i = 0; i < episodes; ++i) r.mean_x_velocity[i] /= double(r.lengths[i]);
  return r;
}

namespace detail {
/// Mean and population standard deviation.
inline std::pair<double, double> mean_std(const std::vector<double>& v) {
  double m = 0, q = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  for (double x : v) q += (x - m) * (x - m);
  return {m, std::sqrt(q / double(v.size()))};
}

/// The final evaluation's lines: agent.evaluate's returns and, for envs that report x_velocity,
/// each episode's mean x velocity and length from velocity_evaluation().
template <class Trainer>
void print_evaluation(Trainer& agent, std::size_t episodes, std::uint64_t seed) {
  const rlkernels::policy_evaluation e = agent.evaluate(episodes, seed, true);
  std::printf("evaluation (deterministic policy, %zu episodes): mean return %.2f +- %.2f (min %.2f, max %.2f)\n",
              episodes, e.mean, e.std, e.min, e.max);
  if constexpr (reports_x_velocity<typename Trainer::env_type::env_type>::value) {
    const velocity_report v = velocity_evaluation(agent, episodes, seed);
    // The replay must be the same episodes: a difference would be a bug in it, not a statistic.
    for (std::size_t i = 0; i < episodes; ++i)
      if (v.returns[i] != e.returns[i])
        throw std::logic_error("the x velocity replay's episode " + std::to_string(i) + " returned " +
                               std::to_string(v.returns[i]) + ", agent.evaluate's " + std::to_string(e.returns[i]));
    std::vector<double> len(v.lengths.begin(), v.lengths.end());
    const auto [vm, vs] = mean_std(v.mean_x_velocity);
    const auto [lm, ls] = mean_std(len);
    std::printf("evaluation x velocity (info[\"x_velocity\"] averaged over each episode): mean %.3f +- %.3f m/s "
                "(min %.3f, max %.3f); episode length %.1f +- %.1f\n",
                vm, vs, *std::min_element(v.mean_x_velocity.begin(), v.mean_x_velocity.end()),
                *std::max_element(v.mean_x_velocity.begin(), v.mean_x_velocity.end()), lm, ls);
  }
}
/// The directory of the last checkpoint, so that it rotates with the run's own files: the
/// trainer's automatic checkpoints' (checkpoint_every > 0), or one told how the run began
/// (--resume FILE or from scratch).
template <class Trainer>
rlkernels::checkpoint_directory last_checkpoint_directory(const Trainer& agent, const program& p,
                                                          const run_options& opt) {
  const auto& c = agent.config();
  if constexpr (has_automatic_checkpoints<Trainer>::value) {
    if (agent.checkpoints() && agent.checkpoints()->prefix() == p.file_prefix) return *agent.checkpoints();
  }
  rlkernels::checkpoint_directory dir(c.checkpoint_dir, p.file_prefix, c.checkpoint_keep);
  if (opt.resume.empty()) dir.start_new_run();
  else dir.resumed_from(opt.resume);
  return dir;
}
}  // namespace detail

namespace detail {
/// {contacts, rows} of an env's physics workspace ({-1, -1} without one).
template <class Env, class = void>
struct workspace_of {
  static constexpr int ncon = -1, nefc = -1;
};
template <class Env>
struct workspace_of<Env, std::void_t<decltype(Env::dims::ncon), decltype(Env::dims::nefc)>> {
  static constexpr int ncon = Env::dims::ncon, nefc = Env::dims::nefc;
};

/// "N of M env steps (P %): A over capacity, B unstable".
inline std::string failed_steps_summary(const rlkernels::failed_step_counts& f, std::uint64_t steps) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%llu of %llu env steps (%.3g %%): %llu over capacity, %llu unstable",
                (unsigned long long)f.total(), (unsigned long long)steps,
                steps ? 100.0 * double(f.total()) / double(steps) : 0.0, (unsigned long long)f.capacity_overflows,
                (unsigned long long)f.unstable_steps);
  return buf;
}

/// Why a run stopped at --max-failed-fraction, and what to raise.
template <class Env>
std::string failed_steps_message(const program& p, const std::string& env_id, const rlkernels::failed_step_counts& f,
                                 std::uint64_t steps, double max_fraction) {
  std::ostringstream m;
  char share[160];
  std::snprintf(share, sizeof share, "%llu of %llu env steps of ", (unsigned long long)f.total(),
                (unsigned long long)steps);
  char split[160];
  std::snprintf(split, sizeof split, " (%.3g %%: %llu over capacity, %llu unstable)",
                steps ? 100.0 * double(f.total()) / double(steps) : 0.0, (unsigned long long)f.capacity_overflows,
                (unsigned long long)f.unstable_steps);
  m << p.name << " stopped: the physics could not take " << share << env_id << split
    << ", more than --max-failed-fraction " << max_fraction << " (each ended its episode as truncated).";
  if (f.capacity_overflows > 0) {
    m << " Over capacity: those steps needed more contacts or constraint rows than the env's workspace holds ("
      << workspace_of<Env>::ncon << " contacts and " << workspace_of<Env>::nefc << " rows per env).";
    using full = rlkernels::full_capacity_t<Env>;
    if constexpr (!std::is_same_v<full, Env>) {
      m << " Raise them: the host build (" << p.name << " --backend openmp) gives every env full capacity ("
        << workspace_of<full>::ncon << " contacts, " << workspace_of<full>::nefc
        << " rows); in C++, rlkernels::full_capacity_t<Env> or physics::dims_with_capacity<Dims, contacts, rows> "
           "as the env's Dims; in Python, make_vec(..., capacity='full').";
    } else {
      m << " Raise them: physics::dims_with_capacity<Dims, contacts, rows> as the env's Dims (docs/physics.md).";
    }
  }
  if (f.unstable_steps > 0)
    m << " Unstable: a position, velocity or acceleration became non-finite or above 1e10 (the simulation "
         "diverged); check the --env-param values and the actions' range.";
  m << " --max-failed-fraction 1 trains on regardless (docs/physics.md, \"When a step fails\").";
  return m.str();
}
}  // namespace detail

/// @brief Trains `agent` to its end (or to --stop-at) with the examples' user interface, then
/// evaluates it, and returns main()'s exit status.
///
/// - --resume: agent.load_checkpoint(path) first; the CSV keeps the rows of the earlier run up to
///   that step and goes on from there (mean_return_100 then covers the episodes since the resume).
/// - With a checkpoint directory (config().checkpoint_dir), a last checkpoint after training, named
///   like the trainer's automatic ones (<prefix>-<env step>.rlkc).
/// - Progress: one line updated in place on a terminal (every 0.1 s), a plain line every 2 s
///   otherwise: env steps, steps/s, mean return of the last 100 episodes, `progress(stats)`'s
///   key=value fields (none for PPO), seconds.
/// - Learning curve <out>/<prefix>_<env>_seed<seed>.csv: iteration, global_step, elapsed_s,
///   episodes (completed since the previous row), mean_return_100, then `columns(stats)` (their
///   names from columns of a default-constructed stats), then steps_per_s; one row per iteration,
///   or every program::csv_every env steps and at the end. The columns and progress fields show
///   `shown`, which `merge(shown, stats)` updates after each iteration (default last_update: the
///   last iteration that took gradient steps, as off-policy trainers update only from learning_starts).
/// - Then the PNG (unless --no-plot) and the deterministic evaluation.
template <class Trainer, class Columns, class Progress, class Merge = last_update>
int train_and_report(Trainer& agent, const program& p, const run_options& opt, const std::string& env_id,
                     std::uint64_t seed, Columns&& columns, Progress&& progress, Merge&& merge = {}) {
  using stats_type = std::decay_t<decltype(agent.iterate())>;
  using env_t = typename Trainer::env_type::env_type;
  constexpr bool counts_failures = rlkernels::counts_failed_steps_v<env_t>;
  // Data parallel: every rank trains; rank 0 alone reports, writes the curve and evaluates.
  bool root = true;
  if constexpr (has_communicator<Trainer>::value) root = agent.comm().rank() == 0;
  if (!opt.resume.empty()) {
    if constexpr (has_checkpoints<Trainer>::value) {
      agent.load_checkpoint(opt.resume);
      if (root)
        std::printf("resumed from %s at env step %llu (iteration %llu)\n", opt.resume.c_str(),
                    (unsigned long long)agent.global_step(), (unsigned long long)agent.iteration());
      std::fflush(stdout);
    } else {
      throw std::invalid_argument(p.name + " cannot resume from checkpoints yet");
    }
  }
  if (opt.evaluate_only) {
    if (root) detail::print_evaluation(agent, opt.eval_episodes, seed + 1000003);
    return 0;
  }
  const std::uint64_t first_step = agent.global_step();

  if (root) {
    // --out names a folder that may not exist yet: make it (and its parents), as `mkdir -p` would.
    std::error_code ec;
    std::filesystem::create_directories(opt.out_dir, ec);
    if (ec) throw std::runtime_error("cannot create the output folder " + opt.out_dir + ": " + ec.message());
  }
  const std::string stem = opt.out_dir + "/" + p.file_prefix + "_" + env_id + "_seed" + std::to_string(seed);
  const std::string csv_path = stem + ".csv", png_path = stem + ".png";
  std::string header = "iteration,global_step,elapsed_s,episodes,mean_return_100";
  for (const stat& s : columns(stats_type{})) header += "," + s.name;
  header += ",steps_per_s";
  double seconds_before = 0;
  std::ofstream csv;
  if (root) csv = detail::open_curve(csv_path, header, !opt.resume.empty(), first_step, seconds_before);

  const bool terminal = stdout_is_terminal();
  rlkernels::return_window window(100);
  const auto start = std::chrono::steady_clock::now();
  double last_print = -1.0, elapsed = 0.0, reached_at = -1.0;
  std::uint64_t reached_step = 0, updates = 0, row_episodes = 0;
  std::uint64_t next_row = p.csv_every ? (first_step / p.csv_every + 1) * p.csv_every : 0;
  stats_type shown{};  // what the CSV columns and the progress fields show
  while (!agent.done()) {
    const stats_type s = agent.iterate();
    updates += s.gradient_steps;
    row_episodes += s.episodes;
    merge(shown, s);
    window.add(s.episodes, s.episode_return_sum);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double sps = double(s.global_step - first_step) / elapsed;
    const bool reached = window.full() && window.mean() >= opt.stop_at;
    if (reached && reached_at < 0) {
      reached_at = elapsed;
      reached_step = s.global_step;
    }
    const bool last = agent.done() || reached;
    if (root && (p.csv_every == 0 || s.global_step >= next_row || last)) {
      if (p.csv_every) next_row = (s.global_step / p.csv_every + 1) * p.csv_every;
      csv << s.iteration << ',' << s.global_step << ',' << seconds_before + elapsed << ',' << row_episodes << ','
          << window.mean();
      for (const stat& c : columns(shown)) {
        csv << ',';
        detail::write_stat(csv, c);
      }
      csv << ',' << sps << '\n';
      row_episodes = 0;
    }
    if (root && !opt.quiet &&
        (terminal ? (elapsed - last_print >= 0.1 || last) : (elapsed - last_print >= 2.0 || last))) {
      last_print = elapsed;
      std::string fields;
      for (const stat& f : progress(shown)) {
        char buf[64];
        if (f.integer) std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)f.value);
        else std::snprintf(buf, sizeof buf, "%.3g", f.value);
        fields += (fields.empty() ? " | " : " ") + f.name + "=" + buf;
      }
      if (counts_failures) {  // the physics' failed steps so far, of any kind
        char buf[48];
        std::snprintf(buf, sizeof buf, " | failed steps %llu", (unsigned long long)agent.failed_steps().total());
        fields += buf;
      }
      std::printf("%s%9llu steps | %8.0f steps/s | mean return (last %3llu episodes) %8.2f%s | %6.1f s%s",
                  terminal ? "\r" : "", (unsigned long long)s.global_step, sps,
                  (unsigned long long)window.episodes(), window.mean(), fields.c_str(), elapsed,
                  terminal ? "" : "\n");
      std::fflush(stdout);
    }
    if constexpr (counts_failures) {
      // Every rank holds the totals of all ranks: all stop together.
      const rlkernels::failed_step_counts f = agent.failed_steps();
      if (double(f.total()) > opt.max_failed_fraction * double(agent.global_step())) {
        if (root && !opt.quiet && terminal) std::printf("\n");
        throw std::runtime_error(detail::failed_steps_message<env_t>(p, env_id, f, agent.global_step(),
                                                                     opt.max_failed_fraction));
      }
    }
    if (reached) break;
  }
  if (root && !opt.quiet && terminal) std::printf("\n");
  if (!root) {
    if constexpr (has_communicator<Trainer>::value && has_checkpoint_fields<std::decay_t<decltype(agent.config())>>::value) {
      if (!agent.config().checkpoint_dir.empty())  // the last checkpoint is the ranks' joint work
        agent.save_checkpoint(rlkernels::checkpoint_directory(agent.config().checkpoint_dir, p.file_prefix,
                                                              agent.config().checkpoint_keep));
    }
    return 0;
  }
  csv.close();
  const std::uint64_t trained = agent.global_step() - first_step;
  if (trained == 0) {  // e.g. resumed from the checkpoint of a finished run: no rates to show
    std::printf("trained no env steps (the run was already at --total-steps)\n");
  } else {
    std::printf("trained %llu env steps and %llu gradient steps in %.2f s (%.0f env steps/s, %.0f updates/s)\n",
                (unsigned long long)trained, (unsigned long long)updates, elapsed, double(trained) / elapsed,
                double(updates) / elapsed);
  }
  if constexpr (has_communicator<Trainer>::value) {
    const rlkernels::communicator& c = agent.comm();
    if (c.size() > 1) {
      const rlkernels::communicator_stats st = c.stats();
      std::printf("communication (%s, rank 0 of %d): %llu collectives, %.2f MB sent, %.2f s (%.1f %% of the training "
                  "time)\n",
                  c.name().c_str(), c.size(), (unsigned long long)st.calls, double(st.bytes) / 1e6, st.seconds,
                  elapsed > 0 ? 100.0 * st.seconds / elapsed : 0.0);
    }
  }
  if constexpr (counts_failures) {
    std::printf("failed env steps (the physics could not take them; each truncated its episode): %s\n",
                detail::failed_steps_summary(agent.failed_steps(), agent.global_step()).c_str());
  }
  if (reached_at >= 0) {
    std::printf("reached a mean return of %g over the last 100 episodes after %.2f s and %llu env steps\n", opt.stop_at,
                reached_at, (unsigned long long)reached_step);
  }
  std::printf("learning curve: %s\n", csv_path.c_str());
  if constexpr (has_checkpoints<Trainer>::value && has_checkpoint_fields<std::decay_t<decltype(agent.config())>>::value) {
    const auto& c = agent.config();
    if (!c.checkpoint_dir.empty()) {
      const rlkernels::checkpoint_directory dir = detail::last_checkpoint_directory(agent, p, opt);
      if constexpr (has_communicator<Trainer>::value) {
        std::printf("checkpoint: %s\n", agent.save_checkpoint(dir).c_str());
      } else {
        rlkernels::checkpoint state;
        agent.bind_checkpoint(state);
        std::printf("checkpoint: %s\n", dir.save(state, agent.global_step()).c_str());
      }
    }
  }
  if (opt.plot) {
    detail::plot_curve(opt, csv_path, png_path, p.algorithm + " " + env_id + " (seed " + std::to_string(seed) + ")");
  }
  if (opt.eval_episodes > 0) detail::print_evaluation(agent, opt.eval_episodes, seed + 1000003);
  return 0;
}

/// @brief After training with `status` 0, rank 0 writes the trained deterministic policy to
/// --export-policy FILE when given (rlkernels/algorithms/policy_file.hpp: PPO and TD3 agents)
/// and says where.
/// @return `status`
template <class Trainer>
int export_policy(int status, const Trainer& agent, const run_options& opt, const std::string& env_id,
                  rlkernels::communicator& comm) {
  if (status == 0 && !opt.export_policy.empty() && comm.rank() == 0) {
    rlkernels::save_policy(agent, env_id, opt.export_policy);
    std::printf("policy: %s\n", opt.export_policy.c_str());
  }
  return status;
}

/// No progress fields or columns.
struct no_stats {
  template <class Stats>
  std::vector<stat> operator()(const Stats&) const {
    return {};
  }
};

}  // namespace rlk_example
