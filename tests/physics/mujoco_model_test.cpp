// The generated model headers (scripts/mjcf_to_header.py) hold exactly what MuJoCo compiles from
// Gymnasium's XML: every constant against the mjModel it came from, and the candidate collision
// pairs cover every contact MuJoCo produces along random trajectories (in MuJoCo's geom order).
#include "mujoco_fixture.hpp"

#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

using namespace rlk_test;
namespace physics = rlkernels::physics;

namespace {

struct field_checker {
  int mismatches = 0;
  std::ostringstream report;
  void value(const char* field, int i, double ours, double theirs) {
    if (!(ours == theirs) && !(std::isinf(ours) && ours == theirs)) {
      if (mismatches < 20) report << field << "[" << i << "]: ours " << ours << ", mjModel " << theirs << "\n";
      ++mismatches;
    }
  }
  template <class T>
  void array(const char* field, const T* ours, const double* theirs, int n) {
    for (int i = 0; i < n; ++i) value(field, i, double(ours[i]), theirs[i]);
  }
  template <class T>
  void ints(const char* field, const T* ours, const int* theirs, int n) {
    for (int i = 0; i < n; ++i) value(field, i, double(int(ours[i])), double(theirs[i]));
  }
  template <class T, class U>
  void bytes(const char* field, const T* ours, const U* theirs, int n) {
    for (int i = 0; i < n; ++i) value(field, i, double(int(ours[i])), double(theirs[i]));
  }
};

}  // namespace

