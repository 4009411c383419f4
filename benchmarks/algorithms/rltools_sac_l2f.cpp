// benchmarks/algorithms/rltools_sac_l2f.cpp
// RLtools' own SAC, with the hyperparameters of RLtools' zoo configuration for the L2F quadrotor
// (src/rl/zoo/l2f/sac_tiny.h at rl-tools commit 1d76a23c), on the L2F quadrotor exactly as the l2f
// Python package (l2f==2.0.18) builds it in l2f.Environment() (env_builder::ENVIRONMENT_FACTORY in
// its environment.h). Written against RLtools' public headers as the rltools 2.2.1 PyPI wheel ships
// them (rltools/external/rl_tools/include; the same include/ tree as rl-tools 1d76a23c). Compiled
// with -DRLK_L2F_TD3=1 (CMake: rltools_td3_l2f_train_reward), the same program trains RLtools' own
// TD3 instead, with the hyperparameters of the "Learning to Fly in Seconds" paper (below); the
// environment, the evaluation and the output are the same. One run per process:
//
//   rltools_sac_l2f [SEED]      (SEED: default 0; likewise the TD3 build)
//
// prints, besides header lines, one line per evaluation (every 10,000 env steps, and once before
// training):
//   eval: env_steps <n> training_seconds <s> training_cpu_seconds <c> return <mean return>
//         length <mean episode length> settling_fraction <share> terminated_fraction <share>
// where training_seconds is the steady_clock time spent in the RLtools training loop so far (after
// allocation and network initialisation; the evaluations are not timed) and training_cpu_seconds
// the process CPU time of the same spans (steadier on a busy machine); then
//   training_seconds: <total>   training_cpu_seconds: <total>
//   first_settled_0.9: env_steps <n> training_seconds <s>    (or "never")
//
// Evaluation (written here, not RLtools' rl::utils::evaluation, because it must see the final
// states): 100 episodes of the deterministic policy (Mode<mode::Evaluation>: SAC, the tanh of the
// policy's mean; TD3, the actor's output without exploration noise) from the env's own
// initial-state distribution (sample_initial_parameters, which returns the nominal parameters here,
// then sample_initial_state), at most 500 steps each, stepped as one batch of 100 through the
// actor. A fresh random engine seeded with SEED + 1000003 at every evaluation, so all evaluations
// of a run start from the same 100 initial states and the training random stream is untouched. The
// settling fraction is learning-to-fly's SettlingFractionPosition<200>: the share of episodes that
// run all 500 steps without terminating and end with |position| < 0.2 m (the Euclidean norm of the
// final state's position).
//
// SAC hyperparameters: those of sac_tiny.h, set through the loop's public configuration
// (rl::algorithms::sac::loop::core::DefaultParameters / Config, the same off-policy runner and SAC
// step the zoo uses): 8 environments, 35,000 loop steps (280,000 env steps), replay capacity 10,000
// per environment, batch 32 for actor and critics from one shared batch, critic update every 2 loop
// steps, critic target (Polyak 0.995) every 2, actor every 4, 200 warm-up loop steps of uniform
// random actions before any update, gamma 0.98, termination respected, target entropy -4, initial
// alpha 0.5 (library default) tuned, actor and critics MLPs of 5 layers (4 hidden of 16 units)
// with FAST_TANH, Adam with TensorFlow's defaults (epsilon 1e-7), no gradient clipping or weight
// decay, step sizes 1e-3 (actor), 2e-3 (critics), 1e-3 (alpha); environment parameters sampled per
// episode (a no-op here: no domain randomisation). Only the environment differs from the zoo: the
// zoo trains on its own "tiny" L2F variant (50 Hz, 2-step action history, 250-step episodes,
// lighter and slower-motor Crazyflie, 20-degree initial tilt); this driver uses l2f.Environment()'s.
//
// TD3 hyperparameters (RLK_L2F_TD3=1): those of the paper's TD3 (the learning-to-fly repository's
// src/config/config.h and actor_and_critic.h), set through the wheel's TD3 loop configuration
// (rl::algorithms::td3::loop::core::DefaultParameters / Config and rl::algorithms::td3::
// DefaultParameters): 1 environment; 300,000 loop steps = env steps (the wheel's TD3 loop, unlike
// its SAC loop, stops only once its counter passes STEP_LIMIT, so it runs 300,001 steps, as the
// paper's STEP_LIMIT 300001 did; the 300,001st is timed but not evaluated); replay capacity 300,000
// (all of them); batch 256 for actor and critics; critic update and critic target update every 10
// steps, actor update and actor target update every 20 (the paper's TRAINING_INTERVAL 10); Polyak
// 0.995 for both targets (the library default); target-policy smoothing noise std 0.2 clipped at
// 0.5; gamma 0.99; termination respected; exploration noise std 0.1 (the actor's td3_sampling
// layer, which the off-policy runner steps in Rollout mode). Warm-up: critic updates from step
// 15,000, actor updates from step 30,000 (N_WARMUP_STEPS_CRITIC / N_WARMUP_STEPS_ACTOR); the wheel's
// separate uniform-random-action warm-up N_WARMUP_STEPS is 0: the paper's loop (rl-tools'
// td3/loop.h of the time) had none, its noisy actor collected from step 0. Each critic update and
// each actor update draws its own batch (SHARED_BATCH false: the paper's loop gathered one batch per
// critic and one for the actor).
// Actor: MLP obs (82) -> 64 -> 64 -> 4, FAST_TANH hidden and output (the wheel's
// ConfigApproximatorsMLP fixes the actor's output to TANH, so the actor is rebuilt here, from the
// same public model types, with FAST_TANH; then the td3_sampling layer, as there); critics: MLP
// (82 + 4) -> 64 -> 64 -> 1, FAST_TANH hidden, identity output (3 layers each). Adam for actor and
// critics with TensorFlow's defaults (step size 1e-3, epsilon 1e-7), weight decay 1e-4 on every
// layer (ENABLE_WEIGHT_DECAY with WEIGHT_DECAY = WEIGHT_DECAY_INPUT = WEIGHT_DECAY_OUTPUT = 1e-4, as
// the paper set them), no gradient clipping. The wheel's TD3 itself (unchanged here) also runs the
// target actor and the actor update through the td3_sampling layer in its default mode, i.e. with
// the 0.1 exploration noise on top of the target-policy smoothing noise.
// What this TD3 driver deliberately does NOT replicate from the paper: its reward curriculum, its
// observation noise, its disturbance forces, its asymmetric (privileged) critic observation, its
// 32-step action history (l2f.Environment() keeps 16), and its own initial reward function; the
// environment is l2f.Environment()'s, with only the training-reward change below (the CMake target
// builds it with angular-acceleration weight 0 and linear-velocity weight 1).

