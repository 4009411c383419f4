// A stand-in for include/rlkernels/physics/forward.hpp whose physics::step is MuJoCo's own mj_step
// (host only, double inside), used by check.sh to test the MuJoCo envs' Gymnasium semantics
// (rewards, observations, healthy checks, frame_skip, resets, the golden-data harness) apart from
// the engine: with it, tests/envs/mujoco_envs_test.cpp must match Gymnasium exactly (0 error).
// Not part of the library and never compiled by the build.
#pragma once
#include "../core/config.hpp"
#include "data.hpp"
#include "model.hpp"
#include "../envs/mujoco/models/hopper.hpp"
#include "../envs/mujoco/models/walker2d.hpp"
#include "../envs/mujoco/models/half_cheetah.hpp"
#include <mujoco/mujoco.h>
#include <string>
#include <type_traits>
#include <cstdio>
#include <cstdlib>
namespace rlkernels { namespace physics {
/// One mjModel per model type (loaded from the Gymnasium asset of the same name) and one mjData per thread.
template <class Dims> struct shadow {
  static mjModel* model() {
    static mjModel* m = [] {
      const char* xml = std::is_same<Dims, models::hopper_dims>::value ? "hopper.xml" : std::is_same<Dims, models::walker2d_dims>::value ? "walker2d_v5.xml" : "half_cheetah.xml";
      std::string path = std::string(ASSETS) + "/" + xml;
      char err[1000];
      mjModel* mm = mj_loadXML(path.c_str(), nullptr, err, 1000);
      if (!mm) { std::printf("load %s: %s\n", path.c_str(), err); std::abort(); }
      return mm; }();
    return m;
  }
  static mjData* data() { static thread_local mjData* d = mj_makeData(model()); return d; }
};
template <class Scalar, class Dims>
void forward(const model<Scalar, Dims>&, data<Scalar, Dims>&) {}
/// mj_step on the state and controls of d; MuJoCo's instability warnings become d.warning bits.
template <class Scalar, class Dims>
void step(const model<Scalar, Dims>&, data<Scalar, Dims>& d) {
  mjModel* M = shadow<Dims>::model(); mjData* D = shadow<Dims>::data();
  for (int i = 0; i < M->nq; ++i) D->qpos[i] = d.qpos[i];
  for (int i = 0; i < M->nv; ++i) { D->qvel[i] = d.qvel[i]; D->qacc_warmstart[i] = d.qacc_warmstart[i]; }
  for (int i = 0; i < M->nu; ++i) D->ctrl[i] = d.ctrl[i];
  for (int w = 0; w < mjNWARNING; ++w) D->warning[w].number = 0;
  mj_step(M, D);
  d.warning = 0;
  if (D->warning[mjWARN_BADQPOS].number) d.warning |= warning_bad_qpos;
  if (D->warning[mjWARN_BADQVEL].number) d.warning |= warning_bad_qvel;
  if (D->warning[mjWARN_BADQACC].number) d.warning |= warning_bad_qacc;
  for (int i = 0; i < M->nq; ++i) d.qpos[i] = Scalar(D->qpos[i]);
  for (int i = 0; i < M->nv; ++i) { d.qvel[i] = Scalar(D->qvel[i]); d.qacc_warmstart[i] = Scalar(D->qacc_warmstart[i]); }
  for (int i = 0; i < M->nu; ++i) d.ctrl[i] = Scalar(D->ctrl[i]);
}
} }
