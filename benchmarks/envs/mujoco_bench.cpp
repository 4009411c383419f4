// benchmarks/envs/mujoco_bench.cpp
// Env-steps per second of the MuJoCo envs Hopper-v5, Walker2d-v5, HalfCheetah-v5, Ant-v5,
// Humanoid-v5, Pusher-v5 (the manipulator: three trees, cylinder contacts by GJK/EPA),
// InvertedPendulum-v5, InvertedDoublePendulum-v5, Swimmer-v5 (fluid forces) and Reacher-v5 (two
// trees, islands):
//   - rlkernels' own envs (rlkernels::hopper<Scalar>, walker2d<Scalar>, half_cheetah<Scalar> on the
//     physics engine in include/rlkernels/physics/) through vec_env, step and step_unchecked, in
//     float and in double, on the backend of this build variant (OpenMP: serial_below = 0, every
//     batch in parallel);
//   - on the host variants, beside them in the same run, MuJoCo's own C library (libmujoco from the
//     PyPI wheel `mujoco`) batched the way EnvPool batches it: one mjData per env, a loop over the
//     envs (OpenMP, schedule(static) like vec_env, in the openmp variant; one thread in the serial
//     one), each env setting ctrl to its action and calling mj_step frame_skip times, as Gymnasium's
//     MujocoEnv.do_simulation does, with Gymnasium v5's episode rules (healthy checks, truncation
//     at 1000 steps (Pusher 100, Reacher 50), reset with v5's reset noise (Pusher: its object draw,
//     Reacher: its goal draw) followed
//     by mj_forward, as Gymnasium's set_state).
// An env step is frame_skip physics steps (Hopper and Walker2d 4 x 0.002 s with RK4, HalfCheetah
// 5 x 0.01 s with implicit Euler, Pusher 5 x 0.01 s with Euler, InvertedPendulum 2 x 0.02 s,
// InvertedDoublePendulum 5 x 0.01 s, Swimmer 4 x 0.01 s and Reacher 2 x 0.01 s with RK4, Ant
// 5 x 0.01 s and Humanoid
// 5 x 0.003 s with RK4; for these two
// MuJoCo's rows also call mj_rnePostConstraint once per env step, as Gymnasium does): items_per_second counts env steps, the mj_steps_per_second
// counter physics steps, and env_steps_per_second_per_thread divides by the threads that had
// work (min(threads, N)).
//
// Rows: BM_vec_env_step/<id>/<backend>/<N> and BM_vec_env_step_unchecked/... for float,
// BM_vec_env_step/<id>:double/<backend>/<N> ... for double, BM_mj_step/<id>/<backend>/<N> for
// MuJoCo (host variants, when CMake found MuJoCo and Gymnasium's XML files: RLK_BENCH_MUJOCO,
// RLK_GYMNASIUM_ASSETS; without them those rows are left out). Built once per backend by
// rlk_add_variants; benchmarks/compare.py runs it beside Gymnasium and EnvPool.
// The serial variant also steps the envs whose capacities were measured (Hopper, Walker2d,
// HalfCheetah, Ant, Humanoid, HumanoidStandup) at their full capacities,
// rlkernels::full_capacity_t<Env>: BM_vec_env_step/<id>.full_capacity/serial/<N> and
// <id>.full_capacity:double, beside the default rows (same N, actions and seeds; docs/physics.md
// compares the two). Every vec_env row carries its env's bytes per env as counters: state_bytes
// (the State), workspace_bytes (physics::data) and solver_bytes (Newton's context; PGS: its
// matrix AR and Y), and capacity_overflows (the batch's steps that needed more contacts or rows,
// since the fixture was built).
#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"
#include "../../tests/envs/gymnasium_tasks.hpp"

#include <rlkernels/envs/mujoco/half_cheetah.hpp>
#include <rlkernels/envs/mujoco/ant.hpp>
#include <rlkernels/envs/mujoco/full_capacity.hpp>
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

// MuJoCo's C library: host variants only (the CUDA bundle must not need libmujoco).
#if defined(RLK_BENCH_MUJOCO) && !defined(RLK_BACKEND_CUDA)
#include <mujoco/mujoco.h>
#define RLK_BENCH_HAVE_MJ 1
#ifndef RLK_GYMNASIUM_ASSETS
#error "mujoco_bench: RLK_BENCH_MUJOCO needs RLK_GYMNASIUM_ASSETS (the directory of Gymnasium's MuJoCo XML files)"
#endif
#endif

#if defined(RLK_BACKEND_OPENMP) && RLK_HAS_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

constexpr std::int64_t batch_sizes[] = {1, 64, 1024, 4096};
constexpr std::uint64_t env_seed = 2026;
constexpr std::size_t action_buffer_count = 4;  // cycled, so steps do not repeat one action pattern
constexpr double min_time_s = 0.2;

