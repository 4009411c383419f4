// The MuJoCo envs never read a field of the engine's workspace (physics::data) before writing it:
// compiled with RLK_PHYSICS_POISON_WORKSPACE=1, which fills the workspace with 0xFF bytes (every
// float and double a quiet NaN, every int -1) before each env step, the rollouts below must give
// the same bits as with the workspace left as it is (detail::simulate no longer zeroes it). Host
// backends only: the switch between the two modes is a host variable.
#define RLK_PHYSICS_POISON_WORKSPACE 1
#ifndef RLK_WORKSPACE_TEST_MODELS_ONLY
#define RLK_WORKSPACE_TEST_MODELS_ONLY 0
#endif

#include <rlkernels/envs/mujoco/ant.hpp>
#include <rlkernels/envs/mujoco/half_cheetah.hpp>
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
#include <rlkernels/envs/vec_env.hpp>

#include "../physics/models/box_crawler.hpp"
#include "../physics/models/friction_islands.hpp"
#include "../physics/models/friction_quad.hpp"
#include "../physics/models/sensor_robot.hpp"
#include "../test_backend.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace rlkernels;
using rlk_test::backend_t;

namespace {

/// A counter hash in [-1, 1) (splitmix64 of the key).
double hash_uniform(std::uint64_t key) {
  std::uint64_t z = key + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return 2.0 * (double(z >> 11) * 0x1.0p-53) - 1.0;
}

/// Everything a rollout produces, as bytes.
struct rollout_bytes {
  std::vector<unsigned char> bytes;
  template <class T>
  void add(const std::vector<T>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    bytes.insert(bytes.end(), p, p + v.size() * sizeof(T));
  }
};

/// `steps` env steps of `n` envs with hash actions: mostly inside the action space, every 7th step
/// 50x beyond it, every 53rd 1e6x (flagged steps); at step 100 some states get huge velocities
/// (the engine's checks and resets). Short episodes (max_episode_steps 150), so envs reset often.
template <class Env>
rollout_bytes rollout(bool poison, std::size_t n, int steps) {
  using S = typename Env::scalar_type;
  detail::poison_workspace_enabled = poison;
  typename Env::Params params;
  params.max_episode_steps = 150;
  vec_env<Env, backend_t> envs(rlk_test::backend(), n, 12345, params);
  auto actions = rlk_test::zeros<S>(n * Env::action_size);
  rollout_bytes out;
  for (int t = 0; t < steps; ++t) {
    const double scale = t % 53 == 52 ? 1e6 : (t % 7 == 6 ? 50.0 : 1.0);
    std::vector<S> a(n * Env::action_size);
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = S(scale * hash_uniform((std::uint64_t(t) << 32) | k));
    actions.assign(a);
    if (t == 100) {
      std::vector<typename Env::State> states = envs.states().to_host();
      for (std::size_t i = 0; i < n; i += 3) states[i].qvel[i % Env::nv] = S(i % 2 ? 1e11 : 1e9);
      envs.set_states(states);
    }
    envs.step(actions.view());
    out.add(envs.observations().to_host());
    out.add(envs.final_observations().to_host());
    out.add(envs.rewards().to_host());
    out.add(envs.terminated().to_host());
    out.add(envs.truncated().to_host());
    out.add(envs.states().to_host());
  }
  const episode_statistics st = envs.get_episode_statistics();
  CHECK(st.count > 0);  // the rollout did go through resets
  detail::poison_workspace_enabled = true;
  return out;
}

/// detail::simulate itself, with the model's integrator and with the other one (Euler, RK4), from
/// a few reset states for `steps` env steps each; the states and warnings as bytes.
template <class Env>
rollout_bytes simulate_both_integrators(bool poison, int steps) {
  using S = typename Env::scalar_type;
  detail::poison_workspace_enabled = poison;
  rollout_bytes out;
  for (int which = 0; which < 2; ++which) {
    typename Env::model_type m = typename Env::Params{}.model;
    if (which == 1)
      m.integrator = m.integrator == physics::integrator_kind::rk4 ? physics::integrator_kind::euler : physics::integrator_kind::rk4;
    for (std::uint64_t e = 0; e < 4; ++e) {
      rng gen(7, e, 0);
      typename Env::State s{};
      detail::reset_state(m, s, S(0.1), false, gen);
      std::vector<int> warnings;
      std::vector<typename Env::State> states;
      for (int t = 0; t < steps; ++t) {
        S action[Env::action_size];
        for (int k = 0; k < Env::action_size; ++k) action[k] = S(2.0 * hash_uniform((e << 48) | (std::uint64_t(t) << 8) | k));
        warnings.push_back(detail::simulate(m, s, action, 4));
        states.push_back(s);
      }
      out.add(warnings);
      out.add(states);
    }
  }
  detail::poison_workspace_enabled = true;
  return out;
}

/// The engine's test models (tests/reference/mujoco_*.xml, compared with MuJoCo itself in
/// mujoco_reference_test) as envs of mujoco_env: a task that observes qpos and qvel, pays nothing
/// and never terminates, so that their engine paths run here too (and under the sanitizers, which
/// cannot load MuJoCo): dry friction and condim 4/6 (friction_quad; with Pgs, on the PGS solver),
/// islands (friction_islands), sensors and servos (sensor_robot), boxes (box_crawler).
#define RLK_TEST_MODEL(name)                                                                            \
  struct name##_model {                                                                               \
    using dims = models::name##_dims;                                                                 \
    template <class S>                                                                                \
    static physics::model<S, dims> model() {                                                          \
      return models::name<S>();                                                                       \
    }                                                                                                 \
  };
