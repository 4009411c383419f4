// Golden data for L2F-Crazyflie-v0 (rlkernels::quadrotor), recorded with the published `l2f`
// simulator: this driver includes the headers of the `l2f` source package from PyPI (the
// configuration `l2f.Environment()` builds, `env_builder::ENVIRONMENT_FACTORY` in l2f/environment.h,
// and the rl_tools headers it bundles) and calls its sample_initial_state, step, reward,
// terminated and observe. l2f_record.sh downloads the package and builds this file; see there.
//
// Files written (rlkernels' f64 format: two doubles rows, cols, then the rows), T = double unless
// named otherwise. A state row is 17 numbers: position[3], orientation[4] (w, x, y, z),
// linear_velocity[3], angular_velocity[3], rpm[4].
//   l2f_resets.f64       [kResetSamples, 17]  states drawn by sample_initial_state
//   l2f_steps.f64        [E * T, 2 + 4 + 17 + 2]  episode, step, action[4], state after, reward, terminated
//   l2f_initial.f64      [E, 1 + 17 + 64]  episode, initial state, initial action history (oldest slot first)
//   l2f_observations.f64 [kObsEpisodes * (T + 1), 82]  observe() of the initial state and after each step
//   l2f_steps_float.f64  [kFloatEpisodes * T, 17 + 2]  the same episodes in a float build: state after, reward, terminated
#include <rl_tools/operations/cpu.h>

#include "environment.h"

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace rlt = rl_tools;
using DEVICE = rlt::devices::DefaultCPU;
using TI = typename DEVICE::index_t;

constexpr TI kEpisodes = 48;
constexpr TI kSteps = 128;
constexpr TI kObsEpisodes = 4;
constexpr TI kFloatEpisodes = 16;
constexpr TI kResetSamples = 2000;

struct table {
  std::size_t cols;
  std::vector<double> v;
  explicit table(std::size_t c) : cols(c) {}
  void write(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) { std::perror(path.c_str()); std::exit(1); }
    const double shape[2] = {double(v.size() / cols), double(cols)};
    std::fwrite(shape, sizeof(double), 2, f);
    std::fwrite(v.data(), sizeof(double), v.size(), f);
    std::fclose(f);
    std::printf("%s: %zu x %zu\n", path.c_str(), v.size() / cols, cols);
  }
};

template <class STATE>
void push_state(std::vector<double>& out, const STATE& s) {
  for (int i = 0; i < 3; ++i) out.push_back(double(s.position[i]));
  for (int i = 0; i < 4; ++i) out.push_back(double(s.orientation[i]));
  for (int i = 0; i < 3; ++i) out.push_back(double(s.linear_velocity[i]));
  for (int i = 0; i < 3; ++i) out.push_back(double(s.angular_velocity[i]));
  for (int i = 0; i < 4; ++i) out.push_back(double(s.rpm[i]));
}

/// The actions of episode e, step t: four kinds of episodes (uniform in [-1, 1]; uniform in
/// [-1.5, 1.5], so that clamping is exercised; near the hover command; held for 10 steps).
struct action_source {
  std::mt19937_64 gen;
  double held[4] = {0, 0, 0, 0};
  explicit action_source(std::uint64_t seed) : gen(seed) {}
  void next(TI e, TI t, double a[4]) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int k = 0; k < 4; ++k) {
      switch (e % 4) {
        case 0: a[k] = u(gen); break;
        case 1: a[k] = 1.5 * u(gen); break;
        case 2: a[k] = 0.612 + 0.15 * u(gen); break;
        default:
          if (t % 10 == 0) held[k] = u(gen);
          a[k] = held[k];
      }
    }
  }
};

template <class T>
struct episodes_run {
  using ENVIRONMENT = typename env_builder::ENVIRONMENT_FACTORY<DEVICE, T, TI>::ENVIRONMENT;
  DEVICE device;
  ENVIRONMENT env;
  typename ENVIRONMENT::Parameters parameters;
  typename DEVICE::SPEC::RANDOM::template ENGINE<> rng;

  episodes_run() {
    rlt::malloc(device, env);
    rlt::init(device, env);
    rlt::malloc(device, rng);
    rlt::init(device, rng, 20261204);
    rlt::initial_parameters(device, env, parameters);
  }

