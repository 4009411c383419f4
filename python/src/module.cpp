// python/src/module.cpp
// rlkernels._rlkernels: the nanobind module under the Python package. It exposes the registry,
// one VecEnv class over any_vec_env (each method one call into C++, never a loop over envs in
// Python), and the return estimators. Arrays it returns view the library's buffers (no copy);
// arrays it takes are any C-contiguous CPU array (NumPy, or any DLPack producer the Python layer
// has converted) of exactly the dtype asked for: the Python layer does the conversions.
#include "any_vec_env.hpp"

#include <rlkernels/core/error.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/estimators/gae.hpp>
#include <rlkernels/estimators/returns.hpp>
#include <rlkernels/estimators/vtrace.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace nb = nanobind;
using namespace rlkernels_python;

namespace {

using any_array = nb::ndarray<nb::ro, nb::c_contig>;  // any device; read-only input accepted (e.g. from JAX)
using numpy_array = nb::ndarray<nb::numpy>;

/// The env's array at `data` (C order, [rows] or [rows, cols]), kept alive by `owner`: a NumPy
/// array on the host backends; on CUDA a DLPack-capable nanobind array on the env's device (the
/// Python layer wraps it with __cuda_array_interface__).
nb::object view_of(const any_vec_env& e, void* data, std::size_t rows, std::size_t cols, nb::dlpack::dtype dt,
                   nb::handle owner) {
  const std::size_t shape[2] = {rows, cols};
  const std::size_t ndim = cols == 0 ? 1 : 2;
  if (e.device() < 0) return nb::cast(numpy_array(data, ndim, shape, owner, nullptr, dt), nb::rv_policy::reference);
  return nb::cast(nb::ndarray<>(data, ndim, shape, owner, nullptr, dt, nb::device::cuda::value, e.device()),
                  nb::rv_policy::reference);
}

/// A new NumPy array of `count` elements of T that owns its memory.
template <class T>
nb::ndarray<nb::numpy, T> new_array(std::size_t rows, std::size_t cols) {
  T* data = new T[rows * cols]();
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  const std::size_t shape[2] = {rows, cols};
  return nb::ndarray<nb::numpy, T>(data, 2, shape, owner);
}

nb::dlpack::dtype scalar_dtype(const any_vec_env& e) {
  return e.scalar_bytes() == 4 ? nb::dtype<float>() : nb::dtype<double>();
}

std::string dtype_name(nb::dlpack::dtype d) {
  const char* code = "?";
  switch (nb::dlpack::dtype_code(d.code)) {
    case nb::dlpack::dtype_code::Int: code = "int"; break;
    case nb::dlpack::dtype_code::UInt: code = "uint"; break;
    case nb::dlpack::dtype_code::Float: code = "float"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: code = "other"; break;
  }
  return std::string(code) + std::to_string(int(d.bits));
}

param_value to_param_value(const std::string& name, nb::handle v) {
  param_value out;
  if (nb::isinstance<nb::bool_>(v)) {
    out.type = param_value::kind::boolean;
    out.b = nb::cast<bool>(v);
  } else if (nb::isinstance<nb::int_>(v)) {
    out.type = param_value::kind::integer;
    out.i = nb::cast<long long>(v);
  } else if (nb::isinstance<nb::float_>(v)) {
    out.type = param_value::kind::real;
    out.x = nb::cast<double>(v);
  } else if (nb::isinstance<nb::tuple>(v) || nb::isinstance<nb::list>(v)) {
    nb::sequence seq = nb::borrow<nb::sequence>(v);
    if (nb::len(seq) != 2) throw std::invalid_argument("keyword argument '" + name + "' must be a pair (low, high)");
    out.type = param_value::kind::pair;
    out.pair[0] = nb::cast<double>(seq[0]);
    out.pair[1] = nb::cast<double>(seq[1]);
  } else {
    // NumPy scalars and anything else with __float__/__index__
    try {
      out.type = param_value::kind::real;
      out.x = nb::cast<double>(v);
    } catch (const nb::cast_error&) {
      throw std::invalid_argument("keyword argument '" + name + "' must be a bool, int, float or (low, high) pair");
    }
  }
  return out;
}

nb::object from_param_value(const param_value& v) {
  switch (v.type) {
    case param_value::kind::boolean: return nb::bool_(v.b);
    case param_value::kind::integer: return nb::int_(v.i);
    case param_value::kind::real: return nb::float_(v.x);
    case param_value::kind::pair: return nb::make_tuple(v.pair[0], v.pair[1]);
  }
  return nb::none();
}

nb::dict params_dict(const std::vector<param_entry>& entries) {
  nb::dict d;
  for (const param_entry& e : entries) d[e.name.c_str()] = from_param_value(e.value);
  return d;
}

nb::dict info_dict(const rlkernels::env_info& info) {
  nb::dict d;
  d["id"] = std::string(info.id);
  d["type_name"] = std::string(info.type_name);
  d["discrete"] = info.action_space == rlkernels::action_kind::discrete;
  d["observation_size"] = info.observation_size;
  d["num_actions"] = info.num_actions;
  d["action_size"] = info.action_size;
  d["action_low"] = info.action_low;
  d["action_high"] = info.action_high;
  d["max_episode_steps"] = info.max_episode_steps;
  d["reward_threshold"] = info.reward_threshold;
  return d;
}

std::unique_ptr<any_vec_env> make(const std::string& id, std::size_t num_envs, std::uint64_t seed,
                                  const std::string& backend, const std::string& dtype, int num_threads,
                                  nb::dict kwargs, const std::string& capacity) {
  make_request r;
  r.capacity = capacity;
  r.id = id;
  r.num_envs = num_envs;
  r.seed = seed;
  r.backend = backend;
  r.num_threads = num_threads;
  for (auto [k, v] : kwargs) {
    const std::string name = nb::cast<std::string>(k);
    r.params.push_back({name, to_param_value(name, v)});
  }
  if (num_envs == 0) throw std::invalid_argument("rlkernels.make_vec('" + id + "'): num_envs must be >= 1, got 0");
  if (num_threads < 0)
    throw std::invalid_argument("rlkernels.make_vec: num_threads must be >= 0 (0: OpenMP's default), got " +
                                std::to_string(num_threads));
  const bool f32 = dtype == "float32", f64 = dtype == "float64";
  if (!f32 && !f64)
    throw std::invalid_argument("rlkernels.make_vec: dtype must be 'float32' or 'float64', got '" + dtype + "'");
  if (backend == "serial") return f32 ? make_vec_float_serial(r) : make_vec_double_serial(r);
  if (backend == "openmp") return f32 ? make_vec_float_openmp(r) : make_vec_double_openmp(r);
  if (backend == "cuda") {
#if RLK_PYTHON_CUDA
    return f32 ? make_vec_float_cuda(r) : make_vec_double_cuda(r);
#else
    throw std::invalid_argument(
        "rlkernels.make_vec: backend 'cuda' is not built into this Python module (build the package with "
        "-C cmake.define.RLK_PYTHON_CUDA=ON -C cmake.define.RLK_ENABLE_CUDA=ON; this one has 'serial' and 'openmp')");
#endif
  }
  throw std::invalid_argument("rlkernels.make_vec: backend must be 'serial', 'openmp' or 'cuda', got '" + backend + "'");
}

/// Checks an action array's dtype and shape against the env and returns its data pointer.
/// Discrete envs take int32 indices as they are and int64 ones (NumPy's default integer) through
/// one fused range check and narrowing pass into `scratch`: a value outside [0, num_actions) is
/// refused naming its env, before anything is stepped (narrowing first would wrap 2^32 to 0).
const void* checked_actions(const any_vec_env& e, const any_array& a, std::vector<std::int32_t>& scratch) {
  const rlkernels::env_info& info = e.info();
  const bool discrete = info.action_space == rlkernels::action_kind::discrete;
  const bool is_i64 = discrete && a.dtype() == nb::dtype<std::int64_t>();
  const nb::dlpack::dtype want = discrete ? nb::dtype<std::int32_t>() : scalar_dtype(e);
  if (a.dtype() != want && !is_i64)
    throw nb::type_error(("rlkernels: " + std::string(info.id) + " takes " +
                          (discrete ? std::string("int32 or int64") : dtype_name(want)) + " actions, got " +
                          dtype_name(a.dtype()))
                             .c_str());
  const std::size_t n = e.num_envs();
  const bool shape_ok = discrete ? (a.ndim() == 1 && a.shape(0) == n)
                                 : (a.ndim() == 2 && a.shape(0) == n && a.shape(1) == std::size_t(info.action_size));
  if (!shape_ok) {
    std::string got = "(";
    for (std::size_t k = 0; k < a.ndim(); ++k) got += (k ? ", " : "") + std::to_string(a.shape(k));
    got += a.ndim() == 1 ? ",)" : ")";
    const std::string want_shape = discrete ? "(" + std::to_string(n) + ",)"
                                            : "(" + std::to_string(n) + ", " + std::to_string(info.action_size) + ")";
    throw std::invalid_argument("rlkernels: " + std::string(info.id) + " with num_envs=" + std::to_string(n) +
                                " takes actions of shape " + want_shape + ", got " + got);
  }
  if (!is_i64) return a.data();
  const auto* in = static_cast<const std::int64_t*>(a.data());
  const std::int64_t limit = info.num_actions;
  scratch.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t v = in[i];
    if (v < 0 || v >= limit)
      throw rlkernels::invalid_action(i, double(v),
                                      "rlkernels::vec_env::step: action " + std::to_string(v) + " of env " +
                                          std::to_string(i) + " is out of range [0, " + std::to_string(limit) +
                                          "); no env was stepped");
    scratch[i] = std::int32_t(v);
  }
  return scratch.data();
}