/// Threads an OpenMP loop over n envs keeps busy (1 on serial and CUDA).
int busy_threads(std::int64_t n) {
#if defined(RLK_BACKEND_OPENMP) && RLK_HAS_OPENMP
  return int(std::min<std::int64_t>(omp_get_max_threads(), n));
#else
  (void)n;
  return 1;
#endif
}

/// Warm-up steps for batch size n: the binary's default follows the rule every system of
/// benchmarks/compare.py gets (128 steps, fewer for big batches: about 2^20 env steps, at least 8), so
/// that the device check's 2^22 envs warm up in 8 steps. Enough to spread Hopper's and Walker2d's
/// resets (random-action episodes last tens of steps); HalfCheetah never terminates.
int warmup_steps(std::int64_t n) { return rlk_bench::compare_warmup_steps(n); }

/// [action_buffer_count][n * width] actions uniform in [-1, 1] (within every model's ctrlrange);
/// a pure function of n, so every row (ours and MuJoCo's) sees the same actions.
template <class T>
std::vector<std::vector<T>> make_actions(std::size_t n, int width) {
  std::mt19937 gen(static_cast<std::uint32_t>(777 + n));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<T>> out(action_buffer_count, std::vector<T>(n * std::size_t(width)));
  for (auto& actions : out)
    for (auto& a : actions) a = static_cast<T>(u(gen));
  return out;
}

/// The counters of every row: env steps/s (items_per_second), physics steps/s, env steps/s per busy
/// thread, and the completed episodes' mean length and return (warm-up included): ours and MuJoCo's
/// rows should agree on these, as they step the same MDP under the same random policy.
void set_counters(benchmark::State& state, std::int64_t n, int frame_skip, const rlk::episode_statistics& episodes) {
  state.counters["mean_episode_length"] = episodes.mean_length;
  state.counters["mean_return"] = episodes.mean_return;
  state.counters["episodes"] = double(episodes.count);
  const double env_steps = double(state.iterations()) * double(n);
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["mj_steps_per_second"] = benchmark::Counter(env_steps * frame_skip, benchmark::Counter::kIsRate);
  state.counters["env_steps_per_second_per_thread"] =
      benchmark::Counter(env_steps / busy_threads(n), benchmark::Counter::kIsRate);
}

// ---- rlkernels vec_env ------------------------------------------------------------------------

/// Bytes per env of Env's physics, as counters: its State (global memory, one per env), the
/// workspace of a forward pass (physics::data, without the rows' stored terms) and the solver's
/// context (Newton's; PGS: its matrix AR plus Y, nefc x nv), the last two on the stepping thread's
/// stack. docs/physics.md's table "Bytes per env" gives the same figures.
template <class Env>
void set_memory_counters(benchmark::State& state) {
  using S = typename Env::scalar_type;
  using dims = typename Env::dims;
  using data = rlk::physics::data<S, dims>;
  double solver = 0;
  if constexpr (rlk::physics::dims_pgs<dims>) {
    solver = double(sizeof(rlk::physics::detail::pgs_context<S, dims>) +
                    sizeof(S) * std::size_t(data::nefc_) * std::size_t(dims::nv));
  } else {
    solver = double(sizeof(rlk::physics::detail::newton_context<S, dims>));
  }
  state.counters["state_bytes"] = double(sizeof(typename Env::State));
  state.counters["workspace_bytes"] = double(sizeof(data));
  state.counters["solver_bytes"] = solver;
}

/// The backend of our rows: on OpenMP with serial_below = 0, as openmp_backend's documentation
/// advises for heavy elements (a physics env step is tens of microseconds; the default, 1024, would
/// step batches under 1024 envs on one thread), so that every batch runs in parallel like MuJoCo's.
bench_backend physics_backend() {
  bench_backend b{};
#if defined(RLK_BACKEND_OPENMP)
  b.serial_below = 0;
#endif
  return b;
}

template <class Env>
struct vec_env_fixture {
  using vec = rlk::vec_env<Env, bench_backend>;
  using action_type = typename vec::action_type;
  std::size_t num_envs;
  vec envs;
  std::vector<rlk::buffer<action_type, bench_backend>> actions;
  vec_env_fixture(std::size_t n, int warmup) : num_envs(n), envs(physics_backend(), n, env_seed) {
    for (const auto& host : make_actions<action_type>(n, vec::action_width)) actions.emplace_back(physics_backend(), host);
    for (int t = 0; t < warmup; ++t) envs.step_unchecked(action(std::size_t(t)));
    rlk::synchronize(physics_backend());
  }
  rlk::view<const action_type> action(std::size_t k) const { return actions[k % actions.size()].cview(); }
};

