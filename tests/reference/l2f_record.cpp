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
// With every domain-randomisation option of l2f on (the ranges of rlkernels::quadrotor's
// Randomization defaults; dr_factory below), sample_initial_parameters then sample_initial_state:
//   l2f_dr_samples.f64   [kDrSamples, 18]  mass, thrust coefficient c2 of rotor 0, J diagonal [3],
//                        rotor 0's x and y, torque constant, time constants rising and falling,
//                        force [3], termination position threshold, init max_position, position [3]
//   l2f_dr_episodes.f64  [kDrEpisodes, 1 + 47 + 17 + 64]  episode; the sampled airframe: mass,
//                        thrust coefficients [4][3], torque constants [4], rising [4], falling [4],
//                        J diagonal [3], J_inv diagonal [3], rotor positions [4][3], force [3],
//                        position threshold; the initial state and action history
//   l2f_dr_steps.f64     [kDrEpisodes * kDrSteps, 2 + 4 + 17 + 2]  as l2f_steps.f64, with those airframes
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
constexpr TI kDrSamples = 2000;
constexpr TI kDrEpisodes = 16;
constexpr TI kDrSteps = 100;

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

/// l2f.Environment()'s configuration with every domain-randomisation option on.
template <class T>
struct dr_factory {
  using BASE = env_builder::ENVIRONMENT_FACTORY<DEVICE, T, TI>;
  struct OPTIONS {
    static constexpr bool ENABLED = true;
    static constexpr bool THRUST_TO_WEIGHT = true;
    static constexpr bool MASS = true;
    static constexpr bool TORQUE_TO_INERTIA = true;
    static constexpr bool MASS_SIZE_DEVIATION = true;
    static constexpr bool ROTOR_TORQUE_CONSTANT = true;
    static constexpr bool DISTURBANCE_FORCE = true;
    static constexpr bool ROTOR_TIME_CONSTANT = true;
  };
  using PARAMETERS_TYPE = env_builder::ParametersTrajectory<env_builder::ParametersTrajectorySpecification<
      T, TI, typename BASE::TRAJECTORY_OPTIONS,
      env_builder::ParametersDomainRandomization<env_builder::ParametersDomainRandomizationSpecification<
          T, TI, OPTIONS,
          env_builder::ParametersDisturbances<env_builder::ParametersSpecification<
              T, TI, env_builder::ParametersBase<typename BASE::PARAMETERS_SPEC>>>>>>>;
  // thrust-to-weight, torque-to-inertia, mass, mass-size deviation, rotor time constants
  // (rising, falling), rotor torque constant, orientation offset (unused), disturbance force
  static constexpr typename PARAMETERS_TYPE::DomainRandomization domain_randomization = {
      1.5, 5.0, 536, 933, 0.02, 5.0, 0.1, 0.05, 0.09, 0.07, 0.3, 0.005, 0.05, 0.0, 0.1};
  static constexpr PARAMETERS_TYPE nominal_parameters = {
      {{{BASE::dynamics, BASE::integration, BASE::mdp}, BASE::disturbances}, domain_randomization}, BASE::trajectory};
  struct STATIC_PARAMETERS : BASE::ENVIRONMENT_STATIC_PARAMETERS {
    using PARAMETERS = PARAMETERS_TYPE;
    static constexpr auto PARAMETER_VALUES = nominal_parameters;
  };
  using ENVIRONMENT = rlt::rl::environments::Multirotor<rlt::rl::environments::l2f::Specification<T, TI, STATIC_PARAMETERS>>;
};

template <class T, class ENV = typename env_builder::ENVIRONMENT_FACTORY<DEVICE, T, TI>::ENVIRONMENT>
struct episodes_run {
  using ENVIRONMENT = ENV;
  DEVICE device;
  ENVIRONMENT env;
  typename ENVIRONMENT::Parameters parameters;
  typename DEVICE::SPEC::RANDOM::template ENGINE<> rng;

