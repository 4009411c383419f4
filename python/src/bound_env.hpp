// python/src/bound_env.hpp
// any_vec_env implemented by rlkernels::vec_env<Env, Backend>, and the registry lookup that makes
// one; included by the four translation units that instantiate it (float/double x serial/openmp).
#pragma once

#include "any_vec_env.hpp"
#include <rlkernels/envs/mujoco/full_capacity.hpp>
#include <rlkernels/envs/param_fields.hpp>

#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels_python {

namespace detail {

/// True for States with the physics engine's counters (rlkernels::mujoco_state).
template <class S, class = void>
struct has_engine_counters : std::false_type {};
template <class S>
struct has_engine_counters<S, std::void_t<decltype(std::declval<const S&>().capacity_overflows),
                                          decltype(std::declval<const S&>().unstable_steps)>> : std::true_type {};

template <class T>
param_value to_value(const T& field) {
  param_value v;
  if constexpr (std::is_same_v<T, bool>) {
    v.type = param_value::kind::boolean;
    v.b = field;
  } else if constexpr (std::is_integral_v<T>) {
    v.type = param_value::kind::integer;
    v.i = field;
  } else if constexpr (std::is_floating_point_v<T>) {
    v.type = param_value::kind::real;
    v.x = double(field);
  } else {  // Scalar[2]
    v.type = param_value::kind::pair;
    v.pair[0] = double(field[0]);
    v.pair[1] = double(field[1]);
  }
  return v;
}

inline const char* kind_name(param_value::kind k) {
  switch (k) {
    case param_value::kind::boolean: return "bool";
    case param_value::kind::integer: return "int";
    case param_value::kind::real: return "float";
    case param_value::kind::pair: return "a pair (low, high)";
  }
  return "?";
}

/// field = value, or std::invalid_argument naming the field when the types disagree (a bool for
/// a number, a float for an int, a scalar for a range) or the number does not fit.
template <class T>
void assign(const std::string& id, const std::string& name, T& field, const param_value& v) {
  const auto wrong = [&](const char* want) {
    throw std::invalid_argument("rlkernels.make_vec('" + id + "'): keyword argument '" + name + "' must be " + want +
                                ", got " + kind_name(v.type));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (v.type != param_value::kind::boolean) wrong("a bool");
    field = v.b;
  } else if constexpr (std::is_integral_v<T>) {
    if (v.type != param_value::kind::integer) wrong("an int");
    if (v.i < std::numeric_limits<T>::min() || v.i > std::numeric_limits<T>::max())
      throw std::invalid_argument("rlkernels.make_vec('" + id + "'): keyword argument '" + name + "' = " +
                                  std::to_string(v.i) + " does not fit in a 32-bit int");
    field = T(v.i);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.type == param_value::kind::real)
      field = T(v.x);
    else if (v.type == param_value::kind::integer)
      field = T(v.i);
    else
      wrong("a number");
  } else {
    if (v.type != param_value::kind::pair) wrong("a pair (low, high)");
    using E = std::remove_reference_t<decltype(field[0])>;
    field[0] = E(v.pair[0]);
    field[1] = E(v.pair[1]);
  }
}

template <class Env>
std::vector<param_entry> params_of(const typename Env::Params& p) {
  std::vector<param_entry> out;
  rlkernels::param_fields<Env>::visit(p, [&](const char* name, const auto& field) { out.push_back({name, to_value(field)}); });
  return out;
}

/// Applies the keyword arguments to `p`; an unknown name is refused with the list of known ones.
template <class Env>
void apply_params(const std::string& id, typename Env::Params& p, const std::vector<param_entry>& kwargs) {
  for (const param_entry& kw : kwargs) {
    bool found = false;
    std::string known;
    rlkernels::param_fields<Env>::visit(p, [&](const char* name, auto& field) {
      known += known.empty() ? "" : ", ";
      known += name;
      if (kw.name == name) {
        assign(id, kw.name, field, kw.value);
        found = true;
      }
    });
    if (!found)
      throw std::invalid_argument("rlkernels.make_vec('" + id + "'): unknown keyword argument '" + kw.name +
                                  "'; this env takes: " + known);
  }
}

}  // namespace detail

namespace detail {

/// {Dims::ncon, Dims::nefc} of an env with a physics workspace, {-1, -1} otherwise.
template <class Env, class = void>
struct workspace_capacities {
  static constexpr std::pair<int, int> value{-1, -1};
};
template <class Env>
struct workspace_capacities<Env, std::void_t<decltype(Env::dims::ncon), decltype(Env::dims::nefc)>> {
  static constexpr std::pair<int, int> value{Env::dims::ncon, Env::dims::nefc};
};
template <class Env>
constexpr std::pair<int, int> capacities() {
  return workspace_capacities<Env>::value;
}

}  // namespace detail