TEMPLATE_TEST_CASE("generated model constants equal the compiled mjModel", "[mujoco][model]", hopper_case,
                   walker2d_case, half_cheetah_case, ant_case, humanoid_case, box_crawler_case, inverted_pendulum_case,
                   inverted_double_pendulum_case, swimmer_case, my_robot_case, reacher_case, pusher_case,
                   sensor_robot_case, friction_quad_case, friction_islands_case) {
  const auto mj = load_mj_model(model_file(TestType::xml));
  const mjModel* m = mj.get();
  constexpr auto ours = TestType::template lean_model<double>();  // the generated function is constexpr
  using M = std::remove_const_t<decltype(ours)>;
  INFO(TestType::name);

  REQUIRE(M::nq == m->nq);
  REQUIRE(M::nv == m->nv);
  REQUIRE(M::nu == m->nu);
  REQUIRE(M::nbody == m->nbody);
  REQUIRE(M::njnt == m->njnt);
  // the header keeps every geom but the visual-only ones that are not planes, spheres, capsules or boxes
  const std::vector<int> kept = kept_geoms(m);
  REQUIRE(M::ngeom == int(kept.size()));
  // MuJoCo's geom arrays restricted to the kept geoms (stride: values per geom)
  std::vector<std::vector<double>> gathered;
  auto geoms = [&](const auto* values, int stride) {
    gathered.emplace_back();
    for (int g : kept)
      for (int k = 0; k < stride; ++k) gathered.back().push_back(double(values[g * stride + k]));
    return gathered.back().data();
  };
  std::vector<std::vector<int>> gathered_ints;
  auto geom_ints = [&](const int* values) {
    gathered_ints.emplace_back();
    for (int g : kept) gathered_ints.back().push_back(values[g]);
    return gathered_ints.back().data();
  };
  std::vector<std::vector<unsigned char>> gathered_bytes;
  auto geom_bytes = [&](const mjtByte* values) {
    gathered_bytes.emplace_back();
    for (int g : kept) gathered_bytes.back().push_back(values[g]);
    return gathered_bytes.back().data();
  };
  const int ngeom = M::ngeom;

  field_checker c;
  // options and statistics
  c.value("timestep", 0, ours.timestep, m->opt.timestep);
  c.array("gravity", ours.gravity, m->opt.gravity, 3);
  c.value("impratio", 0, ours.impratio, m->opt.impratio);
  c.value("tolerance", 0, ours.tolerance, m->opt.tolerance);
  c.value("ls_tolerance", 0, ours.ls_tolerance, m->opt.ls_tolerance);
  c.value("o_margin", 0, ours.o_margin, m->opt.o_margin);
  c.value("integrator", 0, int(ours.integrator), m->opt.integrator == mjINT_RK4 ? 1 : (m->opt.integrator == mjINT_EULER ? 0 : -1));
  c.value("solver", 0, int(ours.solver), int(m->opt.solver));
  c.value("Dims declare PGS", 0, physics::dims_pgs<typename M::dims>, m->opt.solver == mjSOL_PGS);
  c.value("iterations", 0, ours.iterations, m->opt.iterations);
  c.value("ls_iterations", 0, ours.ls_iterations, m->opt.ls_iterations);
  c.value("disableflags", 0, ours.disableflags, m->opt.disableflags);
  c.value("enableflags", 0, ours.enableflags, m->opt.enableflags);
  c.value("meaninertia", 0, ours.meaninertia, m->stat.meaninertia);
  const bool mj_fluid = m->opt.density != 0 || m->opt.viscosity != 0 || m->opt.wind[0] != 0 || m->opt.wind[1] != 0 ||
                        m->opt.wind[2] != 0;
  REQUIRE(M::fluid == mj_fluid);
  if constexpr (M::fluid) {
    c.value("density", 0, ours.density, m->opt.density);
    c.value("viscosity", 0, ours.viscosity, m->opt.viscosity);
    c.array("wind", ours.wind, m->opt.wind, 3);
  }
  CHECK(m->opt.cone == mjCONE_PYRAMIDAL);
  // bodies
  c.ints("body_parentid", ours.body_parentid, m->body_parentid, m->nbody);
  c.ints("body_rootid", ours.body_rootid, m->body_rootid, m->nbody);
  REQUIRE(M::ntree == std::max(int(m->ntree), 1));
  if constexpr (M::nsensor > 0) {  // the kept sensors, in MuJoCo's order, packed
    const std::vector<int> ks = kept_sensors(m);
    REQUIRE(M::nsensor == int(ks.size()));
    int adr = 0;
    for (int k = 0; k < M::nsensor; ++k) {
      const int j = ks[k];
      INFO("sensor " << k << " (mjModel's " << j << ")");
      REQUIRE(ours.sensor_type[k] == m->sensor_type[j]);
      REQUIRE(ours.sensor_datatype[k] == m->sensor_datatype[j]);
      REQUIRE(ours.sensor_objtype[k] == m->sensor_objtype[j]);
      REQUIRE(ours.sensor_objid[k] == m->sensor_objid[j]);  // (no dropped geom in these models)
      REQUIRE(ours.sensor_refid[k] == m->sensor_refid[j]);
      if (m->sensor_refid[j] >= 0) REQUIRE(ours.sensor_reftype[k] == m->sensor_reftype[j]);
      REQUIRE(ours.sensor_dim[k] == m->sensor_dim[j]);
      REQUIRE(ours.sensor_adr[k] == adr);
      c.value("sensor_cutoff", k, ours.sensor_cutoff[k], m->sensor_cutoff[j]);
      adr += m->sensor_dim[j];
    }
    REQUIRE(M::nsensordata == adr);
  }
  if constexpr (M::ccd_iterations > 0) {  // a model with convex pairs
    REQUIRE(M::ccd_iterations == m->opt.ccd_iterations);
    c.value("ccd_tolerance", 0, ours.ccd_tolerance, m->opt.ccd_tolerance);
  }
  if constexpr (M::ntree > 1) {
    c.ints("body_treeid", ours.body_treeid, m->body_treeid, m->nbody);
    c.ints("dof_treeid", ours.dof_treeid, m->dof_treeid, m->nv);
  }
  c.ints("body_weldid", ours.body_weldid, m->body_weldid, m->nbody);
  c.ints("body_jntnum", ours.body_jntnum, m->body_jntnum, m->nbody);
  c.ints("body_jntadr", ours.body_jntadr, m->body_jntadr, m->nbody);
  c.ints("body_dofnum", ours.body_dofnum, m->body_dofnum, m->nbody);
  c.ints("body_dofadr", ours.body_dofadr, m->body_dofadr, m->nbody);
  c.array("body_pos", &ours.body_pos[0][0], m->body_pos, 3 * m->nbody);
  c.array("body_quat", &ours.body_quat[0][0], m->body_quat, 4 * m->nbody);
  c.array("body_ipos", &ours.body_ipos[0][0], m->body_ipos, 3 * m->nbody);
  c.array("body_iquat", &ours.body_iquat[0][0], m->body_iquat, 4 * m->nbody);
  c.array("body_mass", ours.body_mass, m->body_mass, m->nbody);
  c.array("body_inertia", &ours.body_inertia[0][0], m->body_inertia, 3 * m->nbody);
  c.array("body_invweight0", &ours.body_invweight0[0][0], m->body_invweight0, 2 * m->nbody);
  c.bytes("body_sameframe", ours.body_sameframe, m->body_sameframe, m->nbody);
  c.array("body_subtreemass", ours.body_subtreemass, m->body_subtreemass, m->nbody);
  // joints
  c.ints("jnt_type", ours.jnt_type, m->jnt_type, m->njnt);
  c.ints("jnt_qposadr", ours.jnt_qposadr, m->jnt_qposadr, m->njnt);
  c.ints("jnt_dofadr", ours.jnt_dofadr, m->jnt_dofadr, m->njnt);
  c.ints("jnt_bodyid", ours.jnt_bodyid, m->jnt_bodyid, m->njnt);
  c.bytes("jnt_limited", ours.jnt_limited, m->jnt_limited, m->njnt);
  c.ints("jnt_actuatorid", ours.jnt_actuatorid, m->jnt_actuatorid, m->njnt);
  c.array("jnt_pos", &ours.jnt_pos[0][0], m->jnt_pos, 3 * m->njnt);
  c.array("jnt_axis", &ours.jnt_axis[0][0], m->jnt_axis, 3 * m->njnt);
  c.array("jnt_range", &ours.jnt_range[0][0], m->jnt_range, 2 * m->njnt);
  c.array("jnt_stiffness", ours.jnt_stiffness, m->jnt_stiffness, m->njnt);
  c.array("jnt_margin", ours.jnt_margin, m->jnt_margin, m->njnt);
  c.array("jnt_solref", &ours.jnt_solref[0][0], m->jnt_solref, mjNREF * m->njnt);
  c.array("jnt_solimp", &ours.jnt_solimp[0][0], m->jnt_solimp, mjNIMP * m->njnt);
  // dofs
  c.ints("dof_bodyid", ours.dof_bodyid, m->dof_bodyid, m->nv);
  c.ints("dof_jntid", ours.dof_jntid, m->dof_jntid, m->nv);
  c.ints("dof_parentid", ours.dof_parentid, m->dof_parentid, m->nv);
  c.ints("dof_simplenum", ours.dof_simplenum, m->dof_simplenum, m->nv);
  c.array("dof_M0", ours.dof_M0, m->dof_M0, m->nv);
  c.array("dof_armature", ours.dof_armature, m->dof_armature, m->nv);
  c.array("dof_damping", ours.dof_damping, m->dof_damping, m->nv);
  c.array("dof_invweight0", ours.dof_invweight0, m->dof_invweight0, m->nv);
  c.array("qpos0", ours.qpos0, m->qpos0, m->nq);
  c.array("qpos_spring", ours.qpos_spring, m->qpos_spring, m->nq);
  if constexpr (rlkernels::physics::dims_frictionloss<typename M::dims>) {
    c.array("dof_frictionloss", ours.dof_frictionloss, m->dof_frictionloss, m->nv);
    c.array("dof_solref", &ours.dof_solref[0][0], m->dof_solref, mjNREF * m->nv);
    c.array("dof_solimp", &ours.dof_solimp[0][0], m->dof_solimp, mjNIMP * m->nv);
  } else {
    for (int v = 0; v < m->nv; ++v) c.value("dof_frictionloss (a model without dims_frictionloss: must be 0)", v, 0.0, m->dof_frictionloss[v]);
  }
  // geoms
  c.ints("geom_type", ours.geom_type_, geom_ints(m->geom_type), ngeom);
  c.ints("geom_bodyid", ours.geom_bodyid, geom_ints(m->geom_bodyid), ngeom);
  c.ints("geom_contype", ours.geom_contype, geom_ints(m->geom_contype), ngeom);
  c.ints("geom_conaffinity", ours.geom_conaffinity, geom_ints(m->geom_conaffinity), ngeom);
  c.ints("geom_condim", ours.geom_condim, geom_ints(m->geom_condim), ngeom);
  c.ints("geom_priority", ours.geom_priority, geom_ints(m->geom_priority), ngeom);
  c.bytes("geom_sameframe", ours.geom_sameframe, geom_bytes(m->geom_sameframe), ngeom);
  c.array("geom_solmix", ours.geom_solmix, geoms(m->geom_solmix, 1), ngeom);
  c.array("geom_solref", &ours.geom_solref[0][0], geoms(m->geom_solref, mjNREF), mjNREF * ngeom);
  c.array("geom_solimp", &ours.geom_solimp[0][0], geoms(m->geom_solimp, mjNIMP), mjNIMP * ngeom);
  c.array("geom_margin", ours.geom_margin, geoms(m->geom_margin, 1), ngeom);
  c.array("geom_gap", ours.geom_gap, geoms(m->geom_gap, 1), ngeom);
  c.array("geom_friction", &ours.geom_friction[0][0], geoms(m->geom_friction, 3), 3 * ngeom);
  c.array("geom_size", &ours.geom_size[0][0], geoms(m->geom_size, 3), 3 * ngeom);
  c.array("geom_pos", &ours.geom_pos[0][0], geoms(m->geom_pos, 3), 3 * ngeom);
  c.array("geom_quat", &ours.geom_quat[0][0], geoms(m->geom_quat, 4), 4 * ngeom);
  // fixed tendons
  REQUIRE(M::ntendon == m->ntendon);
  REQUIRE(M::nwrap == m->nwrap);
  c.ints("tendon_adr", ours.tendon_adr, m->tendon_adr, m->ntendon);
  c.ints("tendon_num", ours.tendon_num, m->tendon_num, m->ntendon);
  c.ints("wrap_objid", ours.wrap_objid, m->wrap_objid, m->nwrap);
  c.array("wrap_prm", ours.wrap_prm, m->wrap_prm, m->nwrap);
  for (int w = 0; w < m->nwrap; ++w) c.value("wrap_type (joint)", w, mjWRAP_JOINT, m->wrap_type[w]);
  // sites
  REQUIRE(M::nsite == m->nsite);
  if constexpr (M::nsite > 0) {
    c.ints("site_bodyid", ours.site_bodyid, m->site_bodyid, m->nsite);
    c.bytes("site_sameframe", ours.site_sameframe, m->site_sameframe, m->nsite);
    c.array("site_pos", &ours.site_pos[0][0], m->site_pos, 3 * m->nsite);
    c.array("site_quat", &ours.site_quat[0][0], m->site_quat, 4 * m->nsite);
  }
  // actuators (motors on joints: gear[0], gainprm[0]; the generator refused anything else)
  for (int a = 0; a < m->nu; ++a) {
    c.value("actuator_trnid", a, ours.actuator_trnid[a], m->actuator_trnid[2 * a]);
    c.value("actuator_trntype (joint)", a, mjTRN_JOINT, m->actuator_trntype[a]);
    c.value("actuator_gaintype (fixed)", a, mjGAIN_FIXED, m->actuator_gaintype[a]);
    c.value(M::actuator_bias ? "actuator_biastype (none or affine)" : "actuator_biastype (none)", a,
            M::actuator_bias && m->actuator_biastype[a] == mjBIAS_AFFINE ? mjBIAS_AFFINE : mjBIAS_NONE, m->actuator_biastype[a]);
    c.value("actuator_dyntype (none)", a, mjDYN_NONE, m->actuator_dyntype[a]);
    c.value("actuator_ctrllimited", a, ours.actuator_ctrllimited[a], m->actuator_ctrllimited[a]);
    c.value("actuator_forcelimited", a, ours.actuator_forcelimited[a], m->actuator_forcelimited[a]);
    c.value("actuator_gear", a, ours.actuator_gear[a], m->actuator_gear[6 * a]);
    c.value("actuator_gainprm", a, ours.actuator_gainprm[a], m->actuator_gainprm[mjNGAIN * a]);
    if constexpr (M::actuator_bias)
      for (int k = 0; k < 3; ++k) c.value("actuator_biasprm", 3 * a + k, ours.actuator_biasprm[a][k], m->actuator_biasprm[mjNBIAS * a + k]);
    for (int k = 0; k < 2; ++k) {
      c.value("actuator_ctrlrange", 2 * a + k, ours.actuator_ctrlrange[a][k], m->actuator_ctrlrange[2 * a + k]);
      c.value("actuator_forcerange", 2 * a + k, ours.actuator_forcerange[a][k], m->actuator_forcerange[2 * a + k]);
    }
  }
  INFO(c.report.str());
  CHECK(c.mismatches == 0);

  // Slots: the pairs' slots are contiguous and add up to ncon; nefc covers 2 rows per limited joint
  // and the contact rows.
  int slots = 0, rows = 0, limited = 0;
  for (int p = 0; p < M::npair; ++p) {
    CHECK(ours.pair_conadr[p] == slots);
    CHECK(m->geom_type[kept[ours.pair_geom1[p]]] <= m->geom_type[kept[ours.pair_geom2[p]]]);
    slots += ours.pair_maxcon[p];
    const int g1 = kept[ours.pair_geom1[p]], g2 = kept[ours.pair_geom2[p]];
    const int condim = std::max(m->geom_condim[g1], m->geom_condim[g2]);
    rows += ours.pair_maxcon[p] * (condim == 1 ? 1 : 2 * (condim - 1));
  }
  for (int j = 0; j < m->njnt; ++j) limited += m->jnt_limited[j] ? 1 : 0;
  int friction = 0;
  for (int v = 0; v < m->nv; ++v) friction += m->dof_frictionloss[v] != 0 ? 1 : 0;
  // the capacities: every contact and row the pairs can make, or less (mjcf_to_header --max-contacts/--max-rows)
  CHECK(M::ncon <= slots);
  CHECK(M::nefc <= rows + 2 * limited + friction);
}