// ---- estimators ----

template <class T>
using in2 = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using in1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using flags2 = nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <class T>
rlkernels::rollout_view<T> rollout_of(const char* who, const in2<T>& rewards, const in2<T>& values,
                                      const in2<T>& bootstrap_values, const in1<T>& last_values,
                                      const flags2& terminated, const flags2& truncated) {
  const std::size_t t = rewards.shape(0), n = rewards.shape(1);
  const auto same = [&](const char* name, std::size_t r, std::size_t c) {
    if (r != t || c != n)
      throw std::invalid_argument(std::string("rlkernels.") + who + ": " + name + " has shape (" + std::to_string(r) +
                                  ", " + std::to_string(c) + "), rewards has (" + std::to_string(t) + ", " +
                                  std::to_string(n) + ")");
  };
  same("values", values.shape(0), values.shape(1));
  same("bootstrap_values", bootstrap_values.shape(0), bootstrap_values.shape(1));
  same("terminated", terminated.shape(0), terminated.shape(1));
  same("truncated", truncated.shape(0), truncated.shape(1));
  if (last_values.shape(0) != n)
    throw std::invalid_argument(std::string("rlkernels.") + who + ": last_values has " +
                                std::to_string(last_values.shape(0)) + " elements, rewards has " + std::to_string(n) +
                                " envs");
  rlkernels::rollout_view<T> r;
  r.num_steps = t;
  r.num_envs = n;
  r.rewards = {rewards.data(), t * n};
  r.values = {values.data(), t * n};
  r.bootstrap_values = {bootstrap_values.data(), t * n};
  r.last_values = {last_values.data(), n};
  r.terminated = {terminated.data(), t * n};
  r.truncated = {truncated.data(), t * n};
  return r;
}

