// rlkernels/envs/vec_env.hpp
// vec_env<Env, Backend>: N copies of one environment stepped as a batch on a backend, with
// automatic reset in the same step and Gymnasium's episode-end contract: separate terminated and
// truncated flags, and the final observation of every transition kept before the reset.
#pragma once

#include "vec_env_kernels.hpp"
#include "vec_env_batch.hpp"