RLK_TEST_MODEL(friction_quad)
RLK_TEST_MODEL(friction_islands)
RLK_TEST_MODEL(sensor_robot)
RLK_TEST_MODEL(box_crawler)
#undef RLK_TEST_MODEL

template <class Model, bool Pgs = false>
struct model_task {
  using dims = std::conditional_t<Pgs, physics::dims_with_pgs<typename Model::dims>, typename Model::dims>;
  template <class S>
  static physics::model<S, dims> model() {
    physics::model<S, dims> m = physics::rebind<dims>(Model::template model<S>());
    if (Pgs) m.solver = physics::solver_kind::pgs;
    return m;
  }
  static constexpr int observation_size = dims::nq + dims::nv;
  static constexpr double action_low = -1, action_high = 1;
  static constexpr int frame_skip = 4, max_episode_steps = 1000;
  template <class S>
  struct params {};
  template <class S, class Rng>
  RLK_HOST_DEVICE static void reset(const params<S>&, const physics::model<S, dims>& m, mujoco_state<S, dims>& s,
                                    Rng& gen) {
    detail::reset_state(m, s, S(0.1), false, gen);
  }
  template <class S>
  RLK_HOST_DEVICE static step_result<S> step(const params<S>&, const mujoco_task_step<S, dims>&) {
    return {S(0), false};
  }
  template <class S>
  RLK_HOST_DEVICE static void observe(const params<S>&, const physics::model<S, dims>&, const mujoco_state<S, dims>& s,
                                      S* obs) {
    for (int i = 0; i < dims::nq; ++i) obs[i] = s.qpos[i];
    for (int i = 0; i < dims::nv; ++i) obs[dims::nq + i] = s.qvel[i];
  }
};

template <class Env>
void check_poisoned_equals_normal() {
  // Normal first, poisoned second, normal again: the last run starts on a stack the poisoned
  // run left full of 0xFF.
  // the Humanoids' steps cost ~10 Hopper steps: fewer of them
  const std::size_t n = Env::nv > 20 ? 8 : 24;
  const int steps = Env::nv > 20 ? 200 : 400;
  const rollout_bytes normal = rollout<Env>(false, n, steps);
  const rollout_bytes poisoned = rollout<Env>(true, n, steps);
  const rollout_bytes normal_again = rollout<Env>(false, n, steps);
  REQUIRE(normal.bytes.size() == poisoned.bytes.size());
  CHECK(std::memcmp(normal.bytes.data(), poisoned.bytes.data(), normal.bytes.size()) == 0);
  CHECK(std::memcmp(normal.bytes.data(), normal_again.bytes.data(), normal.bytes.size()) == 0);

  const rollout_bytes sim_normal = simulate_both_integrators<Env>(false, Env::nv > 20 ? 100 : 300);
  const rollout_bytes sim_poisoned = simulate_both_integrators<Env>(true, Env::nv > 20 ? 100 : 300);
  REQUIRE(sim_normal.bytes.size() == sim_poisoned.bytes.size());
  CHECK(std::memcmp(sim_normal.bytes.data(), sim_poisoned.bytes.data(), sim_normal.bytes.size()) == 0);
}

}  // namespace

#if !RLK_WORKSPACE_TEST_MODELS_ONLY  // the sanitizer preset: the envs run under the sanitizers in mujoco_envs_test
TEMPLATE_TEST_CASE("a poisoned workspace (NaN floats, -1 ints) gives the same bits: no field is read before it is written",
                   "[mujoco][envs][workspace]", hopper<float>, hopper<double>, walker2d<float>, walker2d<double>,
                   half_cheetah<float>, half_cheetah<double>, ant<float>, ant<double>, humanoid<float>,
                   humanoid<double>, humanoid_standup<double>, pusher<float>, pusher<double>, swimmer<double>,
                   reacher<double>, inverted_pendulum<double>, inverted_double_pendulum<double>) {
  check_poisoned_equals_normal<TestType>();
}
#endif

TEMPLATE_TEST_CASE("the engine's test models: a poisoned workspace gives the same bits", "[mujoco][envs][workspace][models]",
                   (mujoco_env<model_task<friction_quad_model>, double>),
                   (mujoco_env<model_task<friction_quad_model, true>, double>),
                   (mujoco_env<model_task<friction_islands_model>, double>),
                   (mujoco_env<model_task<sensor_robot_model>, double>),
                   (mujoco_env<model_task<box_crawler_model>, double>)) {
  check_poisoned_equals_normal<TestType>();
}

TEST_CASE("the poison fills every byte: floats and doubles are NaN, ints -1", "[mujoco][envs][workspace]") {
  detail::poison_workspace_enabled = true;
  physics::data<double, models::hopper_dims> d;
  detail::poison_workspace(d);
  CHECK(std::isnan(d.qM[2][3]));
  CHECK(std::isnan(d.con[1].frame[4]));
  CHECK(d.nefc == -1);
  CHECK(d.con[0].efc_address == -1);
  physics::data<float, models::hopper_dims> f;
  detail::poison_workspace(f);
  CHECK(std::isnan(f.efc_force[5]));
}
