// rlkernels/algorithms/policy_file.hpp
// A trained agent's deterministic policy (PPO's or TD3's) as a small text file that anything can
// read back: the observation normaliser's statistics (PPO) and the actor's layers, every number
// written exactly (C99 hex floats: strtod and Python's float.fromhex read them). save_policy()
// writes it; policy_file::load() reads it and policy_file::act() evaluates it in double on the host
// (for deployment, or to run the same policy in another simulator, as the MuJoCo tests do with
// Gymnasium; rlkernels.Policy reads it in Python).
//
// The format, line by line (docs/training.md, "Exporting a policy"):
//
//     rlkernels-policy 2
//     env <id>
//     observation <size>
//     action continuous <width> <low> <high> <clip|rescale>    or: action discrete <n>
//     normalize <0|1> <clip> <epsilon>              then, when 1: a line of means, a line of variances
//     mlp <layers> <hidden activation> <output activation>
//     layer <in> <out>                              then <out> lines of <in> weights, a line of <out> biases
//     (one layer block per layer)
//
// act(obs): x = clip((obs - mean) / sqrt(var + epsilon), -clip, clip) when normalising (else obs);
// y = the MLP of x; the action is clip(y, low, high) ("clip": PPO's Gaussian mean), or
// low + (clip(y, -1, 1) + 1) / 2 (high - low) ("rescale": an actor that acts in [-1, 1], TD3's),
// or argmax y (discrete, the lowest index among ties). Version 1 files (written before TD3 export)
// have no fifth action token and mean "clip"; load() reads both versions.
#pragma once