template <class Env, class Backend>
class bound_env final : public any_vec_env {
public:
  using venv = rlkernels::vec_env<Env, Backend>;

  bound_env(const rlkernels::env_info& info, Backend backend, std::size_t n, std::uint64_t seed,
            const typename Env::Params& params)
      : info_(info), env_(backend, n, seed, params) {}

  const rlkernels::env_info& info() const override { return info_; }
  std::size_t num_envs() const override { return env_.num_envs(); }
  std::size_t scalar_bytes() const override { return sizeof(typename Env::scalar_type); }
  const char* backend_name() const override { return rlkernels::backend_name(env_.backend()); }
  int device() const override {
    if constexpr (rlkernels::is_host_backend_v<Backend>) {
      return -1;
    } else {
      return env_.backend().device;
    }
  }
  bool has_action_mask() const override { return rlkernels::detail::has_action_mask<Env>::value; }
  std::size_t state_bytes() const override { return sizeof(typename Env::State); }
  std::uint64_t seed() const override { return env_.seed(); }
  std::vector<param_entry> params() const override { return detail::params_of<Env>(env_.params()); }
  std::pair<int, int> capacities() const override { return detail::capacities<Env>(); }

  void* observations() override { return const_cast<void*>(static_cast<const void*>(env_.observations().data())); }
  void* final_observations() override {
    return const_cast<void*>(static_cast<const void*>(env_.final_observations().data()));
  }
  void* rewards() override { return const_cast<void*>(static_cast<const void*>(env_.rewards().data())); }
  std::uint8_t* terminated() override { return const_cast<std::uint8_t*>(env_.terminated().data()); }
  std::uint8_t* truncated() override { return const_cast<std::uint8_t*>(env_.truncated().data()); }
  std::int32_t* episode_lengths() override { return const_cast<std::int32_t*>(env_.episode_lengths().data()); }
  double* episode_returns() override { return const_cast<double*>(env_.episode_returns().data()); }

  void step(const void* actions) override {
    using A = typename venv::action_type;
    env_.step(rlkernels::view<const A>(static_cast<const A*>(actions), env_.num_envs() * venv::action_width));
  }
  void step_from_host(const void* actions) override {
    using A = typename venv::action_type;
    if constexpr (rlkernels::is_host_backend_v<Backend>) {
      step(actions);
    } else {
      const std::size_t count = env_.num_envs() * venv::action_width;
      if (!scratch_) scratch_ = std::make_unique<rlkernels::buffer<A, Backend>>(env_.backend(), count);
      scratch_->assign(static_cast<const A*>(actions), count);
      env_.step(scratch_->cview());
    }
  }
  void synchronize() override { rlkernels::synchronize(env_.backend()); }
  void reset(std::optional<std::uint64_t> seed) override {
    if (seed)
      env_.reset(*seed);
    else
      env_.reset();
  }
  void action_masks(std::uint8_t* out) const override {
    if constexpr (rlkernels::detail::has_action_mask<Env>::value) {
      const std::size_t count = env_.num_envs() * std::size_t(Env::num_actions);
      if constexpr (rlkernels::is_host_backend_v<Backend>) {
        env_.action_masks(rlkernels::view<std::uint8_t>(out, count));
      } else {
        rlkernels::buffer<std::uint8_t, Backend> masks(env_.backend(), count);
        env_.action_masks(masks.view());
        const std::vector<std::uint8_t> host = masks.to_host();
        std::memcpy(out, host.data(), count);
      }
    } else {
      (void)out;
      throw std::invalid_argument("rlkernels: " + std::string(info_.id) + " has no action mask");
    }
  }

  bool has_engine_counters() const override { return detail::has_engine_counters<typename Env::State>::value; }
  std::uint64_t unstable_steps() const override {
    if constexpr (detail::has_engine_counters<typename Env::State>::value)
      return rlkernels::unstable_steps(env_);
    else
      return 0;
  }
  std::uint64_t capacity_overflows() const override {
    if constexpr (detail::has_engine_counters<typename Env::State>::value)
      return rlkernels::capacity_overflows(env_);
    else
      return 0;
  }
  void failed_steps(std::uint64_t* out) const override {
    using state = typename Env::State;
    if constexpr (detail::has_engine_counters<state>::value) {
      std::vector<state> copy;  // CUDA: the states come to the host (only after a truncation)
      const state* s = env_.states().data();
      if constexpr (!rlkernels::is_host_backend_v<Backend>) {
        copy = env_.states().to_host();
        s = copy.data();
      }
      for (std::size_t i = 0; i < env_.num_envs(); ++i)
        out[i] = std::uint64_t(s[i].unstable_steps) + std::uint64_t(s[i].capacity_overflows);
    } else {
      for (std::size_t i = 0; i < env_.num_envs(); ++i) out[i] = 0;
    }
  }
  rlkernels::episode_statistics episode_statistics() const override { return env_.get_episode_statistics(); }
  void clear_episode_statistics() override { env_.clear_episode_statistics(); }
  void get_states(std::uint8_t* out) const override {
    if constexpr (rlkernels::is_host_backend_v<Backend>) {
      std::memcpy(out, env_.states().data(), env_.num_envs() * sizeof(typename Env::State));
    } else {
      const auto host = env_.states().to_host();
      std::memcpy(out, host.data(), host.size() * sizeof(typename Env::State));
    }
  }
  void set_states(const std::uint8_t* in) override {
    std::vector<typename Env::State> states(env_.num_envs());
    std::memcpy(static_cast<void*>(states.data()), in, states.size() * sizeof(typename Env::State));
    env_.set_states(states);
  }

private:
  rlkernels::env_info info_;
  venv env_;
  /// CUDA: the device copy of actions that step_from_host() received in host memory.
  std::unique_ptr<rlkernels::buffer<typename venv::action_type, Backend>> scratch_;
};