template <class Env, bool Checked>
void BM_vec_env(benchmark::State& state, int frame_skip) {
  const auto n = static_cast<std::size_t>(state.range(0));
  vec_env_fixture<Env>* fixture = nullptr;
  try {  // out of memory at the device check's biggest N: an error row, and the run goes on
    fixture = &fixture_for<vec_env_fixture<Env>>(n, rlk_bench::warmup_or(std::int64_t(n), warmup_steps(std::int64_t(n))));
  } catch (const std::exception& e) {
    rlk_bench::cached_fixture<vec_env_fixture<Env>>().reset();
    state.SkipWithError(e.what());
    return;
  }
  auto& f = *fixture;
  std::size_t k = 0;
  for (auto _ : state) {
    if constexpr (Checked) {
      f.envs.step(f.action(k++));
    } else {
      f.envs.step_unchecked(f.action(k++));
    }
    rlk::synchronize(f.envs.backend());  // CUDA launches are asynchronous: time finished steps
    benchmark::ClobberMemory();
  }
  set_counters(state, std::int64_t(n), frame_skip, f.envs.get_episode_statistics());
  set_memory_counters<Env>(state);
  // steps that ran out of contacts or rows (each ended its episode): 0 where the default capacity
  // rows did the full capacity rows' work
  state.counters["capacity_overflows"] = double(rlk::capacity_overflows(f.envs));
}