#ifndef RLK_L2F_TD3
#define RLK_L2F_TD3 0  // 1: RLtools' TD3 with the paper's hyperparameters instead of the zoo's SAC
#endif

// RLtools resolves its operations by overloads: every operations header of the pieces the SAC (TD3)
// loop uses comes before the loop's own (the device first, the Adam optimiser before the models, the
// environment before the off-policy runner). The L2F environment's generic operations are enough
// here (its operations_cpu.h adds only JSON/UI helpers and needs nlohmann/json, which the wheel does
// not ship).
#include <rl_tools/operations/cpu_mux.h>
#include <rl_tools/nn/optimizers/adam/instance/operations_generic.h>
#include <rl_tools/nn/operations_cpu_mux.h>
#if RLK_L2F_TD3
#include <rl_tools/nn/layers/td3_sampling/operations_generic.h>
#else
#include <rl_tools/nn/layers/sample_and_squash/operations_generic.h>
#endif
#include <rl_tools/nn_models/mlp/operations_generic.h>
#include <rl_tools/nn_models/sequential/operations_generic.h>
#include <rl_tools/nn/optimizers/adam/operations_generic.h>
#include <rl_tools/rl/environments/l2f/operations_generic.h>
#include <rl_tools/rl/environments/l2f/parameters/default.h>
#include <rl_tools/nn_models/operations_cpu.h>
#if RLK_L2F_TD3
#include <rl_tools/rl/algorithms/td3/loop/core/operations_generic.h>  // the layers' operations, then config.h
#else
#include <rl_tools/rl/algorithms/sac/loop/core/operations_generic.h>  // the layers' operations, then config.h
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace rlt = rl_tools;

// The training reward's angular-acceleration and linear-velocity weights: l2f.Environment()'s 2 and
// 0 by default; CMake also builds rltools_sac_l2f_train_reward and rltools_td3_l2f_train_reward
// with 0 and 1, the training reward of docs/quadrotor.md (rlkernels_td3_l2f --env-param
// reward_angular_acceleration=0 --env-param reward_linear_velocity=1). The evaluation's settling
// fraction does not read the reward.
#ifndef RLK_L2F_ANGULAR_ACCELERATION_WEIGHT
#define RLK_L2F_ANGULAR_ACCELERATION_WEIGHT 2.00
#endif
#ifndef RLK_L2F_LINEAR_VELOCITY_WEIGHT
#define RLK_L2F_LINEAR_VELOCITY_WEIGHT 0.00
#endif

namespace {

using device_t = rlt::devices::DEVICE_FACTORY<>;
using rng_t = device_t::SPEC::RANDOM::ENGINE<>;
using index_t = device_t::index_t;
using scalar_t = float;
using type_policy = rlt::numeric_types::Policy<scalar_t>;

// ---------------------------------------------------------------------------------------------------
// The environment: the values of l2f 2.0.18's env_builder::ENVIRONMENT_FACTORY, on the wheel's L2F
// types. Its reward initialiser lists 11 values against the 14 fields of Squared (it omits
// position_clip, so every value after "position" lands one field later than its comment says); the
// values below are the fields as that initialiser actually sets them.
namespace l2f = rlt::rl::environments::l2f;

struct l2f_environment_config {
  using T = scalar_t;
  using TI = index_t;
  static constexpr TI simulation_frequency = 100;     // Hz: dt 0.01 s
  static constexpr TI action_history_length = 16;     // observation: 3 + 9 + 3 + 3 + 16 * 4 = 82
  static constexpr TI episode_step_limit = 5 * simulation_frequency;  // 500 steps, 5 s