  explicit episodes_run(std::uint64_t seed = 20261204) {
    rlt::malloc(device, env);
    rlt::init(device, env);
    rlt::malloc(device, rng);
    rlt::init(device, rng, seed);
    rlt::initial_parameters(device, env, parameters);
  }

  typename ENVIRONMENT::State sample() {
    typename ENVIRONMENT::State s{};  // value-initialised: l2f leaves the trajectory type unset
    rlt::sample_initial_state(device, env, parameters, s, rng);
    return s;
  }

  /// sample_initial_parameters (the domain randomisation), then sample_initial_state.
  typename ENVIRONMENT::State sample_randomised() {
    rlt::sample_initial_parameters(device, env, parameters, rng);
    return sample();
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

  // Domain randomisation: the sampled airframes, and episodes stepped with them.
  episodes_run<double, dr_factory<double>::ENVIRONMENT> dr(20261205);
  table dr_samples(18), dr_episodes(1 + 47 + 17 + 64), dr_steps(2 + 4 + 17 + 2);
  for (TI i = 0; i < kDrSamples; ++i) {
    const auto s = dr.sample_randomised();
    const auto& d = dr.parameters.dynamics;
    for (double x : {d.mass, d.rotor_thrust_coefficients[0][2], d.J[0][0], d.J[1][1], d.J[2][2], d.rotor_positions[0][0],
                     d.rotor_positions[0][1], d.rotor_torque_constants[0], d.rotor_time_constants_rising[0],
                     d.rotor_time_constants_falling[0], s.force[0], s.force[1], s.force[2],
                     dr.parameters.mdp.termination.position_threshold, dr.parameters.mdp.init.max_position,
                     s.position[0], s.position[1], s.position[2]})
      dr_samples.v.push_back(x);
  }
  for (TI e = 0; e < kDrEpisodes; ++e) {
    auto s = dr.sample_randomised();
    const auto& d = dr.parameters.dynamics;
    std::vector<double>& row = dr_episodes.v;
    row.push_back(double(e));
    row.push_back(d.mass);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 3; ++k) row.push_back(d.rotor_thrust_coefficients[r][k]);
    for (int r = 0; r < 4; ++r) row.push_back(d.rotor_torque_constants[r]);
    for (int r = 0; r < 4; ++r) row.push_back(d.rotor_time_constants_rising[r]);
    for (int r = 0; r < 4; ++r) row.push_back(d.rotor_time_constants_falling[r]);
    for (int i = 0; i < 3; ++i) row.push_back(d.J[i][i]);
    for (int i = 0; i < 3; ++i) row.push_back(d.J_inv[i][i]);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 3; ++k) row.push_back(d.rotor_positions[r][k]);
    for (int i = 0; i < 3; ++i) row.push_back(s.force[i]);
    row.push_back(dr.parameters.mdp.termination.position_threshold);
    push_state(row, s);
    for (TI j = 0; j < 16; ++j)
      for (TI k = 0; k < 4; ++k) row.push_back(double(s.action_history[j][k]));
    action_source actions(2000 + std::uint64_t(e));
    for (TI t = 0; t < kDrSteps; ++t) {
      double a[4];
      actions.next(e, t, a);
      double reward;
      bool terminated;
      dr.step(s, a, reward, terminated);
      dr_steps.v.push_back(double(e));
      dr_steps.v.push_back(double(t));
      for (int k = 0; k < 4; ++k) dr_steps.v.push_back(a[k]);
      push_state(dr_steps.v, s);
      dr_steps.v.push_back(reward);
      dr_steps.v.push_back(terminated ? 1.0 : 0.0);
    }
  }

  resets.write(dir + "/l2f_resets.f64");
  steps.write(dir + "/l2f_steps.f64");
  initial.write(dir + "/l2f_initial.f64");
  observations.write(dir + "/l2f_observations.f64");
  steps_float.write(dir + "/l2f_steps_float.f64");
  dr_samples.write(dir + "/l2f_dr_samples.f64");
  dr_episodes.write(dir + "/l2f_dr_episodes.f64");
  dr_steps.write(dir + "/l2f_dr_steps.f64");
  return 0;
}
