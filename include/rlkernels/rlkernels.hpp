// rlkernels/rlkernels.hpp
// Everything in one include: backends, memory, random numbers, the env concept, vec_env and the
// bundled environments with their registry of Gymnasium ids.
#pragma once

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