  using reward_t = l2f::parameters::reward_functions::Squared<T>;
  static constexpr reward_t reward = {
      false,  // non_negative
      0.10,   // scale
      1.10,   // constant
      0.00,   // termination_penalty
      10.00,  // position
      2.50,   // position_clip
      1.00,   // orientation
      RLK_L2F_LINEAR_VELOCITY_WEIGHT,  // linear_velocity (l2f: 0)
      0.00,   // angular_velocity
      0.00,   // linear_acceleration
      RLK_L2F_ANGULAR_ACCELERATION_WEIGHT,  // angular_acceleration (l2f: 2)
      0.00,   // action
      0.00,   // d_action
      0.00,   // position_error_integral
  };

  struct trajectory_options {  // a fixed set point (the origin), no Langevin reference trajectory
    static constexpr bool LANGEVIN = false;
  };
  struct domain_randomization_options {  // all off
    static constexpr bool THRUST_TO_WEIGHT = false;
    static constexpr bool MASS = false;
    static constexpr bool TORQUE_TO_INERTIA = false;
    static constexpr bool MASS_SIZE_DEVIATION = false;
    static constexpr bool ROTOR_TORQUE_CONSTANT = false;
    static constexpr bool DISTURBANCE_FORCE = false;
    static constexpr bool ROTOR_TIME_CONSTANT = false;
  };
  using base_spec = l2f::ParametersBaseSpecification<T, TI, 4, reward_t>;
  using parameters_t = l2f::ParametersTrajectory<l2f::ParametersTrajectorySpecification<T, TI, trajectory_options,
      l2f::ParametersDomainRandomization<l2f::ParametersDomainRandomizationSpecification<T, TI, domain_randomization_options,
      l2f::ParametersDisturbances<l2f::ParametersSpecification<T, TI, l2f::ParametersBase<base_spec>>>>>>>;

  // The Crazyflie 2.x model of the registry, unmodified.
  static constexpr parameters_t::Dynamics dynamics =
      l2f::parameters::dynamics::registry<l2f::parameters::dynamics::REGISTRY::crazyflie, base_spec>;
  static constexpr parameters_t::Integration integration = {1.0 / T(simulation_frequency)};
  // init_90_deg: guidance 0.1 (10% of episodes start at rest at the origin), position within
  // +-0.5 m, tilt up to 90 degrees, linear velocity +-1 m/s, angular velocity +-1 rad/s, relative rpm
  // in [-1, 0].
  static constexpr parameters_t::MDP::Initialization init = l2f::parameters::init::init_90_deg<base_spec>;
  static constexpr parameters_t::MDP::ObservationNoise observation_noise = {0, 0, 0, 0, 0};
  static constexpr parameters_t::MDP::ActionNoise action_noise = {0};
  static constexpr parameters_t::MDP::Termination termination = {
      true,   // enabled
      1,      // position threshold [m], per axis
      2,      // linear velocity threshold [m/s], per axis
      35,     // angular velocity threshold [rad/s], per axis
      10000,  // position integral (unused by this state)
      50000,  // orientation integral (unused by this state)
  };
  static constexpr parameters_t::MDP mdp = {init, reward, observation_noise, action_noise, termination};
  static constexpr parameters_t::DomainRandomization domain_randomization = {};  // all zero
  static constexpr parameters_t::Disturbances disturbances = {
      parameters_t::Disturbances::UnivariateGaussian{0, 0},  // random force
      parameters_t::Disturbances::UnivariateGaussian{0, 0},  // random torque
  };
  static constexpr parameters_t::Trajectory trajectory = {
      {1.0, 0.0},                                                 // mixture: position set point only
      parameters_t::Trajectory::Langevin{1.00, 2.00, 0.50, 0.01}  // unused (LANGEVIN false)
  };
  static constexpr parameters_t nominal_parameters = {
      {{{dynamics, integration, mdp}, disturbances}, domain_randomization}, trajectory};