template <class Env>
void add_vec_env_rows(const std::string& id, int frame_skip, std::int64_t n) {
  const std::string backend = rlk::backend_name(bench_backend{});
  const double t = rlk_bench::min_time_or(min_time_s);
  for (const auto& [row, fn] : {std::pair{"BM_vec_env_step/", &BM_vec_env<Env, true>},
                                std::pair{"BM_vec_env_step_unchecked/", &BM_vec_env<Env, false>}}) {
    benchmark::RegisterBenchmark((row + id + "/" + backend).c_str(), fn, frame_skip)
        ->Arg(n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(t);
  }
}

// ---- MuJoCo's mj_step, one mjData per env -------------------------------------------------------

#if RLK_BENCH_HAVE_MJ
/// Gymnasium v5's settings of the three envs (gymnasium/envs/mujoco/*_v5.py defaults).
struct mj_env_spec {
  const char* id;
  const char* xml;           ///< file in Gymnasium's assets directory
  int frame_skip;
  double reset_noise_scale;
  bool cheetah_noise;        ///< HalfCheetah, Ant: qvel noise is reset_noise_scale * N(0, 1), not uniform
  int healthy;               ///< 0 never terminates, 1 Hopper's rule, 2 Walker2d's, 3 Ant's, 4 Humanoid's; 5 Pusher (never terminates), 6-9 the envs below
};

constexpr mj_env_spec hopper_spec{"Hopper-v5", "hopper.xml", 4, 5e-3, false, 1};
constexpr mj_env_spec walker2d_spec{"Walker2d-v5", "walker2d_v5.xml", 4, 5e-3, false, 2};
constexpr mj_env_spec half_cheetah_spec{"HalfCheetah-v5", "half_cheetah.xml", 5, 0.1, true, 0};
constexpr mj_env_spec ant_spec{"Ant-v5", "ant.xml", 5, 0.1, true, 3};
constexpr mj_env_spec humanoid_spec{"Humanoid-v5", "humanoid.xml", 5, 1e-2, false, 4};
constexpr int pusher_code = 5;
constexpr mj_env_spec pusher_spec{"Pusher-v5", "pusher_v5.xml", 5, 0.0, false, pusher_code};
constexpr int inverted_pendulum_code = 6, inverted_double_pendulum_code = 7, swimmer_code = 8, reacher_code = 9;
constexpr mj_env_spec inverted_pendulum_spec{"InvertedPendulum-v5", "inverted_pendulum.xml", 2, 0.01, false,
                                             inverted_pendulum_code};
// (qvel noise: reset_noise_scale * N(0, 1), as cheetah_noise)
constexpr mj_env_spec inverted_double_pendulum_spec{"InvertedDoublePendulum-v5", "inverted_double_pendulum.xml", 5, 0.1,
                                                    true, inverted_double_pendulum_code};
constexpr mj_env_spec swimmer_spec{"Swimmer-v5", "swimmer.xml", 4, 0.1, false, swimmer_code};
constexpr mj_env_spec reacher_spec{"Reacher-v5", "reacher.xml", 2, 0.1, false, reacher_code};

/// Observation width of a spec: qpos[1:] and qvel for the planar walkers; Ant qpos[2:], qvel and
/// cfrc_ext[1:]; Humanoid also cinert[1:], cvel[1:] and qfrc_actuator[6:].
int mj_obs_size(const mjModel* m, int healthy) {
  if (healthy == pusher_code) return 23;  // qpos[:7], qvel[:7], three bodies' xpos
  if (healthy == inverted_pendulum_code) return 4;          // qpos, qvel
  if (healthy == inverted_double_pendulum_code) return 9;   // x, sin and cos of the angles, qvel, qfrc_constraint[0]
  if (healthy == swimmer_code) return 8;                    // qpos[2:], qvel
  if (healthy == reacher_code) return 10;                   // cos, sin of the arm, the goal, the arm's qvel, tip - target
  if (healthy == 3) return m->nq - 2 + m->nv + 6 * (m->nbody - 1);
  if (healthy == 4) return m->nq - 2 + m->nv + 22 * (m->nbody - 1) + (m->nv - 6);
  return m->nq - 1 + m->nv;
}

/// The loaded model of one spec, shared by every fixture of that env (loading takes milliseconds;
/// never freed: it lives until the process ends).
const mjModel* load_model(const mj_env_spec& spec) {
  static std::vector<std::pair<const char*, mjModel*>> models;
  for (const auto& [id, m] : models)
    if (id == spec.id) return m;
  const std::string path = std::string(RLK_GYMNASIUM_ASSETS) + "/" + spec.xml;
  char error[1000] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  if (!m) throw std::runtime_error("mj_loadXML(" + path + "): " + error);
  models.emplace_back(spec.id, m);
  return m;
}

/// N envs of one spec as EnvPool batches MuJoCo: an mjData each, stepped in a loop over the envs.
/// Per env step: ctrl = the action, mj_step x frame_skip, Gymnasium v5's reward (forward velocity
/// from qpos[0] before and after, healthy reward, control cost) and observation (qpos[1:], qvel;
/// Hopper and Walker2d clip qvel to +-10), its healthy check and 1000-step truncation; an env whose episode
/// ends is reset at once (mj_resetData, v5's reset noise, mj_forward) like vec_env's.
template <const mj_env_spec& Spec>
struct mj_fixture {
  std::size_t num_envs;
  const mjModel* m;
  int nq, nv, nu, obs_size;
  std::vector<mjData*> data;
  std::vector<std::mt19937_64> gens;  // per env: its reset noise
  std::vector<std::int32_t> elapsed;
  std::vector<double> observations, rewards, episode_returns;
  // per env (no sharing between threads): completed episodes, their summed lengths and returns
  std::vector<std::uint64_t> episodes;
  std::vector<double> length_sums, return_sums;
  std::vector<std::uint8_t> terminated, truncated;
  std::vector<std::vector<double>> actions;
  int fingertip_body = -1, target_body = -1;  // Reacher's

  mj_fixture(std::size_t n, int warmup)
      : num_envs(n), m(load_model(Spec)), nq(m->nq), nv(m->nv), nu(m->nu), obs_size(mj_obs_size(m, Spec.healthy)), data(n, nullptr),
        elapsed(n, 0), observations(n * std::size_t(obs_size)), rewards(n), episode_returns(n), episodes(n),
        length_sums(n), return_sums(n), terminated(n), truncated(n),
        actions(make_actions<double>(n, m->nu)) {
    if (Spec.healthy == reacher_code) {
      fingertip_body = mj_name2id(m, mjOBJ_BODY, "fingertip");
      target_body = mj_name2id(m, mjOBJ_BODY, "target");
      if (fingertip_body < 0 || target_body < 0) throw std::runtime_error("reacher.xml: no body 'fingertip' or 'target'");
    }
    gens.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      gens.emplace_back(env_seed * 1000003u + i);
      data[i] = mj_makeData(m);
      if (!data[i]) throw std::runtime_error("mj_makeData failed (out of memory?)");
      reset(i);
    }
    for (int t = 0; t < warmup; ++t) step(std::size_t(t));
  }
  mj_fixture(const mj_fixture&) = delete;
  mj_fixture& operator=(const mj_fixture&) = delete;
  ~mj_fixture() {
    for (mjData* d : data) mj_deleteData(d);
  }

  void reset(std::size_t i) {
    mjData* d = data[i];
    mj_resetData(m, d);
    std::uniform_real_distribution<double> u(-Spec.reset_noise_scale, Spec.reset_noise_scale);
    std::normal_distribution<double> g(0.0, 1.0);
    if (Spec.healthy == pusher_code) {  // Pusher's reset_model: the object away from the goal
      std::uniform_real_distribution<double> oy(-0.3, 0.0), ox(-0.2, 0.2), v(-0.005, 0.005);
      double y, x;
      do {
        y = oy(gens[i]);
        x = ox(gens[i]);
      } while (!(std::sqrt(y * y + x * x) > 0.17));
      d->qpos[7] = y;
      d->qpos[8] = x;
      for (int k = 0; k < nv; ++k) d->qvel[k] = k < 7 ? v(gens[i]) : 0.0;
      mj_forward(m, d);
      elapsed[i] = 0;
      return;
    }
    for (int k = 0; k < nq; ++k) d->qpos[k] = m->qpos0[k] + u(gens[i]);
    if (Spec.healthy == reacher_code) {  // Reacher's reset_model: a goal in the disc of radius 0.2
      std::uniform_real_distribution<double> goal(-0.2, 0.2), v(-0.005, 0.005);
      double gx, gy;
      do {
        gx = goal(gens[i]);
        gy = goal(gens[i]);
      } while (!(std::sqrt(gx * gx + gy * gy) < 0.2));
      d->qpos[nq - 2] = gx;
      d->qpos[nq - 1] = gy;
      for (int k = 0; k < nv; ++k) d->qvel[k] = k < nv - 2 ? v(gens[i]) : 0.0;
      mj_forward(m, d);
      elapsed[i] = 0;
      return;
    }
    for (int k = 0; k < nv; ++k) d->qvel[k] = Spec.cheetah_noise ? Spec.reset_noise_scale * g(gens[i]) : u(gens[i]);
    mj_forward(m, d);
    elapsed[i] = 0;
  }

  bool healthy(const mjData* d) const {
    const double z = d->qpos[1], angle = d->qpos[2];
    if (Spec.healthy == 1) {  // Hopper: state_vector()[2:] in (-100, 100), z > 0.7, |angle| < 0.2
      for (int k = 2; k < nq; ++k)
        if (!(std::fabs(d->qpos[k]) < 100.0)) return false;
      for (int k = 0; k < nv; ++k)
        if (!(std::fabs(d->qvel[k]) < 100.0)) return false;
      return z > 0.7 && std::fabs(angle) < 0.2;
    }
    if (Spec.healthy == 2) return z > 0.8 && z < 2.0 && angle > -1.0 && angle < 1.0;  // Walker2d
    if (Spec.healthy == 3) {  // Ant: finite, 0.2 <= z <= 1
      for (int k = 0; k < nq; ++k)
        if (!std::isfinite(d->qpos[k])) return false;
      for (int k = 0; k < nv; ++k)
        if (!std::isfinite(d->qvel[k])) return false;
      return d->qpos[2] >= 0.2 && d->qpos[2] <= 1.0;
    }
    if (Spec.healthy == 4) return d->qpos[2] > 1.0 && d->qpos[2] < 2.0;  // Humanoid
    return true;
  }

  /// Ant: the torso's x; Humanoid: Gymnasium's mass_center x (from the last forward pass).
  double forward_position(const mjData* d) const {
    if (Spec.healthy == 3) return d->xpos[3];
    if (Spec.healthy == 4) {
      double num = 0, mass = 0;
      for (int b = 0; b < m->nbody; ++b) {
        num += m->body_mass[b] * d->xipos[3 * b];
        mass += m->body_mass[b];
      }
      return num / mass;
    }
    return d->qpos[0];
  }

  /// Gymnasium's Ant and Humanoid step, observation and reward (after mj_rnePostConstraint).
  double step_3d(mjData* d, double* obs, bool ok, double x_before, double ctrl_cost) {
    mj_rnePostConstraint(m, d);
    const double dt = m->opt.timestep * Spec.frame_skip;
    const double v = (forward_position(d) - x_before) / dt;
    const int nb = m->nbody;
    double contact = 0;
    int k = 0;
    for (int q = 2; q < nq; ++q) obs[k++] = d->qpos[q];
    for (int q = 0; q < nv; ++q) obs[k++] = d->qvel[q];
    if (Spec.healthy == 3) {
      for (int c = 0; c < 6 * nb; ++c) {
        const double f = std::clamp(d->cfrc_ext[c], -1.0, 1.0);
        contact += f * f;
        if (c >= 6) obs[k++] = f;
      }
      return (v + (ok ? 1.0 : 0.0)) - (0.5 * ctrl_cost + 5e-4 * contact);
    }
    for (int c = 10; c < 10 * nb; ++c) obs[k++] = d->cinert[c];
    for (int c = 6; c < 6 * nb; ++c) obs[k++] = d->cvel[c];
    for (int q = 6; q < nv; ++q) obs[k++] = d->qfrc_actuator[q];
    for (int c = 0; c < 6 * nb; ++c) {
      contact += d->cfrc_ext[c] * d->cfrc_ext[c];
      if (c >= 6) obs[k++] = d->cfrc_ext[c];
    }
    return (1.25 * v + (ok ? 5.0 : 0.0)) - (0.1 * ctrl_cost + std::min(5e-7 * contact, 10.0));
  }

  void step_one(std::size_t i, const double* action) {
    mjData* d = data[i];
    for (int k = 0; k < nu; ++k) d->ctrl[k] = action[k];
    const double x_before = forward_position(d);
    for (int f = 0; f < Spec.frame_skip; ++f) mj_step(m, d);
    const double dt = m->opt.timestep * Spec.frame_skip;
    double ctrl_cost = 0;
    for (int k = 0; k < nu; ++k) ctrl_cost += action[k] * action[k];
    const bool ok = healthy(d);
    if (Spec.healthy >= inverted_pendulum_code) {
      step_small(i, d, x_before, ctrl_cost);
      return;
    }
    if (Spec.healthy == pusher_code) {  // Gymnasium's Pusher: the bodies' xpos after mj_step
      double* obs = observations.data() + i * std::size_t(obs_size);
      for (int k = 0; k < 7; ++k) obs[k] = d->qpos[k];
      for (int k = 0; k < 7; ++k) obs[7 + k] = d->qvel[k];
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 3; ++k) obs[14 + 3 * b + k] = d->xpos[3 * (10 + b) + k];
      double near = 0, dist = 0;
      for (int k = 0; k < 3; ++k) {
        near += (obs[17 + k] - obs[14 + k]) * (obs[17 + k] - obs[14 + k]);
        dist += (obs[17 + k] - obs[20 + k]) * (obs[17 + k] - obs[20 + k]);
      }
      rewards[i] = -std::sqrt(dist) - 0.1 * ctrl_cost - 0.5 * std::sqrt(near);
      finish_step(i, false);
      return;
    }
    if (Spec.healthy >= 3) {
      rewards[i] = step_3d(d, observations.data() + i * std::size_t(obs_size), ok, x_before, ctrl_cost);
      finish_step(i, !ok);
      return;
    }
    const double healthy_reward = Spec.healthy ? (ok ? 1.0 : 0.0) : 0.0;
    rewards[i] = (d->qpos[0] - x_before) / dt + healthy_reward - (Spec.healthy ? 1e-3 : 0.1) * ctrl_cost;
    double* obs = observations.data() + i * std::size_t(obs_size);
    for (int k = 1; k < nq; ++k) obs[k - 1] = d->qpos[k];
    for (int k = 0; k < nv; ++k) obs[nq - 1 + k] = Spec.healthy ? std::clamp(d->qvel[k], -10.0, 10.0) : d->qvel[k];
    finish_step(i, !ok);
  }

  /// Gymnasium v5's step of the inverted pendulums, Swimmer and Reacher after mj_step.
  void step_small(std::size_t i, const mjData* d, double x_before, double ctrl_cost) {
    double* obs = observations.data() + i * std::size_t(obs_size);
    if (Spec.healthy == inverted_pendulum_code) {
      for (int k = 0; k < nq; ++k) obs[k] = d->qpos[k];
      for (int k = 0; k < nv; ++k) obs[nq + k] = d->qvel[k];
      bool finite = true;
      for (int k = 0; k < 4; ++k) finite = finite && std::isfinite(obs[k]);
      const bool term = !finite || std::fabs(obs[1]) > 0.2;
      rewards[i] = term ? 0.0 : 1.0;
      finish_step(i, term);
    } else if (Spec.healthy == inverted_double_pendulum_code) {
      const double x = d->site_xpos[0], y = d->site_xpos[2];
      obs[0] = d->qpos[0];
      for (int k = 1; k < nq; ++k) {
        obs[k] = std::sin(d->qpos[k]);
        obs[nq - 1 + k] = std::cos(d->qpos[k]);
      }
      for (int k = 0; k < nv; ++k) obs[2 * nq - 1 + k] = std::clamp(d->qvel[k], -10.0, 10.0);
      obs[2 * nq - 1 + nv] = std::clamp(d->qfrc_constraint[0], -10.0, 10.0);
      const bool term = y <= 1.0;
      const double v1 = d->qvel[1], v2 = d->qvel[2];
      const double dist_penalty = 0.01 * x * x + (y - 2) * (y - 2);
      const double vel_penalty = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
      rewards[i] = (term ? 0.0 : 10.0) - dist_penalty - vel_penalty;
      finish_step(i, term);
    } else if (Spec.healthy == swimmer_code) {
      const double dt = m->opt.timestep * Spec.frame_skip;
      for (int k = 2; k < nq; ++k) obs[k - 2] = d->qpos[k];
      for (int k = 0; k < nv; ++k) obs[nq - 2 + k] = d->qvel[k];
      rewards[i] = (d->qpos[0] - x_before) / dt - 1e-4 * ctrl_cost;
      finish_step(i, false);
    } else {  // Reacher: the bodies' centres of mass (get_body_com) after mj_step
      const double* tip = d->xipos + 3 * fingertip_body;
      const double* target = d->xipos + 3 * target_body;
      obs[0] = std::cos(d->qpos[0]);
      obs[1] = std::cos(d->qpos[1]);
      obs[2] = std::sin(d->qpos[0]);
      obs[3] = std::sin(d->qpos[1]);
      obs[4] = d->qpos[2];
      obs[5] = d->qpos[3];
      obs[6] = d->qvel[0];
      obs[7] = d->qvel[1];
      obs[8] = tip[0] - target[0];
      obs[9] = tip[1] - target[1];
      double dist = 0;
      for (int k = 0; k < 3; ++k) dist += (tip[k] - target[k]) * (tip[k] - target[k]);
      rewards[i] = -std::sqrt(dist) - ctrl_cost;
      finish_step(i, false);
    }
  }

  /// The episode bookkeeping after a step: flags, returns, and the reset of an ended episode.
  void finish_step(std::size_t i, bool unhealthy) {
    terminated[i] = unhealthy;
    truncated[i] = ++elapsed[i] >= (Spec.healthy == pusher_code ? 100 : Spec.healthy == reacher_code ? 50 : 1000);
    episode_returns[i] += rewards[i];
    if (terminated[i] || truncated[i]) {
      ++episodes[i];
      length_sums[i] += elapsed[i];
      return_sums[i] += episode_returns[i];
      episode_returns[i] = 0;
      reset(i);
    }
  }

  /// Completed episodes since the fixture was built (warm-up included), like vec_env's statistics.
  rlk::episode_statistics statistics() const {
    rlk::episode_statistics out;
    double lengths = 0, returns = 0;
    for (std::size_t i = 0; i < num_envs; ++i) {
      out.count += episodes[i];
      lengths += length_sums[i];
      returns += return_sums[i];
    }
    if (out.count) {
      out.mean_length = lengths / double(out.count);
      out.mean_return = returns / double(out.count);
    }
    return out;
  }

  void step(std::size_t k) {
    const double* a = actions[k % actions.size()].data();
    const auto n = static_cast<std::int64_t>(num_envs);
#if defined(RLK_BACKEND_OPENMP) && RLK_HAS_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (std::int64_t i = 0; i < n; ++i) step_one(std::size_t(i), a + std::size_t(i) * std::size_t(nu));
  }
};