  typename ENVIRONMENT::State sample() {
    typename ENVIRONMENT::State s{};  // value-initialised: l2f leaves the trajectory type unset
    rlt::sample_initial_state(device, env, parameters, s, rng);
    return s;
  }

  void observe(const typename ENVIRONMENT::State& s, std::vector<double>& out) {
    rlt::Matrix<rlt::matrix::Specification<T, TI, 1, ENVIRONMENT::Observation::DIM, false>> obs;
    rlt::observe(device, env, parameters, s, typename ENVIRONMENT::Observation{}, obs, rng);
    for (TI i = 0; i < ENVIRONMENT::Observation::DIM; ++i) out.push_back(double(get(obs, 0, i)));
  }

  /// One step from s with action a; returns reward and terminated of the transition.
  void step(typename ENVIRONMENT::State& s, const double a[4], double& reward, bool& terminated) {
    rlt::Matrix<rlt::matrix::Specification<T, TI, 1, ENVIRONMENT::ACTION_DIM, false>> action;
    for (TI k = 0; k < 4; ++k) set(action, 0, k, T(a[k]));
    typename ENVIRONMENT::State next{};
    rlt::step(device, env, parameters, s, action, next, rng);
    reward = double(rlt::reward(device, env, parameters, s, action, next, rng));
    terminated = rlt::terminated(device, env, parameters, next, rng);
    s = next;
  }
};

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  static_assert(episodes_run<double>::ENVIRONMENT::Observation::DIM == 82);

  episodes_run<double> ref;
  table resets(17);
  for (TI i = 0; i < kResetSamples; ++i) push_state(resets.v, ref.sample());

  table steps(2 + 4 + 17 + 2), initial(1 + 17 + 64), observations(82), steps_float(17 + 2);
  episodes_run<float> ref_float;
  for (TI e = 0; e < kEpisodes; ++e) {
    auto s = ref.sample();
    initial.v.push_back(double(e));
    push_state(initial.v, s);
    for (TI j = 0; j < 16; ++j)
      for (TI k = 0; k < 4; ++k) initial.v.push_back(double(s.action_history[j][k]));
    if (e < kObsEpisodes) ref.observe(s, observations.v);

    // The float build starts from the same state, rounded to float.
    auto sf = ref_float.sample();
    const bool with_float = e < kFloatEpisodes;
    if (with_float) {
      for (int i = 0; i < 3; ++i) sf.position[i] = float(s.position[i]);
      for (int i = 0; i < 4; ++i) sf.orientation[i] = float(s.orientation[i]);
      for (int i = 0; i < 3; ++i) sf.linear_velocity[i] = float(s.linear_velocity[i]);
      for (int i = 0; i < 3; ++i) sf.angular_velocity[i] = float(s.angular_velocity[i]);
      for (int i = 0; i < 4; ++i) sf.rpm[i] = float(s.rpm[i]);
      sf.current_step = s.current_step;
      for (TI j = 0; j < 16; ++j)
        for (TI k = 0; k < 4; ++k) sf.action_history[j][k] = float(s.action_history[j][k]);
    }

    action_source actions(1000 + std::uint64_t(e));
    for (TI t = 0; t < kSteps; ++t) {
      double a[4];
      actions.next(e, t, a);
      double reward;
      bool terminated;
      ref.step(s, a, reward, terminated);
      steps.v.push_back(double(e));
      steps.v.push_back(double(t));
      for (int k = 0; k < 4; ++k) steps.v.push_back(a[k]);
      push_state(steps.v, s);
      steps.v.push_back(reward);
      steps.v.push_back(terminated ? 1.0 : 0.0);
      if (e < kObsEpisodes) ref.observe(s, observations.v);
      if (with_float) {
        double af[4];
        for (int k = 0; k < 4; ++k) af[k] = double(float(a[k]));
        ref_float.step(sf, af, reward, terminated);
        push_state(steps_float.v, sf);
        steps_float.v.push_back(reward);
        steps_float.v.push_back(terminated ? 1.0 : 0.0);
      }
    }
  }
  resets.write(dir + "/l2f_resets.f64");
  steps.write(dir + "/l2f_steps.f64");
  initial.write(dir + "/l2f_initial.f64");
  observations.write(dir + "/l2f_observations.f64");
  steps_float.write(dir + "/l2f_steps_float.f64");
  return 0;
}