  struct ENVIRONMENT_STATIC_PARAMETERS {
    static constexpr TI N_SUBSTEPS = 1;
    static constexpr TI ACTION_HISTORY_LENGTH = action_history_length;
    static constexpr TI EPISODE_STEP_LIMIT = episode_step_limit;
    static constexpr TI ANGULAR_VELOCITY_DELAY = 0;
    using STATE_TYPE = l2f::StateTrajectory<l2f::StateSpecification<T, TI,
        l2f::DefaultActionHistoryState<T, TI, ACTION_HISTORY_LENGTH, ANGULAR_VELOCITY_DELAY>>>;
    using OBSERVATION_TYPE = l2f::DefaultActionHistoryObservation<T, TI, ACTION_HISTORY_LENGTH, ANGULAR_VELOCITY_DELAY>;
    using OBSERVATION_TYPE_PRIVILEGED = OBSERVATION_TYPE;  // symmetric actor / critic inputs
    static constexpr bool PRIVILEGED_OBSERVATION_NOISE = false;
    using PARAMETERS = parameters_t;
    static constexpr auto PARAMETER_VALUES = nominal_parameters;
    static constexpr T STATE_LIMIT_POSITION = 100000;
    static constexpr T STATE_LIMIT_VELOCITY = 100000;
    static constexpr T STATE_LIMIT_ANGULAR_VELOCITY = 100000;
  };
};
using env_t = rlt::rl::environments::Multirotor<
    l2f::Specification<scalar_t, index_t, l2f_environment_config::ENVIRONMENT_STATIC_PARAMETERS>>;
static_assert(env_t::Observation::DIM == 82, "l2f.Environment() observes 82 numbers");
static_assert(env_t::ACTION_DIM == 4);
static_assert(env_t::EPISODE_STEP_LIMIT == 500);

// ---------------------------------------------------------------------------------------------------
#if RLK_L2F_TD3
// TD3: the paper's values (see the header comment).
constexpr index_t n_environments = 1;
constexpr index_t loop_steps = 300000;  // x 1 environment = 300,000 env steps

struct adam_parameters : rlt::nn::optimizers::adam::DEFAULT_PARAMETERS_TENSORFLOW<type_policy> {
  static constexpr scalar_t ALPHA = 1e-3;  // the library default, actor and critics alike
  static constexpr bool ENABLE_GRADIENT_CLIPPING = false;
  static constexpr bool ENABLE_WEIGHT_DECAY = true;
  static constexpr scalar_t WEIGHT_DECAY = 1e-4;         // hidden layers
  static constexpr scalar_t WEIGHT_DECAY_INPUT = 1e-4;   // input layers
  static constexpr scalar_t WEIGHT_DECAY_OUTPUT = 1e-4;  // output layers
};

struct loop_parameters : rlt::rl::algorithms::td3::loop::core::DefaultParameters<type_policy, index_t, env_t> {
  struct TD3_PARAMETERS : rlt::rl::algorithms::td3::DefaultParameters<type_policy, index_t> {
    static constexpr index_t ACTOR_BATCH_SIZE = 256;
    static constexpr index_t CRITIC_BATCH_SIZE = 256;
    static constexpr index_t CRITIC_TRAINING_INTERVAL = 10;
    static constexpr index_t ACTOR_TRAINING_INTERVAL = 20;
    static constexpr index_t CRITIC_TARGET_UPDATE_INTERVAL = 10;
    static constexpr index_t ACTOR_TARGET_UPDATE_INTERVAL = 20;
    static constexpr scalar_t TARGET_NEXT_ACTION_NOISE_STD = 0.2;
    static constexpr scalar_t TARGET_NEXT_ACTION_NOISE_CLIP = 0.5;
    static constexpr scalar_t GAMMA = 0.99;
    static constexpr bool IGNORE_TERMINATION = false;
    static constexpr index_t SEQUENCE_LENGTH = 1;
    // ACTOR_POLYAK, CRITIC_POLYAK: the library default (0.995)
  };
  static constexpr index_t N_ENVIRONMENTS = n_environments;
  static constexpr index_t STEP_LIMIT = loop_steps;
  static constexpr index_t REPLAY_BUFFER_CAP = 300000;  // all env steps
  static constexpr index_t EPISODE_STEP_LIMIT = 500;
  static constexpr index_t N_WARMUP_STEPS = 0;  // no uniform-random actions: the noisy actor from step 0
  static constexpr index_t N_WARMUP_STEPS_CRITIC = 15000;
  static constexpr index_t N_WARMUP_STEPS_ACTOR = 30000;
  static constexpr index_t ACTOR_NUM_LAYERS = 3;
  static constexpr index_t ACTOR_HIDDEN_DIM = 64;
  static constexpr auto ACTOR_ACTIVATION_FUNCTION = rlt::nn::activation_functions::ActivationFunction::FAST_TANH;
  static constexpr index_t CRITIC_NUM_LAYERS = 3;
  static constexpr index_t CRITIC_HIDDEN_DIM = 64;
  static constexpr auto CRITIC_ACTIVATION_FUNCTION = rlt::nn::activation_functions::ActivationFunction::FAST_TANH;
  static constexpr scalar_t EXPLORATION_NOISE = 0.1;
  static constexpr bool SHARED_BATCH = false;  // a batch per critic update and per actor update
  static constexpr bool COLLECT_EPISODE_STATS = false;
  using OPTIMIZER_PARAMETERS = adam_parameters;
};
static_assert(loop_parameters::N_WARMUP_STEPS_CRITIC >= loop_parameters::TD3_PARAMETERS::CRITIC_BATCH_SIZE &&
                  loop_parameters::N_WARMUP_STEPS_ACTOR >= loop_parameters::TD3_PARAMETERS::ACTOR_BATCH_SIZE,
              "the first batch needs that many transitions");

// The wheel's MLP approximators, but with the paper's FAST_TANH output on the actor (theirs: TANH).
// Their critic reads the ACTOR_* sizes and activation, hence the assertion that both agree.
template <typename TYPE_POLICY, typename TI, typename ENVIRONMENT, typename PARAMETERS, bool DYNAMIC_ALLOCATION>
struct td3_approximators : rlt::rl::algorithms::td3::loop::core::ConfigApproximatorsMLP<TYPE_POLICY, TI, ENVIRONMENT,
                                                                                        PARAMETERS, DYNAMIC_ALLOCATION> {
  using base = rlt::rl::algorithms::td3::loop::core::ConfigApproximatorsMLP<TYPE_POLICY, TI, ENVIRONMENT, PARAMETERS,
                                                                            DYNAMIC_ALLOCATION>;
  static_assert(PARAMETERS::CRITIC_NUM_LAYERS == PARAMETERS::ACTOR_NUM_LAYERS &&
                PARAMETERS::CRITIC_HIDDEN_DIM == PARAMETERS::ACTOR_HIDDEN_DIM &&
                PARAMETERS::CRITIC_ACTIVATION_FUNCTION == PARAMETERS::ACTOR_ACTIVATION_FUNCTION);
  template <typename CAPABILITY>
  struct ACTOR {
    using wheel_actor = typename base::template ACTOR<CAPABILITY>;
    using MLP_CONFIG = rlt::nn_models::mlp::Configuration<
        TYPE_POLICY, TI, ENVIRONMENT::ACTION_DIM, PARAMETERS::ACTOR_NUM_LAYERS, PARAMETERS::ACTOR_HIDDEN_DIM,
        PARAMETERS::ACTOR_ACTIVATION_FUNCTION, rlt::nn::activation_functions::ActivationFunction::FAST_TANH>;
    using MLP = rlt::nn_models::mlp::BindConfiguration<MLP_CONFIG>;
    using MODULE_CHAIN = rlt::nn_models::sequential::Module<
        MLP, rlt::nn_models::sequential::Module<typename wheel_actor::SAMPLING>>;  // the exploration noise
    using MODEL = rlt::nn_models::sequential::Build<CAPABILITY, MODULE_CHAIN, typename wheel_actor::INPUT_SHAPE>;
  };
  using ACTOR_TYPE =
      typename ACTOR<rlt::nn::capability::Gradient<rlt::nn::parameters::Adam, DYNAMIC_ALLOCATION>>::MODEL;
  using ACTOR_TARGET_TYPE = typename ACTOR<rlt::nn::capability::Forward<DYNAMIC_ALLOCATION>>::MODEL;
};

using loop_config = rlt::rl::algorithms::td3::loop::core::Config<type_policy, index_t, rng_t, env_t, loop_parameters,
                                                                 td3_approximators>;
#else
// SAC: sac_tiny.h's values.
constexpr index_t n_environments = 8;
constexpr index_t loop_steps = 35000;  // x 8 environments = 280,000 env steps

struct adam_common : rlt::nn::optimizers::adam::DEFAULT_PARAMETERS_TENSORFLOW<type_policy> {
  static constexpr bool ENABLE_GRADIENT_CLIPPING = false;
  static constexpr bool ENABLE_WEIGHT_DECAY = false;
};
struct adam_actor : adam_common {
  static constexpr scalar_t ALPHA = 1e-3;
};
struct adam_critic : adam_common {
  static constexpr scalar_t ALPHA = 2e-3;
};
struct adam_alpha : adam_common {
  static constexpr scalar_t ALPHA = 1e-3;
};

struct loop_parameters : rlt::rl::algorithms::sac::loop::core::DefaultParameters<type_policy, index_t, env_t> {
  struct SAC_PARAMETERS : rlt::rl::algorithms::sac::DefaultParameters<type_policy, index_t, env_t::ACTION_DIM> {
    static constexpr index_t ACTOR_BATCH_SIZE = 32;
    static constexpr index_t CRITIC_BATCH_SIZE = 32;
    static constexpr index_t CRITIC_TRAINING_INTERVAL = 2;
    static constexpr index_t ACTOR_TRAINING_INTERVAL = 4;
    static constexpr index_t CRITIC_TARGET_UPDATE_INTERVAL = 2;
    static constexpr scalar_t GAMMA = 0.98;
    static constexpr bool IGNORE_TERMINATION = false;
    static constexpr scalar_t TARGET_ENTROPY = -4;
    static constexpr index_t SEQUENCE_LENGTH = 1;
  };
  static constexpr index_t N_ENVIRONMENTS = n_environments;
  static constexpr index_t STEP_LIMIT = loop_steps;
  static constexpr index_t REPLAY_BUFFER_CAP = 10000;  // per environment
  static constexpr index_t EPISODE_STEP_LIMIT = 500;
  static constexpr index_t N_WARMUP_STEPS = 200;
  static constexpr index_t N_WARMUP_STEPS_CRITIC = 200;
  static constexpr index_t N_WARMUP_STEPS_ACTOR = 200;
  static constexpr index_t ACTOR_NUM_LAYERS = 5;
  static constexpr index_t ACTOR_HIDDEN_DIM = 16;
  static constexpr auto ACTOR_ACTIVATION_FUNCTION = rlt::nn::activation_functions::ActivationFunction::FAST_TANH;
  static constexpr index_t CRITIC_NUM_LAYERS = 5;
  static constexpr index_t CRITIC_HIDDEN_DIM = 16;
  static constexpr auto CRITIC_ACTIVATION_FUNCTION = rlt::nn::activation_functions::ActivationFunction::FAST_TANH;
  static constexpr bool SHARED_BATCH = true;
  static constexpr bool COLLECT_EPISODE_STATS = false;
  static constexpr bool SAMPLE_ENVIRONMENT_PARAMETERS = true;
  using ACTOR_OPTIMIZER_PARAMETERS = adam_actor;
  using CRITIC_OPTIMIZER_PARAMETERS = adam_critic;
  using ALPHA_OPTIMIZER_PARAMETERS = adam_alpha;
};
static_assert(loop_parameters::N_WARMUP_STEPS >= loop_parameters::SAC_PARAMETERS::ACTOR_BATCH_SIZE,
              "the first batch needs that many transitions");

using loop_config = rlt::rl::algorithms::sac::loop::core::Config<type_policy, index_t, rng_t, env_t, loop_parameters>;
#endif
using loop_state = loop_config::State<loop_config>;
static_assert(loop_config::ENVIRONMENT_STEPS_PER_LOOP_STEP == n_environments);

// ---------------------------------------------------------------------------------------------------
// Evaluation.
constexpr index_t eval_episodes = 100;
constexpr index_t eval_step_limit = 500;
constexpr index_t eval_interval_env_steps = 10000;
constexpr index_t eval_interval_loop_steps = eval_interval_env_steps / n_environments;  // 1,250
static_assert(eval_interval_env_steps % n_environments == 0);
constexpr scalar_t settle_distance = 0.2;  // m: SettlingFractionPosition<200> (mm)

using actor_t = loop_config::NN::ACTOR_TYPE;
using eval_actor_t = actor_t::CHANGE_BATCH_SIZE<index_t, eval_episodes>;  // state and buffer sizes

struct eval_result {
  double return_mean = 0, length_mean = 0, settling_fraction = 0, terminated_fraction = 0;
};

struct evaluator {
  env_t env;
  rng_t rng;
  eval_actor_t::State<true> policy_state;
  eval_actor_t::Buffer<true> policy_buffer;
  rlt::Matrix<rlt::matrix::Specification<scalar_t, index_t, eval_episodes, env_t::Observation::DIM>> observations;
  rlt::Matrix<rlt::matrix::Specification<scalar_t, index_t, eval_episodes, env_t::ACTION_DIM>> actions;
  std::vector<env_t::Parameters> parameters = std::vector<env_t::Parameters>(eval_episodes);
  std::vector<env_t::State> states = std::vector<env_t::State>(eval_episodes);