template <class T>
void bind_estimators(nb::module_& m) {
  m.def(
      "gae",
      [](in2<T> rewards, in2<T> values, in2<T> bootstrap_values, in1<T> last_values, flags2 terminated,
         flags2 truncated, double gamma, double lam) {
        auto r = rollout_of<T>("gae", rewards, values, bootstrap_values, last_values, terminated, truncated);
        auto adv = new_array<T>(r.num_steps, r.num_envs);
        auto ret = new_array<T>(r.num_steps, r.num_envs);
        {
          nb::gil_scoped_release release;
          rlkernels::gae(rlkernels::openmp_backend{}, r, T(gamma), T(lam),
                         rlkernels::view<T>(adv.data(), adv.size()), rlkernels::view<T>(ret.data(), ret.size()));
        }
        return nb::make_tuple(adv, ret);
      },
      nb::arg("rewards"), nb::arg("values"), nb::arg("bootstrap_values"), nb::arg("last_values"),
      nb::arg("terminated"), nb::arg("truncated"), nb::arg("gamma"), nb::arg("lam"));
  m.def(
      "lambda_returns",
      [](in2<T> rewards, in2<T> values, in2<T> bootstrap_values, in1<T> last_values, flags2 terminated,
         flags2 truncated, double gamma, double lam) {
        auto r = rollout_of<T>("lambda_returns", rewards, values, bootstrap_values, last_values, terminated, truncated);
        auto ret = new_array<T>(r.num_steps, r.num_envs);
        {
          nb::gil_scoped_release release;
          rlkernels::lambda_returns(rlkernels::openmp_backend{}, r, T(gamma), T(lam),
                                    rlkernels::view<T>(ret.data(), ret.size()));
        }
        return ret;
      },
      nb::arg("rewards"), nb::arg("values"), nb::arg("bootstrap_values"), nb::arg("last_values"),
      nb::arg("terminated"), nb::arg("truncated"), nb::arg("gamma"), nb::arg("lam"));
  m.def(
      "n_step_returns",
      [](in2<T> rewards, in2<T> values, in2<T> bootstrap_values, in1<T> last_values, flags2 terminated,
         flags2 truncated, double gamma, int n) {
        auto r = rollout_of<T>("n_step_returns", rewards, values, bootstrap_values, last_values, terminated, truncated);
        auto ret = new_array<T>(r.num_steps, r.num_envs);
        auto disc = new_array<T>(r.num_steps, r.num_envs);
        {
          nb::gil_scoped_release release;
          rlkernels::n_step_returns(rlkernels::openmp_backend{}, r, T(gamma), n,
                                    rlkernels::view<T>(ret.data(), ret.size()),
                                    rlkernels::view<T>(disc.data(), disc.size()));
        }
        return nb::make_tuple(ret, disc);
      },
      nb::arg("rewards"), nb::arg("values"), nb::arg("bootstrap_values"), nb::arg("last_values"),
      nb::arg("terminated"), nb::arg("truncated"), nb::arg("gamma"), nb::arg("n"));
  m.def(
      "vtrace",
      [](in2<T> rewards, in2<T> values, in2<T> bootstrap_values, in1<T> last_values, flags2 terminated,
         flags2 truncated, in2<T> log_rhos, double gamma, double lam, double rho_bar, double c_bar,
         double pg_rho_bar) {
        auto r = rollout_of<T>("vtrace", rewards, values, bootstrap_values, last_values, terminated, truncated);
        if (log_rhos.shape(0) != r.num_steps || log_rhos.shape(1) != r.num_envs)
          throw std::invalid_argument("rlkernels.vtrace: log_rhos has shape (" + std::to_string(log_rhos.shape(0)) +
                                      ", " + std::to_string(log_rhos.shape(1)) + "), rewards has (" +
                                      std::to_string(r.num_steps) + ", " + std::to_string(r.num_envs) + ")");
        rlkernels::vtrace_params<T> p;
        p.gamma = T(gamma);
        p.lambda = T(lam);
        p.rho_bar = T(rho_bar);
        p.c_bar = T(c_bar);
        p.pg_rho_bar = T(pg_rho_bar);
        auto vs = new_array<T>(r.num_steps, r.num_envs);
        auto pg = new_array<T>(r.num_steps, r.num_envs);
        {
          nb::gil_scoped_release release;
          rlkernels::vtrace(rlkernels::openmp_backend{}, r,
                            rlkernels::view<const T>(log_rhos.data(), r.num_steps * r.num_envs), p,
                            rlkernels::view<T>(vs.data(), vs.size()), rlkernels::view<T>(pg.data(), pg.size()));
        }
        return nb::make_tuple(vs, pg);
      },
      nb::arg("rewards"), nb::arg("values"), nb::arg("bootstrap_values"), nb::arg("last_values"),
      nb::arg("terminated"), nb::arg("truncated"), nb::arg("log_rhos"), nb::arg("gamma"), nb::arg("lam"),
      nb::arg("rho_bar"), nb::arg("c_bar"), nb::arg("pg_rho_bar"));
}

}  // namespace