#include "../core/error.hpp"
#include "../nn/mlp.hpp"  // mlp_layout, activation

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {

/// @brief A deterministic policy read from a policy file (see the header comment for the format).
struct policy_file {
  std::string env;                    ///< the env id it was trained on
  int observation_size = 0;           ///< observation width
  bool continuous = true;             ///< Box actions (else discrete)
  int action_size = 0;                ///< continuous: action width; discrete: number of actions
  double action_low = 0;              ///< continuous: the env's lower action bound (every dimension)
  double action_high = 0;             ///< continuous: the env's upper action bound (every dimension)
  bool rescale = false;               ///< continuous: y in [-1, 1] maps onto [low, high] (else y is clipped to it)
  bool normalize = false;             ///< observations are normalised first
  double clip = 10;                   ///< normalisation: normalised observations are clipped to [-clip, clip]
  double epsilon = 1e-8;              ///< normalisation: added to var under the square root
  std::vector<double> mean;           ///< normalisation: the normaliser's mean [observation_size] (empty unless normalize)
  std::vector<double> var;            ///< normalisation: the normaliser's variance [observation_size] (empty unless normalize)
  mlp_layout layout;                  ///< the actor's shape
  std::vector<std::vector<double>> weights;  ///< per layer, W [out][in] row-major
  std::vector<std::vector<double>> biases;   ///< per layer, b [out]

  /// Values act() writes: action_size (continuous) or 1 (discrete: the action's index).
  int action_width() const noexcept { return continuous ? action_size : 1; }

  /// @brief The action for one observation [observation_size], in double; writes action_width()
  /// values to `action`.
  void act(const double* obs, double* action) const {
    std::vector<double> x(obs, obs + observation_size), y;
    if (normalize) {
      for (int k = 0; k < observation_size; ++k) {
        const double z = (x[std::size_t(k)] - mean[std::size_t(k)]) / std::sqrt(var[std::size_t(k)] + epsilon);
        x[std::size_t(k)] = z < -clip ? -clip : (z > clip ? clip : z);
      }
    }
    for (std::size_t l = 0; l < layout.num_layers(); ++l) {
      const std::size_t in = std::size_t(layout.fan_in(l)), out = std::size_t(layout.fan_out(l));
      y.assign(out, 0.0);
      for (std::size_t r = 0; r < out; ++r) {
        double s = 0;
        for (std::size_t c = 0; c < in; ++c) s += weights[l][r * in + c] * x[c];
        s += biases[l][r];
        switch (layout.activation_of(l)) {
          case activation::tanh: s = std::tanh(s); break;
          case activation::relu: s = s > 0 ? s : 0.0; break;
          case activation::elu: s = s > 0 ? s : std::expm1(s); break;
          case activation::identity: break;
        }
        y[r] = s;
      }
      x.swap(y);
    }
    if (continuous) {
      for (int k = 0; k < action_size; ++k) {
        const double a = x[std::size_t(k)];
        if (rescale) {
          const double u = a < -1.0 ? -1.0 : (a > 1.0 ? 1.0 : a);
          action[k] = action_low + (u + 1.0) * 0.5 * (action_high - action_low);
        } else {
          action[k] = a < action_low ? action_low : (a > action_high ? action_high : a);
        }
      }
    } else {
      std::size_t best = 0;
      for (std::size_t k = 1; k < x.size(); ++k)
        if (x[k] > x[best]) best = k;
      action[0] = double(best);
    }
  }

  /// @brief Reads a policy file.
  /// @throw rlkernels::error naming the file and the line if it cannot be read or is not a policy file
  static policy_file load(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw error("rlkernels::policy_file::load: cannot open " + path);
    policy_file p;
    int line_no = 0;
    std::string line;
    auto fail = [&](const std::string& what) -> error {
      return error("rlkernels::policy_file::load: " + path + ", line " + std::to_string(line_no) + ": " + what);
    };
    auto next = [&](const char* expected) -> std::vector<std::string> {
      if (!std::getline(in, line)) throw fail(std::string("the file ends before ") + expected);
      ++line_no;
      std::istringstream ss(line);
      std::vector<std::string> t;
      for (std::string w; ss >> w;) t.push_back(w);
      return t;
    };
    auto number = [&](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) throw fail("'" + s + "' is not a finite number");
      return v;
    };
    auto count = [&](const std::string& s, int lo) {
      const double v = number(s);
      if (v != std::floor(v) || v < lo || v > 1e7) throw fail("'" + s + "' is not a count >= " + std::to_string(lo));
      return int(v);
    };
    auto keyed = [&](const char* key, std::size_t n) {
      std::vector<std::string> t = next(key);
      if (t.size() != n + 1 || t[0] != key)
        throw fail(std::string("expected '") + key + "' and " + std::to_string(n) + " values, got '" + line + "'");
      return t;
    };
    auto numbers = [&](std::size_t n, const char* what) {
      const std::vector<std::string> t = next(what);
      if (t.size() != n)
        throw fail(std::string("expected ") + std::to_string(n) + " " + what + ", got " + std::to_string(t.size()));
      std::vector<double> v;
      for (const std::string& s : t) v.push_back(number(s));
      return v;
    };
    auto act_of = [&](const std::string& s) {
      for (activation a : {activation::identity, activation::tanh, activation::relu, activation::elu})
        if (s == activation_name(a)) return a;
      throw fail("unknown activation '" + s + "'");
    };

    std::vector<std::string> t = next("the header");
    if (t.size() != 2 || t[0] != "rlkernels-policy") throw fail("not a policy file (no 'rlkernels-policy' header)");
    if (t[1] != "1" && t[1] != "2") throw fail("format version " + t[1] + " (this build reads versions 1 and 2)");
    const bool v2 = t[1] == "2";
    p.env = keyed("env", 1)[1];
    p.observation_size = count(keyed("observation", 1)[1], 1);
    t = next("action");
    if (t.size() == (v2 ? 6u : 5u) && t[0] == "action" && t[1] == "continuous") {
      p.continuous = true;
      p.action_size = count(t[2], 1);
      p.action_low = number(t[3]);
      p.action_high = number(t[4]);
      if (!(p.action_low <= p.action_high)) throw fail("action bounds low > high");
      if (v2) {
        if (t[5] != "clip" && t[5] != "rescale") throw fail("the action map is 'clip' or 'rescale', not '" + t[5] + "'");
        p.rescale = t[5] == "rescale";
      }
    } else if (t.size() == 3 && t[0] == "action" && t[1] == "discrete") {
      p.continuous = false;
      p.action_size = count(t[2], 1);
    } else {
      throw fail(std::string("expected 'action continuous <width> <low> <high>") + (v2 ? " <clip|rescale>" : "") +
                 "' or 'action discrete <n>', got '" + line + "'");
    }
    t = keyed("normalize", 3);
    p.normalize = count(t[1], 0) != 0;
    p.clip = number(t[2]);
    p.epsilon = number(t[3]);
    if (p.normalize) {
      p.mean = numbers(std::size_t(p.observation_size), "means");
      p.var = numbers(std::size_t(p.observation_size), "variances");
      for (double v : p.var)
        if (v < 0) throw fail("a negative variance");
    }
    t = keyed("mlp", 3);
    const int layers = count(t[1], 1);
    p.layout.hidden = act_of(t[2]);
    p.layout.output = act_of(t[3]);
    p.layout.sizes = {p.observation_size};
    for (int l = 0; l < layers; ++l) {
      t = keyed("layer", 2);
      const int fan_in = count(t[1], 1), fan_out = count(t[2], 1);
      if (fan_in != p.layout.sizes.back())
        throw fail("layer " + std::to_string(l) + " takes " + std::to_string(fan_in) + " inputs, the previous gives " +
                   std::to_string(p.layout.sizes.back()));
      p.layout.sizes.push_back(fan_out);
      std::vector<double> w;
      for (int r = 0; r < fan_out; ++r) {
        const std::vector<double> row = numbers(std::size_t(fan_in), "weights");
        w.insert(w.end(), row.begin(), row.end());
      }
      p.weights.push_back(std::move(w));
      p.biases.push_back(numbers(std::size_t(fan_out), "biases"));
    }
    if (p.layout.sizes.back() != p.action_size)
      throw fail("the last layer gives " + std::to_string(p.layout.sizes.back()) + " outputs, the action needs " +
                 std::to_string(p.action_size));
    return p;
  }
};

