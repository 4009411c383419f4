// rlkernels/rlkernels.hpp
// Everything in one include: backends, memory, random numbers, the env concept, vec_env, the
// bundled environments with their registry of Gymnasium ids, return estimators, normalisers,
// rollout / replay / prioritized replay buffers, and loss kernels with gradients.
#pragma once

#include "buffers/prioritized_replay.hpp"
#include "buffers/replay_buffer.hpp"
#include "buffers/rollout_buffer.hpp"
#include "buffers/sum_tree.hpp"
#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/math.hpp"
#include "core/memory.hpp"
#include "core/random.hpp"
#include "envs/acrobot.hpp"
#include "envs/cartpole.hpp"
#include "envs/env.hpp"
#include "envs/mountain_car.hpp"
#include "envs/mountain_car_continuous.hpp"
#include "envs/pendulum.hpp"
#include "envs/registry.hpp"
#include "envs/vec_env.hpp"
#include "estimators/gae.hpp"
#include "estimators/normalization.hpp"
#include "estimators/returns.hpp"
#include "estimators/vtrace.hpp"
#include "losses/distributions.hpp"
#include "losses/dqn.hpp"
#include "losses/polyak.hpp"
#include "losses/ppo.hpp"
#include "losses/sac.hpp"
#include "losses/td3.hpp"
