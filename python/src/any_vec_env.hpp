// python/src/any_vec_env.hpp
// One type for every rlkernels::vec_env<Env, Backend> the Python module can make: the module's
// step/reset calls go through this interface (one virtual call per batch step, never per env),
// and its arrays are the vec_env's own host buffers, which Python views without copying.
#pragma once

#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlkernels_python {

/// A keyword argument's value as Python gave it (the module converts; the env checks the type
/// against the field it names).
struct param_value {
  enum class kind { boolean, integer, real, pair };
  kind type = kind::real;
  bool b = false;
  long long i = 0;
  double x = 0;
  double pair[2] = {0, 0};
};

/// One named field of an env's Params as it is now.
struct param_entry {
  std::string name;
  param_value value;
};

/// What make_vec() was asked for.
struct make_request {
  std::string id;
  std::size_t num_envs = 0;
  std::uint64_t seed = 0;
  std::string backend = "openmp";  ///< "serial", "openmp" or (a build with RLK_PYTHON_CUDA) "cuda"
  int num_threads = 0;             ///< OpenMP threads (0: OpenMP's default)
  std::vector<param_entry> params; ///< keyword arguments
  /// The MuJoCo envs' workspace: "auto" ("full" on the host backends, "measured" on CUDA), "measured"
  /// (the env's own Dims; "default" is its old name) or "full" (rlkernels::full_capacity_t).
  std::string capacity = "auto";
};

/// The interface of a batch of envs of one type on one host backend.
class any_vec_env {
public:
  virtual ~any_vec_env() = default;

  // ---- description ----
  virtual const rlkernels::env_info& info() const = 0;  ///< registry description (id, spaces)
  virtual std::size_t num_envs() const = 0;             ///< N
  virtual std::size_t scalar_bytes() const = 0;         ///< 4 (float) or 8 (double)
  virtual const char* backend_name() const = 0;         ///< "serial", "openmp" or "cuda"
  virtual int device() const = 0;                       ///< -1: arrays in host memory; else the CUDA device
  virtual bool has_action_mask() const = 0;             ///< Env::action_mask exists
  virtual std::size_t state_bytes() const = 0;          ///< sizeof(Env::State)
  virtual std::uint64_t seed() const = 0;               ///< key of the random streams now
  /// The physics workspace's contact and constraint-row capacities per env (the MuJoCo envs;
  /// {-1, -1} for envs without one).
  virtual std::pair<int, int> capacities() const = 0;
  virtual std::vector<param_entry> params() const = 0;  ///< the Params fields Python can set

  // ---- the vec_env's arrays, in host memory or on device() (valid until the object dies;
  //      rewritten by step and reset) ----
  virtual void* observations() = 0;          ///< [N, observation_size] scalar
  virtual void* final_observations() = 0;    ///< [N, observation_size] scalar
  virtual void* rewards() = 0;               ///< [N] scalar
  virtual std::uint8_t* terminated() = 0;    ///< [N]
  virtual std::uint8_t* truncated() = 0;     ///< [N]
  virtual std::int32_t* episode_lengths() = 0;   ///< [N] steps of the episode in progress
  virtual double* episode_returns() = 0;         ///< [N] return of the episode in progress

  // ---- actions ----
  /// Steps every env. `actions` holds num_envs() int32 indices (discrete) or
  /// num_envs() * action_size scalars of scalar_bytes() each (continuous); vec_env::step
  /// validates the values and changes nothing when it throws.
  virtual void step(const void* actions) = 0;
  /// step() with the actions in host memory: the same on the host backends; on CUDA they are
  /// copied to the device first.
  virtual void step_from_host(const void* actions) = 0;
  /// Waits until the arrays hold the results of the last step or reset (CUDA; no-op on the host).
  virtual void synchronize() = 0;
  /// Resets every env from the start of its stream under `seed` (none: the current seed).
  virtual void reset(std::optional<std::uint64_t> seed) = 0;
  /// [N, num_actions] legal-action masks of the current observations (has_action_mask()), into host
  /// memory.
  virtual void action_masks(std::uint8_t* out) const = 0;

  // ---- episodes and states ----
  virtual rlkernels::episode_statistics episode_statistics() const = 0;
  virtual void clear_episode_statistics() = 0;
  /// Copies the N states out as raw bytes, [N, state_bytes()].
  virtual void get_states(std::uint8_t* out) const = 0;
  /// Overwrites the N states from raw bytes and recomputes the observations.
  virtual void set_states(const std::uint8_t* in) = 0;

  // ---- the physics engine's counters (the MuJoCo envs; the others have none) ----
  virtual bool has_engine_counters() const = 0;  ///< the env's State counts unstable steps and capacity overflows
  /// Env steps the engine could not compute, summed over the batch (rlkernels::unstable_steps; 0 without counters).
  virtual std::uint64_t unstable_steps() const = 0;
  /// Env steps that needed more contacts or constraint rows than the workspace holds, summed over
  /// the batch (rlkernels::capacity_overflows; 0 without counters).
  virtual std::uint64_t capacity_overflows() const = 0;
  /// Per env, the failed steps so far (unstable steps + capacity overflows of its State; 0 without
  /// counters), [N] into host memory: where it grew over a step, that step failed and ended the
  /// env's episode as truncated.
  virtual void failed_steps(std::uint64_t* out) const = 0;
};

/// make_vec() for one scalar type and backend (one translation unit each, so the four compile in
/// parallel). Throws rlkernels::unknown_env, std::invalid_argument (bad sizes or keyword
/// arguments) or rlkernels::out_of_memory.
std::unique_ptr<any_vec_env> make_vec_float_serial(const make_request& r);
std::unique_ptr<any_vec_env> make_vec_float_openmp(const make_request& r);
std::unique_ptr<any_vec_env> make_vec_double_serial(const make_request& r);
std::unique_ptr<any_vec_env> make_vec_double_openmp(const make_request& r);
#if RLK_PYTHON_CUDA
std::unique_ptr<any_vec_env> make_vec_float_cuda(const make_request& r);   // python/src/envs_float_cuda.cu
std::unique_ptr<any_vec_env> make_vec_double_cuda(const make_request& r);  // python/src/envs_double_cuda.cu
#endif

/// The keyword arguments `id` accepts with their default values (Gymnasium's where it has them).
std::vector<param_entry> default_params(const std::string& id);

/// The contact and row capacities of `id` with capacity "measured" and "full" ({-1, -1} each for
/// envs without a physics workspace).
std::pair<std::pair<int, int>, std::pair<int, int>> capacities_of(const std::string& id);

}  // namespace rlkernels_python