namespace detail {

/// The env of `entry`, or full_capacity_t of it, with r's keyword arguments, on `backend`. The
/// full-capacity env's Params take the entry's settings field by field (the two have the same
/// param_fields; the model is the full-capacity env's own).
template <class Env, class Entry, class Backend>
std::unique_ptr<any_vec_env> bind(const make_request& r, const Entry& entry, Backend backend) {
  using entry_env = typename Entry::env_type;
  typename Env::Params params{};
  if constexpr (std::is_same_v<Env, entry_env>) {
    params = entry.params;
  } else {
    apply_params<Env>(r.id, params, params_of<entry_env>(entry.params));
  }
  apply_params<Env>(r.id, params, r.params);
  if constexpr (rlkernels::detail::has_validate_params<Env>::value && capacities<Env>().first >= 0) {
    // The MuJoCo envs refuse settings their capacities cannot hold (Hopper's terminate_when_unhealthy
    // = false with the measured ones): the same check vec_env makes, with the call named.
    try {
      Env::validate(params);
    } catch (const std::invalid_argument& e) {
      constexpr bool host = rlkernels::is_host_backend_v<Backend>;
      throw std::invalid_argument(
          "rlkernels.make_vec('" + r.id + "', capacity='" + r.capacity + "'" +
          (r.capacity == "auto" && !host ? std::string(": the measured capacities on backend 'cuda'") : std::string()) +
          "): " + e.what() +
          (host ? std::string()
                : std::string(". On backend 'cuda' capacity='full' is refused (too large for a GPU thread's stack): "
                              "run these settings on 'serial' or 'openmp' (capacity='auto' is full there), or "
                              "register the env with physics::dims_with_capacity as an env of your own")));
    }
  }
  rlkernels::env_info info = entry.info;
  info.max_episode_steps = params.max_episode_steps;
  return std::make_unique<bound_env<Env, Backend>>(info, backend, r.num_envs, r.seed, params);
}

}  // namespace detail

/// The registry's env for r.id with r's keyword arguments and capacity, on `backend`: r.capacity
/// "auto" is full_capacity_t<Env> on the host backends and Env (the measured capacities) on CUDA,
/// "measured" (or its old name "default") Env, "full" full_capacity_t<Env> (host backends only).
template <class Scalar, class Backend>
std::unique_ptr<any_vec_env> make_bound(const make_request& r, Backend backend) {
  const std::string& c = r.capacity;
  if (c != "auto" && c != "measured" && c != "full" && c != "default")
    throw std::invalid_argument("rlkernels.make_vec('" + r.id +
                                "'): capacity must be 'auto', 'measured' or 'full' ('default' is 'measured'), got '" +
                                c + "'");
  const bool full = c == "full" || (c == "auto" && rlkernels::is_host_backend_v<Backend>);
  return rlkernels::visit_env<Scalar>(r.id, [&](auto entry) -> std::unique_ptr<any_vec_env> {
    using Env = typename decltype(entry)::env_type;
    using Full = rlkernels::full_capacity_t<Env>;
    if (c == "full" && detail::capacities<Env>().first < 0)
      throw std::invalid_argument("rlkernels.make_vec('" + r.id + "'): capacity='full' is for the MuJoCo envs; " +
                                  r.id + " has no physics workspace");
    if constexpr (!std::is_same_v<Full, Env>) {
      if (full) {
        if constexpr (rlkernels::is_host_backend_v<Backend>) {
          return detail::bind<Full>(r, entry, backend);
        } else {
          throw std::invalid_argument("rlkernels.make_vec('" + r.id + "'): capacity='full' runs on the host backends "
                                      "('serial', 'openmp'): its workspace is too large for a GPU thread's stack");
        }
      }
    }
    return detail::bind<Env>(r, entry, backend);
  });
}

}  // namespace rlkernels_python