template <const mj_env_spec& Spec>
void BM_mj_step(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  // mj_resetData writes each mjData's buffer (nbuffer: about 0.5 MB for these models; the arena,
  // narena, stays untouched virtual memory), so that is what N envs occupy.
  mj_fixture<Spec>* f = nullptr;
  try {
    const double needed = double(n) * double(load_model(Spec)->nbuffer + 4096);
    if (needed > 0.5 * rlk_bench::physical_memory_bytes()) {
      state.SkipWithError(rlk::detail::concat("needs ", needed / 1e9,
                                              " GB for the mjData buffers, over half of this machine's memory").c_str());
      return;
    }
    f = &fixture_for<mj_fixture<Spec>>(n, rlk_bench::warmup_or(std::int64_t(n), warmup_steps(std::int64_t(n))));
  } catch (const std::exception& e) {
    rlk_bench::cached_fixture<mj_fixture<Spec>>().reset();
    state.SkipWithError(e.what());
    return;
  }
  std::size_t k = 0;
  for (auto _ : state) {
    f->step(k++);
    benchmark::ClobberMemory();
  }
  set_counters(state, std::int64_t(n), Spec.frame_skip, f->statistics());
}

template <const mj_env_spec& Spec>
void add_mj_row(std::int64_t n) {
  const std::string backend = rlk::backend_name(bench_backend{});
  benchmark::RegisterBenchmark((std::string("BM_mj_step/") + Spec.id + "/" + backend).c_str(), BM_mj_step<Spec>)
      ->Arg(n)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(rlk_bench::min_time_or(min_time_s));
}
#endif

