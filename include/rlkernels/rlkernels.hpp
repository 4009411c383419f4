// rlkernels/rlkernels.hpp
// Everything in one include: backends, memory, random numbers, the env concept, vec_env and the
// bundled environments.
#pragma once

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/random.hpp"
#include "envs/cartpole.hpp"
#include "envs/env.hpp"
#include "envs/vec_env.hpp"