  void malloc(device_t& device) {
    rlt::malloc(device, env);
    rlt::init(device, env);
    rlt::malloc(device, rng);
    rlt::malloc(device, policy_state);
    rlt::malloc(device, policy_buffer);
    rlt::malloc(device, observations);
    rlt::malloc(device, actions);
  }
  void free(device_t& device) {
    rlt::free(device, actions);
    rlt::free(device, observations);
    rlt::free(device, policy_buffer);
    rlt::free(device, policy_state);
    rlt::free(device, rng);
    rlt::free(device, env);
  }

  template <typename ACTOR>
  eval_result run(device_t& device, const ACTOR& actor, index_t rng_seed) {
    rlt::init(device, rng, rng_seed);
    std::vector<double> returns(eval_episodes, 0.0);
    std::vector<index_t> lengths(eval_episodes, 0);
    std::vector<bool> terminated(eval_episodes, false);
    for (index_t i = 0; i < eval_episodes; i++) {
      states[i] = env_t::State{};  // value-initialised: the trajectory type (unset when LANGEVIN is off) is the set point
      rlt::sample_initial_parameters(device, env, parameters[i], rng);
      rlt::sample_initial_state(device, env, parameters[i], states[i], rng);
    }
    const rlt::Mode<rlt::mode::Evaluation<>> mode;
    rlt::reset(device, actor, policy_state, rng);
    for (index_t step = 0; step < eval_step_limit; step++) {
      for (index_t i = 0; i < eval_episodes; i++) {
        if (terminated[i]) continue;  // its row keeps its last observation; its action is discarded
        auto observation = rlt::row(device, observations, i);
        rlt::observe(device, env, parameters[i], states[i], env_t::Observation{}, observation, rng);
      }
      auto input = rlt::to_tensor(device, observations);
      auto output = rlt::to_tensor(device, actions);
      rlt::evaluate_step(device, actor, input, policy_state, output, policy_buffer, rng, mode);
      bool any_running = false;
      for (index_t i = 0; i < eval_episodes; i++) {
        if (terminated[i]) continue;
        auto action = rlt::row(device, actions, i);
        env_t::State next_state = states[i];
        rlt::step(device, env, parameters[i], states[i], action, next_state, rng);
        const scalar_t r = rlt::reward(device, env, parameters[i], states[i], action, next_state, rng);
        returns[i] += r;  // the terminating step counts too (as in rl::utils::evaluation)
        lengths[i] += 1;
        terminated[i] = rlt::terminated(device, env, parameters[i], next_state, rng);
        states[i] = next_state;
        any_running = any_running || !terminated[i];
      }
      if (!any_running) break;
    }
    eval_result result;
    index_t settled = 0, n_terminated = 0;
    for (index_t i = 0; i < eval_episodes; i++) {
      result.return_mean += returns[i];
      result.length_mean += double(lengths[i]);
      n_terminated += terminated[i] ? 1 : 0;
      if (!terminated[i] && lengths[i] == eval_step_limit) {
        const auto& p = states[i].position;
        const double distance = std::sqrt(double(p[0]) * p[0] + double(p[1]) * p[1] + double(p[2]) * p[2]);
        settled += distance < settle_distance ? 1 : 0;
      }
    }
    result.return_mean /= eval_episodes;
    result.length_mean /= eval_episodes;
    result.settling_fraction = double(settled) / eval_episodes;
    result.terminated_fraction = double(n_terminated) / eval_episodes;
    return result;
  }
};

const char* backend_name() {
#if defined(RL_TOOLS_BACKEND_ENABLE_OPENBLAS)
  return "OpenBLAS";
#else
  return "generic (no BLAS)";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  index_t seed = 0;
  if (argc > 2 || (argc == 2 && (std::string(argv[1]).empty() ||
                                 std::string(argv[1]).find_first_not_of("0123456789") != std::string::npos))) {
    std::fprintf(stderr, "usage: %s [SEED]   (SEED: a non-negative integer, default 0)\n", argv[0]);
    return 2;
  }
  if (argc == 2) seed = static_cast<index_t>(std::strtoull(argv[1], nullptr, 10));
#if RLK_L2F_TD3
  {
    using p = loop_parameters;
    using td3 = p::TD3_PARAMETERS;
    std::printf("rltools_td3_l2f: RLtools TD3 %s (headers of the rltools PyPI wheel), backend %s, seed %zu, "
                "%zu loop steps x %zu envs = %zu env steps\n",
                RL_TOOLS_STRINGIFY(RL_TOOLS_COMMIT_HASH), backend_name(), static_cast<std::size_t>(seed),
                static_cast<std::size_t>(loop_steps), static_cast<std::size_t>(n_environments),
                static_cast<std::size_t>(loop_steps * n_environments));
    std::printf("td3: learning-to-fly paper hyperparameters: replay %zu, batch %zu/%zu (actor/critic, %s), "
                "intervals critic %zu actor %zu critic_target %zu actor_target %zu, polyak %.4f/%.4f, "
                "target noise std %.2f clip %.2f, gamma %.3f, ignore_termination %d, exploration noise %.2f, "
                "warm-up random %zu critic %zu actor %zu, actor %zu layers x %zu fast_tanh (fast_tanh output), "
                "critic %zu layers x %zu fast_tanh (identity output), adam alpha %.0e epsilon %.0e "
                "weight_decay %.0e/%.0e/%.0e (hidden/input/output)\n",
                static_cast<std::size_t>(p::REPLAY_BUFFER_CAP), static_cast<std::size_t>(td3::ACTOR_BATCH_SIZE),
                static_cast<std::size_t>(td3::CRITIC_BATCH_SIZE), p::SHARED_BATCH ? "shared" : "separate batches",
                static_cast<std::size_t>(td3::CRITIC_TRAINING_INTERVAL),
                static_cast<std::size_t>(td3::ACTOR_TRAINING_INTERVAL),
                static_cast<std::size_t>(td3::CRITIC_TARGET_UPDATE_INTERVAL),
                static_cast<std::size_t>(td3::ACTOR_TARGET_UPDATE_INTERVAL), double(td3::ACTOR_POLYAK),
                double(td3::CRITIC_POLYAK), double(td3::TARGET_NEXT_ACTION_NOISE_STD),
                double(td3::TARGET_NEXT_ACTION_NOISE_CLIP), double(td3::GAMMA), int(td3::IGNORE_TERMINATION),
                double(p::EXPLORATION_NOISE), static_cast<std::size_t>(p::N_WARMUP_STEPS),
                static_cast<std::size_t>(p::N_WARMUP_STEPS_CRITIC), static_cast<std::size_t>(p::N_WARMUP_STEPS_ACTOR),
                static_cast<std::size_t>(p::ACTOR_NUM_LAYERS), static_cast<std::size_t>(p::ACTOR_HIDDEN_DIM),
                static_cast<std::size_t>(p::CRITIC_NUM_LAYERS), static_cast<std::size_t>(p::CRITIC_HIDDEN_DIM),
                double(adam_parameters::ALPHA), double(adam_parameters::EPSILON), double(adam_parameters::WEIGHT_DECAY),
                double(adam_parameters::WEIGHT_DECAY_INPUT), double(adam_parameters::WEIGHT_DECAY_OUTPUT));
  }
#else
  std::printf("rltools_sac_l2f: RLtools %s (headers of the rltools PyPI wheel), backend %s, seed %zu, "
              "%zu loop steps x %zu envs = %zu env steps\n",
              RL_TOOLS_STRINGIFY(RL_TOOLS_COMMIT_HASH), backend_name(), static_cast<std::size_t>(seed),
              static_cast<std::size_t>(loop_steps), static_cast<std::size_t>(n_environments),
              static_cast<std::size_t>(loop_steps * n_environments));
#endif
  {
    const auto& p = l2f_environment_config::nominal_parameters;
    const auto& r = p.mdp.reward;
    std::printf("env: l2f.Environment() values: dt %.4f, obs %zu, episode %zu steps, mass %.4f kg, "
                "reward{scale %.2f const %.2f term %.1f pos %.1f pos_clip %.2f ori %.2f linvel %.2f angvel %.2f "
                "linacc %.2f angacc %.2f action %.2f}, init{guidance %.2f pos %.2f angle %.4f linvel %.1f "
                "angvel %.1f rpm [%.0f, %.0f]}, termination{pos %.1f linvel %.1f angvel %.1f}\n",
                double(p.integration.dt), static_cast<std::size_t>(env_t::Observation::DIM),
                static_cast<std::size_t>(env_t::EPISODE_STEP_LIMIT), double(p.dynamics.mass), double(r.scale),
                double(r.constant), double(r.termination_penalty), double(r.position), double(r.position_clip),
                double(r.orientation), double(r.linear_velocity), double(r.angular_velocity),
                double(r.linear_acceleration), double(r.angular_acceleration), double(r.action),
                double(p.mdp.init.guidance), double(p.mdp.init.max_position), double(p.mdp.init.max_angle),
                double(p.mdp.init.max_linear_velocity), double(p.mdp.init.max_angular_velocity),
                double(p.mdp.init.min_rpm), double(p.mdp.init.max_rpm),
                double(p.mdp.termination.position_threshold), double(p.mdp.termination.linear_velocity_threshold),
                double(p.mdp.termination.angular_velocity_threshold));
  }

  device_t device;
  rlt::init(device);
  auto state = std::make_unique<loop_state>();  // large: keep it off the stack
  rlt::malloc(device, *state);
  rlt::init(device, *state, seed);
  auto eval = std::make_unique<evaluator>();
  eval->malloc(device);
  const index_t eval_seed = seed + 1000003;

  double seconds = 0, cpu_seconds = 0;
  bool settled_reported = false;
  double settled_seconds = 0;
  std::size_t settled_env_steps = 0;
  auto report = [&](std::size_t env_steps) {
    const eval_result r = eval->run(device, rlt::get_actor(*state), eval_seed);
    std::printf("eval: env_steps %7zu training_seconds %8.3f training_cpu_seconds %8.3f return %9.3f length %7.2f "
                "settling_fraction %.2f terminated_fraction %.2f\n",
                env_steps, seconds, cpu_seconds, r.return_mean, r.length_mean, r.settling_fraction,
                r.terminated_fraction);
    std::fflush(stdout);
    if (!settled_reported && r.settling_fraction >= 0.9) {
      settled_reported = true;
      settled_seconds = seconds;
      settled_env_steps = env_steps;
    }
  };

  report(0);
  bool finished = false;
  while (!finished) {
    const std::clock_t cpu_start = std::clock();
    const auto start = std::chrono::steady_clock::now();
    do {
      finished = rlt::step(device, *state);
    } while (!finished && state->step % eval_interval_loop_steps != 0);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu_seconds += double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    if (!finished) report(static_cast<std::size_t>(state->step) * n_environments);
  }
  std::printf("training_seconds: %.6f\ntraining_cpu_seconds: %.6f\n", seconds, cpu_seconds);
  if (settled_reported) {
    std::printf("first_settled_0.9: env_steps %zu training_seconds %.3f\n", settled_env_steps, settled_seconds);
  } else {
    std::printf("first_settled_0.9: never\n");
  }

  eval->free(device);
  rlt::free(device, *state);
  return 0;
}