NB_MODULE(_rlkernels, m) {
  m.doc() = "rlkernels' C++ batched environments and estimators (use the rlkernels package, not this module)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const rlkernels::unknown_env& e) {
      PyErr_SetString(PyExc_KeyError, e.what());
    } catch (const rlkernels::out_of_memory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

#if RLK_PYTHON_CUDA
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  m.def("registered_envs", []() {
    nb::list out;
    for (const rlkernels::env_info& info : rlkernels::registered_envs()) out.append(info_dict(info));
    return out;
  });
  m.def("default_params", [](const std::string& id) { return params_dict(default_params(id)); }, nb::arg("id"));
  m.def(
      "capacities",
      [](const std::string& id) -> nb::object {
        const auto [measured, full] = capacities_of(id);
        if (measured.first < 0) return nb::none();
        const nb::tuple m = nb::make_tuple(measured.first, measured.second);
        const nb::tuple f = nb::make_tuple(full.first, full.second);
        nb::dict by_backend;  // what capacity="auto" gives (make_bound)
        by_backend["serial"] = f;
        by_backend["openmp"] = f;
        by_backend["cuda"] = m;
        nb::dict d;
        d["measured"] = m;
        d["full"] = f;
        d["auto"] = by_backend;
        return d;
      },
      nb::arg("id"));

  nb::class_<any_vec_env>(m, "VecEnv")
      .def_prop_ro("info", [](const any_vec_env& e) { return info_dict(e.info()); })
      .def_prop_ro("num_envs", &any_vec_env::num_envs)
      .def_prop_ro("backend", &any_vec_env::backend_name)
      .def_prop_ro("dtype", [](const any_vec_env& e) { return e.scalar_bytes() == 4 ? "float32" : "float64"; })
      .def_prop_ro("has_action_mask", &any_vec_env::has_action_mask)
      .def_prop_ro("state_bytes", &any_vec_env::state_bytes)
      .def_prop_ro("seed", &any_vec_env::seed)
      .def_prop_ro("params", [](const any_vec_env& e) { return params_dict(e.params()); })
      .def_prop_ro("capacities",
                   [](const any_vec_env& e) -> nb::object {
                     const auto [ncon, nefc] = e.capacities();
                     if (ncon < 0) return nb::none();
                     return nb::make_tuple(ncon, nefc);
                   })
      .def_prop_ro("device", &any_vec_env::device)
      .def("observations",
           [](any_vec_env& e) {
             return view_of(e, e.observations(), e.num_envs(), e.info().observation_size, scalar_dtype(e),
                            nb::find(&e));
           })
      .def("final_observations",
           [](any_vec_env& e) {
             return view_of(e, e.final_observations(), e.num_envs(), e.info().observation_size, scalar_dtype(e),
                            nb::find(&e));
           })
      .def("rewards",
           [](any_vec_env& e) { return view_of(e, e.rewards(), e.num_envs(), 0, scalar_dtype(e), nb::find(&e)); })
      .def("terminated",
           [](any_vec_env& e) { return view_of(e, e.terminated(), e.num_envs(), 0, nb::dtype<bool>(), nb::find(&e)); })
      .def("truncated",
           [](any_vec_env& e) { return view_of(e, e.truncated(), e.num_envs(), 0, nb::dtype<bool>(), nb::find(&e)); })
      .def("episode_lengths",
           [](any_vec_env& e) {
             return view_of(e, e.episode_lengths(), e.num_envs(), 0, nb::dtype<std::int32_t>(), nb::find(&e));
           })
      .def("episode_returns",
           [](any_vec_env& e) {
             return view_of(e, e.episode_returns(), e.num_envs(), 0, nb::dtype<double>(), nb::find(&e));
           })
      .def("pointers",
           [](any_vec_env& e) {
             // raw addresses of the arrays, for __cuda_array_interface__ (the Python layer)
             nb::dict d;
             d["observations"] = reinterpret_cast<std::uintptr_t>(e.observations());
             d["final_observations"] = reinterpret_cast<std::uintptr_t>(e.final_observations());
             d["rewards"] = reinterpret_cast<std::uintptr_t>(e.rewards());
             d["terminated"] = reinterpret_cast<std::uintptr_t>(e.terminated());
             d["truncated"] = reinterpret_cast<std::uintptr_t>(e.truncated());
             return d;
           })
      .def(
          "step",
          [](any_vec_env& e, any_array actions) {
            const bool on_device = actions.device_type() == nb::device::cuda::value;
            if (actions.device_type() != nb::device::cpu::value && !on_device)
              throw nb::type_error("rlkernels: actions must be in host memory or on a CUDA device");
            if (on_device) {
              if (e.device() < 0)
                throw nb::type_error(("rlkernels: the actions are on cuda:" + std::to_string(actions.device_id()) +
                                      ", but this env runs on the host backend '" + e.backend_name() +
                                      "': pass host (NumPy/CPU) actions")
                                         .c_str());
              if (actions.device_id() != e.device())
                throw nb::type_error(("rlkernels: the actions are on cuda:" + std::to_string(actions.device_id()) +
                                      ", the env on cuda:" + std::to_string(e.device()))
                                         .c_str());
              if (e.info().action_space == rlkernels::action_kind::discrete &&
                  actions.dtype() != nb::dtype<std::int32_t>())
                throw nb::type_error("rlkernels: discrete actions on the GPU must be int32 (torch: .int())");
            }
            thread_local std::vector<std::int32_t> scratch;
            const void* p = checked_actions(e, actions, scratch);
            nb::gil_scoped_release release;
            if (on_device || e.device() < 0)
              e.step(p);
            else
              e.step_from_host(p);
            e.synchronize();
          },
          nb::arg("actions"))
      .def(
          "reset",
          [](any_vec_env& e, std::optional<std::uint64_t> seed) {
            nb::gil_scoped_release release;
            e.reset(seed);
            e.synchronize();
          },
          nb::arg("seed") = nb::none())
      .def("action_masks",
           [](const any_vec_env& e) {
             if (!e.has_action_mask())
               throw std::invalid_argument("rlkernels: " + std::string(e.info().id) + " has no action mask");
             auto out = new_array<bool>(e.num_envs(), std::size_t(e.info().num_actions));
             static_assert(sizeof(bool) == 1, "bool masks are bytes");
             e.action_masks(reinterpret_cast<std::uint8_t*>(out.data()));
             return out;
           })
      .def("episode_statistics",
           [](const any_vec_env& e) {
             const rlkernels::episode_statistics s = e.episode_statistics();
             nb::dict d;
             d["count"] = s.count;
             d["mean_return"] = s.mean_return;
             d["mean_length"] = s.mean_length;
             d["min_return"] = s.min_return;
             d["max_return"] = s.max_return;
             return d;
           })
      .def("clear_episode_statistics", &any_vec_env::clear_episode_statistics)
      .def_prop_ro("has_engine_counters", &any_vec_env::has_engine_counters)
      .def("unstable_steps", &any_vec_env::unstable_steps)
      .def("capacity_overflows", &any_vec_env::capacity_overflows)
      .def("failed_steps",
           [](const any_vec_env& e) {
             auto out = new_array<std::uint64_t>(e.num_envs(), 1);  // [N, 1]; Python takes column 0
             e.failed_steps(out.data());
             return out;
           })
      .def("get_states",
           [](const any_vec_env& e) {
             auto out = new_array<std::uint8_t>(e.num_envs(), e.state_bytes());
             e.get_states(out.data());
             return out;
           })
      .def(
          "set_states",
          [](any_vec_env& e, nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> states) {
            if (states.shape(0) != e.num_envs() || states.shape(1) != e.state_bytes())
              throw std::invalid_argument("rlkernels: set_states takes a uint8 array of shape (" +
                                          std::to_string(e.num_envs()) + ", " + std::to_string(e.state_bytes()) +
                                          "), got (" + std::to_string(states.shape(0)) + ", " +
                                          std::to_string(states.shape(1)) + ")");
            e.set_states(states.data());
          },
          nb::arg("states"));

  m.def("make", &make, nb::arg("id"), nb::arg("num_envs"), nb::arg("seed"), nb::arg("backend"), nb::arg("dtype"),
        nb::arg("num_threads"), nb::arg("kwargs"), nb::arg("capacity") = "auto");

  bind_estimators<float>(m);
  bind_estimators<double>(m);
}
