// tests/physics/mujoco_fixture.hpp
// Shared by the tests that compare rlkernels' physics with MuJoCo's C library (tests/physics/
// mujoco_*_test.cpp, one executable linking the mujoco wheel's libmujoco): loading Gymnasium's
// model files, owning mjModel/mjData, and moving state between MuJoCo and physics::data.
#pragma once

#include <mujoco/mujoco.h>

#include <rlkernels/envs/mujoco/models/half_cheetah.hpp>
#include <rlkernels/envs/mujoco/models/hopper.hpp>
#include <rlkernels/envs/mujoco/models/walker2d.hpp>
#include <rlkernels/physics/data.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>

#ifndef RLK_GYMNASIUM_ASSETS
#error "RLK_GYMNASIUM_ASSETS (Gymnasium's envs/mujoco/assets directory) must be defined"
#endif

namespace rlk_test {

struct mj_model_deleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct mj_data_deleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using mj_model_ptr = std::unique_ptr<mjModel, mj_model_deleter>;
using mj_data_ptr = std::unique_ptr<mjData, mj_data_deleter>;

/// Path of a model file in Gymnasium's asset directory.
inline std::string gymnasium_asset(const std::string& file) { return std::string(RLK_GYMNASIUM_ASSETS) + "/" + file; }

/// Compiles an MJCF file with MuJoCo; fails the test with MuJoCo's message if it cannot.
inline mj_model_ptr load_mj_model(const std::string& path) {
  char error[1024] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  INFO("mj_loadXML(" << path << "): " << error);
  REQUIRE(m != nullptr);
  return mj_model_ptr(m);
}

inline mj_data_ptr make_mj_data(const mjModel* m) {
  mjData* d = mj_makeData(m);
  REQUIRE(d != nullptr);
  return mj_data_ptr(d);
}

/// The three Gymnasium models: generated constants and the XML they came from.
struct hopper_case {
  using dims = rlkernels::models::hopper_dims;
  static constexpr const char* name = "hopper";
  static constexpr const char* xml = "hopper.xml";
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, dims> model() { return rlkernels::models::hopper<Scalar>(); }
};
struct walker2d_case {
  using dims = rlkernels::models::walker2d_dims;
  static constexpr const char* name = "walker2d";
  static constexpr const char* xml = "walker2d_v5.xml";
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, dims> model() { return rlkernels::models::walker2d<Scalar>(); }
};
struct half_cheetah_case {
  using dims = rlkernels::models::half_cheetah_dims;
  static constexpr const char* name = "half_cheetah";
  static constexpr const char* xml = "half_cheetah.xml";
  template <class Scalar>
  static constexpr rlkernels::physics::model<Scalar, dims> model() { return rlkernels::models::half_cheetah<Scalar>(); }
};

/// Copies qpos, qvel, ctrl, qacc_warmstart and time from our data into MuJoCo's.
template <class Scalar, class Dims>
void copy_state_to_mujoco(const rlkernels::physics::data<Scalar, Dims>& ours, const mjModel* m, mjData* d) {
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = double(ours.qpos[i]);
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = double(ours.qvel[i]);
  for (int i = 0; i < m->nv; ++i) d->qacc_warmstart[i] = double(ours.qacc_warmstart[i]);
  for (int i = 0; i < m->nu; ++i) d->ctrl[i] = double(ours.ctrl[i]);
  d->time = double(ours.time);
}

/// Copies qpos, qvel, ctrl, qacc_warmstart and time from MuJoCo's data into ours (the rest of
/// ours is zeroed first).
template <class Scalar, class Dims>
void copy_state_from_mujoco(const mjModel* m, const mjData* d, rlkernels::physics::data<Scalar, Dims>& ours) {
  ours = rlkernels::physics::data<Scalar, Dims>{};
  for (int i = 0; i < m->nq; ++i) ours.qpos[i] = Scalar(d->qpos[i]);
  for (int i = 0; i < m->nv; ++i) ours.qvel[i] = Scalar(d->qvel[i]);
  for (int i = 0; i < m->nv; ++i) ours.qacc_warmstart[i] = Scalar(d->qacc_warmstart[i]);
  for (int i = 0; i < m->nu; ++i) ours.ctrl[i] = Scalar(d->ctrl[i]);
  ours.time = Scalar(d->time);
}

/// Fills our data's inputs of the constraint stages (state, geom and body frames, subtree_com,
/// anchors and axes, cdof, qM, qfrc_smooth, qacc_smooth) from MuJoCo's data after mj_forward.
template <class Scalar, class Dims>
void fill_from_mujoco(const mjModel* m, const mjData* d, rlkernels::physics::data<Scalar, Dims>& ours) {
  copy_state_from_mujoco(m, d, ours);
  for (int g = 0; g < m->ngeom; ++g) {
    for (int k = 0; k < 3; ++k) ours.geom_xpos[g][k] = Scalar(d->geom_xpos[3 * g + k]);
    for (int k = 0; k < 9; ++k) ours.geom_xmat[g][k] = Scalar(d->geom_xmat[9 * g + k]);
  }
  for (int b = 0; b < m->nbody; ++b) {
    for (int k = 0; k < 3; ++k) ours.xpos[b][k] = Scalar(d->xpos[3 * b + k]);
    for (int k = 0; k < 9; ++k) ours.xmat[b][k] = Scalar(d->xmat[9 * b + k]);
    for (int k = 0; k < 3; ++k) ours.subtree_com[b][k] = Scalar(d->subtree_com[3 * b + k]);
  }
  for (int j = 0; j < m->njnt; ++j)
    for (int k = 0; k < 3; ++k) {
      ours.xanchor[j][k] = Scalar(d->xanchor[3 * j + k]);
      ours.xaxis[j][k] = Scalar(d->xaxis[3 * j + k]);
    }
  const int nv = m->nv;
  for (int i = 0; i < nv; ++i)
    for (int k = 0; k < 6; ++k) ours.cdof[i][k] = Scalar(d->cdof[6 * i + k]);
  std::unique_ptr<double[]> M(new double[nv * nv]);
  mj_fullM(m, d, M.get());
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nv; ++j) ours.qM[i][j] = Scalar(M[i * nv + j]);
  for (int i = 0; i < nv; ++i) {
    ours.qfrc_smooth[i] = Scalar(d->qfrc_smooth[i]);
    ours.qacc_smooth[i] = Scalar(d->qacc_smooth[i]);
  }
}

/// |a - b| / max(1, |b|): the error measure the physics tests report (absolute for small values,
/// relative for large ones).
inline double scaled_error(double a, double b) { return std::fabs(a - b) / std::fmax(1.0, std::fabs(b)); }

/// Max scaled_error over n values.
inline double max_scaled_error(const double* a, const double* b, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) e = std::fmax(e, std::isnan(a[i]) != std::isnan(b[i]) ? INFINITY : scaled_error(a[i], b[i]));
  return e;
}

/// A small deterministic generator for test inputs (splitmix64 -> uniform doubles).
struct test_rng {
  std::uint64_t state;
  explicit test_rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
};

}  // namespace rlk_test