TEMPLATE_TEST_CASE("the candidate pairs cover every contact MuJoCo finds", "[mujoco][model]", hopper_case,
                   walker2d_case, half_cheetah_case, ant_case, humanoid_case, box_crawler_case, my_robot_case,
                   pusher_case, friction_quad_case) {
  const auto mj = load_mj_model(model_file(TestType::xml));
  const mjModel* m = mj.get();
  auto d_ptr = make_mj_data(m);
  mjData* d = d_ptr.get();
  constexpr auto ours = TestType::template lean_model<double>();  // the generated function is constexpr
  using M = std::remove_const_t<decltype(ours)>;
  INFO(TestType::name);

  std::set<std::pair<int, int>> candidates;
  for (int p = 0; p < M::npair; ++p) candidates.insert({ours.pair_geom1[p], ours.pair_geom2[p]});

  // Random controls from strongly perturbed resets (qpos +- 0.5, qvel +- 5), 300 steps each, so
  // that the bodies tumble and the self-contacts (Hopper's torso, thigh and foot) occur too.
  test_rng rng(17);
  std::set<std::pair<int, int>> seen;
  int contacts = 0, unknown = 0;
  for (int episode = 0; episode < 200; ++episode) {
    mj_resetData(m, d);
    for (int i = 0; i < m->nq; ++i) d->qpos[i] += rng.uniform(-0.5, 0.5);
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = rng.uniform(-5.0, 5.0);
    if (m->jnt_type[0] == mjJNT_FREE) {
      // a free-floating robot: any orientation, low over the floor, so that every body lands on it
      d->qpos[2] = rng.uniform(0.0, 0.6);
      for (int k = 3; k < 7; ++k) d->qpos[k] = rng.uniform(-1.0, 1.0);
    }
    for (int t = 0; t < 300; ++t) {
      for (int a = 0; a < m->nu; ++a) d->ctrl[a] = rng.uniform(-1.0, 1.0);
      mj_step(m, d);
      std::map<std::pair<int, int>, int> per_pair;
      for (int c = 0; c < d->ncon; ++c) {
        const std::pair<int, int> key{d->contact[c].geom[0], d->contact[c].geom[1]};
        seen.insert(key);
        ++contacts;
        ++per_pair[key];
        if (!candidates.count(key)) ++unknown;
      }
      for (const auto& [key, n] : per_pair) {
        for (int p = 0; p < M::npair; ++p) {
          if (ours.pair_geom1[p] == key.first && ours.pair_geom2[p] == key.second) CHECK(n <= ours.pair_maxcon[p]);
        }
      }
    }
  }
  WARN(TestType::name << ": " << contacts << " contacts, " << seen.size() << " of " << M::npair
                      << " candidate pairs seen in contact");
  CHECK(contacts > 0);
  CHECK(unknown == 0);
  // Every candidate is a pair MuJoCo really collides (none is there by mistake).
  if (TestType::all_pairs_reachable) CHECK(int(seen.size()) == M::npair);
}