namespace detail {
inline void write_exact_line(std::FILE* f, const double* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) std::fprintf(f, "%s%a", i ? " " : "", v[i]);
  std::fprintf(f, "\n");
}
}  // namespace detail

namespace detail {
template <class Agent, class = void>
struct has_observation_normalizer : std::false_type {};
template <class Agent>
struct has_observation_normalizer<Agent, std::void_t<decltype(std::declval<const Agent&>().observation_normalizer())>>
    : std::true_type {};
template <class Agent, class = void>
struct has_deterministic_actor : std::false_type {};
template <class Agent>
struct has_deterministic_actor<Agent, std::void_t<decltype(Agent::deterministic_actor)>>
    : std::bool_constant<Agent::deterministic_actor> {};
}  // namespace detail

/// @brief Writes the deterministic policy of a trained agent to `path` as a policy file, `env_id`
/// naming the env: a PPO agent's (rlkernels::ppo: its frozen observation normaliser and its actor,
/// the Gaussian mean clipped to the env's bounds, or the argmax of a discrete policy) or a TD3
/// agent's (rlkernels::td3: its actor, whose tanh output in [-1, 1] is rescaled onto the env's
/// bounds). policy_file::load(path).act(obs) is then the agent's act(obs, deterministic) computed
/// in double (the same up to the agent's own rounding in float).
/// @throw rlkernels::error if the file cannot be written
template <class Agent>
void save_policy(const Agent& agent, std::string_view env_id, const std::string& path) {
  using agent_t = Agent;
  using Env = typename agent_t::env_type::env_type;
  using T = typename agent_t::scalar_type;
  constexpr bool ppo_like = detail::has_observation_normalizer<Agent>::value;
  static_assert(ppo_like || detail::has_deterministic_actor<Agent>::value,
                "rlkernels::save_policy writes a ppo or a td3 agent (SAC's and DQN's policies are not exported yet)");
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw error("rlkernels::save_policy: cannot write " + path);
  std::fprintf(f, "rlkernels-policy 2\nenv %.*s\nobservation %d\n", int(env_id.size()), env_id.data(),
               agent_t::observation_size);
  bool normalize = false;
  double clip = 10;
  if constexpr (ppo_like) {
    const auto& c = agent.config();
    if constexpr (agent_t::discrete) {
      std::fprintf(f, "action discrete %d\n", agent_t::policy_outputs);
    } else {
      std::fprintf(f, "action continuous %d %a %a clip\n", agent_t::action_width, double(T(Env::action_low)),
                   double(T(Env::action_high)));
    }
    normalize = c.normalize_observations;
    clip = double(T(c.observation_clip));
  } else {
    std::fprintf(f, "action continuous %d %a %a rescale\n", agent_t::action_size, double(T(Env::action_low)),
                 double(T(Env::action_high)));
  }
  // The clip bound and epsilon act() normalises with (in T, then used in double).
  std::fprintf(f, "normalize %d %a %a\n", normalize ? 1 : 0, clip, double(T(1e-8)));
  if constexpr (ppo_like) {
    if (normalize) {
      const std::vector<double> mean = agent.observation_normalizer().mean(), var = agent.observation_normalizer().var();
      detail::write_exact_line(f, mean.data(), mean.size());
      detail::write_exact_line(f, var.data(), var.size());
    }
  }
  const mlp_layout& layout = agent.actor().layout();
  const std::vector<T> raw = agent.actor().parameters_to_host();
  const std::vector<double> params(raw.begin(), raw.end());
  std::fprintf(f, "mlp %zu %s %s\n", layout.num_layers(), activation_name(layout.hidden), activation_name(layout.output));
  for (std::size_t l = 0; l < layout.num_layers(); ++l) {
    const std::size_t in = std::size_t(layout.fan_in(l)), out = std::size_t(layout.fan_out(l));
    std::fprintf(f, "layer %zu %zu\n", in, out);
    for (std::size_t r = 0; r < out; ++r) detail::write_exact_line(f, params.data() + layout.weight_offset(l) + r * in, in);
    detail::write_exact_line(f, params.data() + layout.bias_offset(l), out);
  }
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw error("rlkernels::save_policy: writing " + path + " failed");
}

}  // namespace rlkernels