/// Env-major, then N (each fixture is built once per (env, N)); per N: ours in float and double,
/// then MuJoCo's.
template <class FloatEnv, class DoubleEnv>
void add_rlk_rows(const char* id, int frame_skip, std::int64_t n) {
  add_vec_env_rows<FloatEnv>(id, frame_skip, n);
  add_vec_env_rows<DoubleEnv>(std::string(id) + ":double", frame_skip, n);
}

/// The checked step alone, BM_vec_env_step/<id>/<backend>/<N> (the rows compared by capacity).
template <class Env>
void add_step_row(const std::string& id, int frame_skip, std::int64_t n) {
  const std::string backend = rlk::backend_name(bench_backend{});
  benchmark::RegisterBenchmark(("BM_vec_env_step/" + id + "/" + backend).c_str(), &BM_vec_env<Env, true>, frame_skip)
      ->Arg(n)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(rlk_bench::min_time_or(min_time_s));
}

/// The checked step of full_capacity_t<Env> in float and double, <id>.full_capacity[:double], to
/// set beside the default rows of the same id, N, actions and seed. The serial variant only (the
/// per-env cost is the same on OpenMP's threads, and each row is one more env type to compile);
/// compare.py's filters (<id>/ and <id>:double/) leave these rows out.
template <class FloatEnv, class DoubleEnv>
void add_full_capacity_rows([[maybe_unused]] const char* id, [[maybe_unused]] int frame_skip,
                            [[maybe_unused]] std::int64_t n) {
#if defined(RLK_BACKEND_SERIAL)
  add_step_row<rlk::full_capacity_t<FloatEnv>>(std::string(id) + ".full_capacity", frame_skip, n);
  add_step_row<rlk::full_capacity_t<DoubleEnv>>(std::string(id) + ".full_capacity:double", frame_skip, n);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (!rlk_bench::parse_options_or_report(argc, argv, "mujoco_bench")) return 2;
  const std::vector<std::int64_t> sizes = rlk_bench::batch_sizes_or(batch_sizes);
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::hopper<float>, rlk::hopper<double>>("Hopper-v5", 4, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<hopper_spec>(n);
#endif
    add_full_capacity_rows<rlk::hopper<float>, rlk::hopper<double>>("Hopper-v5", 4, n);
  }
  // The generic env: Hopper-v5 and Swimmer-v5 written as tasks of mujoco_env<Task>
  // in their minimal form (tests/envs/gymnasium_tasks.hpp: no step info; the same bits as the bundled
  // envs, mujoco_envs_test "[task]"), in double, to time beside the bundled envs' rows (host backends: the CUDA build's kernels
  // would be the same code).
#if !defined(RLK_BACKEND_CUDA)
  for (const std::int64_t n : sizes) {
    add_vec_env_rows<rlk::mujoco_env<rlk_tasks::hopper_task, double>>("Hopper-v5.mujoco_env:double", 4, n);
    add_vec_env_rows<rlk::mujoco_env<rlk_tasks::swimmer_task, double>>("Swimmer-v5.mujoco_env:double", 4, n);
  }
#endif
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::walker2d<float>, rlk::walker2d<double>>("Walker2d-v5", 4, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<walker2d_spec>(n);
#endif
    add_full_capacity_rows<rlk::walker2d<float>, rlk::walker2d<double>>("Walker2d-v5", 4, n);
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::half_cheetah<float>, rlk::half_cheetah<double>>("HalfCheetah-v5", 5, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<half_cheetah_spec>(n);
#endif
    add_full_capacity_rows<rlk::half_cheetah<float>, rlk::half_cheetah<double>>("HalfCheetah-v5", 5, n);
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::ant<float>, rlk::ant<double>>("Ant-v5", 5, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<ant_spec>(n);
#endif
    add_full_capacity_rows<rlk::ant<float>, rlk::ant<double>>("Ant-v5", 5, n);
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::humanoid<float>, rlk::humanoid<double>>("Humanoid-v5", 5, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<humanoid_spec>(n);
#endif
    add_full_capacity_rows<rlk::humanoid<float>, rlk::humanoid<double>>("Humanoid-v5", 5, n);
  }
  // HumanoidStandup-v5 (Humanoid's step with another reward, capacities 24 / 80; no mj_step row):
  // its checked step at the default and the full capacities, in the serial variant.
#if defined(RLK_BACKEND_SERIAL)
  for (const std::int64_t n : sizes) {
    add_step_row<rlk::humanoid_standup<float>>("HumanoidStandup-v5", 5, n);
    add_step_row<rlk::humanoid_standup<double>>("HumanoidStandup-v5:double", 5, n);
    add_full_capacity_rows<rlk::humanoid_standup<float>, rlk::humanoid_standup<double>>("HumanoidStandup-v5", 5, n);
  }
#endif
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::pusher<float>, rlk::pusher<double>>("Pusher-v5", 5, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<pusher_spec>(n);
#endif
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::inverted_pendulum<float>, rlk::inverted_pendulum<double>>("InvertedPendulum-v5", 2, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<inverted_pendulum_spec>(n);
#endif
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::inverted_double_pendulum<float>, rlk::inverted_double_pendulum<double>>("InvertedDoublePendulum-v5",
                                                                                            5, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<inverted_double_pendulum_spec>(n);
#endif
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::swimmer<float>, rlk::swimmer<double>>("Swimmer-v5", 4, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<swimmer_spec>(n);
#endif
  }
  for (const std::int64_t n : sizes) {
    add_rlk_rows<rlk::reacher<float>, rlk::reacher<double>>("Reacher-v5", 2, n);
#if RLK_BENCH_HAVE_MJ
    add_mj_row<reacher_spec>(n);
#endif
  }
#if RLK_BENCH_HAVE_MJ
  benchmark::AddCustomContext("mujoco_version", mj_versionString());
#endif
#if defined(RLK_BACKEND_OPENMP)
  benchmark::AddCustomContext("rlk_openmp_serial_below", std::to_string(physics_backend().serial_below));
#endif
  return rlk_bench::run_registered_benchmarks(argc, argv, "mujoco_bench");
}
