// rlkernels/physics/collision.hpp
// Narrow-phase collision over the model's fixed list of candidate pairs: MuJoCo's mj_collision for
// planes, spheres, capsules, boxes and cylinders on planes (its primitive colliders), capsule- and
// cylinder-cylinder pairs (its general convex collider, collision_convex.hpp), with its
// margin/gap rules, contact-parameter mixing and contact frames; one env per thread, no allocation.
#pragma once

#include "../core/config.hpp"
#include "collision_convex.hpp"
#include "data.hpp"
#include "math.hpp"
#include "model.hpp"

namespace rlkernels {
namespace physics {
namespace detail {

/// What a primitive collider returns per contact (MuJoCo's mjPreContact): the frame is completed
/// later from the normal and an optional first tangent.
template <class S>
struct pre_contact {
  S dist;
  S pos[3];
  S normal[3];
  S tangent[3];
};

/// The most contacts one candidate pair makes (plane-box: 4 corners, see collide_plane_box; a
/// convex pair: 1 + 4 from multiCCD, see collide_convex).
constexpr int max_contacts_plane_box = 4;
constexpr int max_contacts_per_pair = 5;

/// z axis (third column) of a row-major rotation matrix.
template <class S> RLK_INLINE void mat_zaxis(S* r, const S* mat) { r[0] = mat[2]; r[1] = mat[5]; r[2] = mat[8]; }

/// Plane (pos1, mat1: normal = z axis) against a sphere of radius r2 at pos2. At most 1 contact.
template <class S>
RLK_INLINE int collide_plane_sphere_raw(pre_contact<S>* con, S margin, const S* pos1, const S* mat1,
                                        const S* pos2, S r2) {
  mat_zaxis(con->normal, mat1);
  S rel[3];
  sub3(rel, pos2, pos1);
  const S center_dist = dot3(rel, con->normal);
  if (center_dist > margin + r2) return 0;
  con->dist = center_dist - r2;
  // the midpoint between the plane and the sphere's deepest point
  S shift[3];
  scale3(shift, con->normal, -con->dist / S(2) - r2);
  add3(con->pos, pos2, shift);
  con->tangent[0] = con->tangent[1] = con->tangent[2] = S(0);
  return 1;
}

/// Sphere (pos1, r1) against sphere (pos2, r2); mat1/mat2 give the normal when the centres
/// coincide (the cross product of their z axes, as MuJoCo). At most 1 contact.
template <class S>
RLK_INLINE int collide_sphere_sphere_raw(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, S r1,
                                         const S* pos2, const S* mat2, S r2) {
  S dif[3];
  sub3(dif, pos1, pos2);
  const S dist_sqr = dot3(dif, dif);
  const S reach = margin + r1 + r2;
  if (dist_sqr > reach * reach) return 0;
  con->dist = std::sqrt(dist_sqr) - r1 - r2;
  sub3(con->normal, pos2, pos1);
  const S len = normalize3(con->normal);
  if (len < min_value<S>()) {
    S z1[3], z2[3];
    mat_zaxis(z1, mat1);
    mat_zaxis(z2, mat2);
    cross3(con->normal, z1, z2);
    normalize3(con->normal);
  }
  scale3(con->pos, con->normal, r1 + con->dist / S(2));
  con->pos[0] += pos1[0]; con->pos[1] += pos1[1]; con->pos[2] += pos1[2];
  con->tangent[0] = con->tangent[1] = con->tangent[2] = S(0);
  return 1;
}

template <class S> RLK_INLINE S clip(S x, S lo, S hi) { return x < lo ? lo : (x > hi ? hi : x); }

/// Plane against a capsule (radius size2[0], half length size2[1] along its z axis): the two end
/// spheres, each contact's first tangent along the capsule axis. At most 2 contacts.
template <class S>
RLK_INLINE int collide_plane_capsule(pre_contact<S>* con, S margin, const S* pos1, const S* mat1,
                                     const S* pos2, const S* mat2, const S* size2) {
  S axis[3];
  mat_zaxis(axis, mat2);
  S segment[3];
  scale3(segment, axis, size2[1]);
  S end[3];
  add3(end, pos2, segment);
  const int n1 = collide_plane_sphere_raw(con, margin, pos1, mat1, end, size2[0]);
  sub3(end, pos2, segment);
  const int n2 = collide_plane_sphere_raw(con + n1, margin, pos1, mat1, end, size2[0]);
  if (n1) copy3(con[0].tangent, axis);
  if (n2) copy3(con[n1].tangent, axis);
  return n1 + n2;
}

/// Plane against a box (half sizes size2): MuJoCo's mjc_PlaneBox. The corners are visited in
/// MuJoCo's order (corner i has +size on axis k when bit k of i is set); a corner counts when it is
/// within the margin of the plane and on the plane's side of the box centre (its offset from the
/// centre points into the plane); the contact sits halfway between the corner and the plane. The
/// first 4 such corners are kept, as MuJoCo keeps them.
template <class S>
RLK_INLINE int collide_plane_box(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, const S* pos2,
                                 const S* mat2, const S* size2) {
  S normal[3];
  mat_zaxis(normal, mat1);
  S dif[3];
  sub3(dif, pos2, pos1);
  const S dist = dot3(dif, normal);
  int n = 0;
  for (int i = 0; i < 8; ++i) {
    const S local[3] = {(i & 1) ? size2[0] : -size2[0], (i & 2) ? size2[1] : -size2[1],
                        (i & 4) ? size2[2] : -size2[2]};
    S corner[3];
    mul_mat_vec3(corner, mat2, local);
    const S ldist = dot3(normal, corner);
    if (dist + ldist > margin || ldist > S(0)) continue;
    pre_contact<S>& c = con[n];
    c.dist = dist + ldist;
    copy3(c.normal, normal);
    S shift[3];
    scale3(shift, normal, -c.dist / S(2));
    corner[0] += pos2[0]; corner[1] += pos2[1]; corner[2] += pos2[2];
    add3(c.pos, corner, shift);
    c.tangent[0] = c.tangent[1] = c.tangent[2] = S(0);
    if (++n == max_contacts_plane_box) break;
  }
  return n;
}

/// Plane against a cylinder (radius size2[0], half height size2[1]): MuJoCo's mjc_PlaneCylinder.
/// The rim point nearest the plane on the end nearer the plane, then (if within the margin) the
/// same point on the other end, then two more rim points 120 degrees either side on the near end.
/// At most 4 contacts.
template <class S>
RLK_HOST_DEVICE int collide_plane_cylinder(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, const S* pos2,
                                      const S* mat2, const S* size2) {
  S normal[3], axis[3];
  mat_zaxis(normal, mat1);
  mat_zaxis(axis, mat2);
  S prjaxis = dot3(normal, axis);
  if (prjaxis > S(0)) {  // the axis points towards the plane
    scale3(axis, axis, S(-1));
    prjaxis = -prjaxis;
  }
  S vec[3];
  sub3(vec, pos2, pos1);
  const S dist0 = dot3(vec, normal);
  // the component of -normal across the axis, scaled to the radius
  scale3(vec, axis, prjaxis);
  vec[0] -= normal[0];
  vec[1] -= normal[1];
  vec[2] -= normal[2];
  const S len_sqr = dot3(vec, vec);
  if (len_sqr >= min_value<S>() * min_value<S>()) {
    const S scl = size2[0] / std::sqrt(len_sqr);
    vec[0] *= scl;
    vec[1] *= scl;
    vec[2] *= scl;
  } else {  // the disc is parallel to the plane: the cylinder's x axis
    vec[0] = mat2[0] * size2[0];
    vec[1] = mat2[3] * size2[0];
    vec[2] = mat2[6] * size2[0];
  }
  const S prjvec = dot3(vec, normal);
  scale3(axis, axis, size2[1]);
  prjaxis *= size2[1];
  auto finish = [&](pre_contact<S>& c) {
    add_scaled3(c.pos, normal, -c.dist * S(0.5));
    copy3(c.normal, normal);
    c.tangent[0] = c.tangent[1] = c.tangent[2] = S(0);
  };
  int cnt = 0;
  if (dist0 + prjaxis + prjvec <= margin) {
    pre_contact<S>& c = con[cnt++];
    c.dist = dist0 + prjaxis + prjvec;
    add3(c.pos, pos2, vec);
    c.pos[0] += axis[0]; c.pos[1] += axis[1]; c.pos[2] += axis[2];
    finish(c);
  } else {
    return 0;
  }
  if (dist0 - prjaxis + prjvec <= margin) {
    pre_contact<S>& c = con[cnt++];
    c.dist = dist0 - prjaxis + prjvec;
    add3(c.pos, pos2, vec);
    c.pos[0] -= axis[0]; c.pos[1] -= axis[1]; c.pos[2] -= axis[2];
    finish(c);
  }
  const S prjvec1 = -prjvec * S(0.5);
  if (dist0 + prjaxis + prjvec1 <= margin) {
    S vec1[3];
    cross3(vec1, vec, axis);
    normalize3(vec1);
    scale3(vec1, vec1, size2[0] * std::sqrt(S(3)) / S(2));
    for (int side = 0; side < 2; ++side) {
      pre_contact<S>& c = con[cnt++];
      c.dist = dist0 + prjaxis + prjvec1;
      if (side == 0) add3(c.pos, pos2, vec1); else sub3(c.pos, pos2, vec1);
      c.pos[0] += axis[0]; c.pos[1] += axis[1]; c.pos[2] += axis[2];
      add_scaled3(c.pos, vec, S(-0.5));
      finish(c);
    }
  }
  return cnt;
}

/// Sphere against a capsule: the sphere against the nearest point of the capsule's segment.
template <class S>
RLK_INLINE int collide_sphere_capsule(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, S r1,
                                      const S* pos2, const S* mat2, const S* size2) {
  S axis[3];
  mat_zaxis(axis, mat2);
  S rel[3];
  sub3(rel, pos1, pos2);
  const S t = clip(dot3(axis, rel), -size2[1], size2[1]);
  S nearest[3];
  scale3(nearest, axis, t);
  nearest[0] += pos2[0]; nearest[1] += pos2[1]; nearest[2] += pos2[2];
  return collide_sphere_sphere_raw(con, margin, pos1, mat1, r1, nearest, mat2, size2[0]);
}

/// Sphere (pos1, r1) against a cylinder (radius size2[0], half height size2[1]): MuJoCo's
/// mjc_SphereCylinder. Beside the cylinder, the sphere against the nearest point of the axis
/// (with the cylinder's radius); over a cap, the sphere against the cap's plane (normal flipped to
/// point from the sphere to the cylinder); otherwise against the nearest rim point. A centre
/// inside takes the nearer of the side and the cap. At most 1 contact.
template <class S>
RLK_HOST_DEVICE int collide_sphere_cylinder(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, S r1,
                                       const S* pos2, const S* mat2, const S* size2) {
  const S radius = size2[0], height = size2[1];
  S axis[3];
  mat_zaxis(axis, mat2);
  S vec[3];
  sub3(vec, pos1, pos2);
  const S x = dot3(axis, vec);
  S a_proj[3], p_proj[3];
  scale3(a_proj, axis, x);
  sub3(p_proj, vec, a_proj);
  const S p_proj_sqr = dot3(p_proj, p_proj);
  bool side = std::fabs(x) < height;
  bool cap = p_proj_sqr < radius * radius;
  if (side && cap) {  // the centre inside: the nearer surface
    const S dist_cap = height - std::fabs(x);
    const S dist_radius = radius - std::sqrt(p_proj_sqr);
    if (dist_cap < dist_radius) {
      side = false;
    } else {
      cap = false;
    }
  }
  if (side) {
    a_proj[0] += pos2[0]; a_proj[1] += pos2[1]; a_proj[2] += pos2[2];
    return collide_sphere_sphere_raw(con, margin, pos1, mat1, r1, a_proj, mat2, radius);
  }
  if (cap) {
    const S flip[9] = {-mat2[0], mat2[1], -mat2[2], -mat2[3], mat2[4], -mat2[5], -mat2[6], mat2[7], -mat2[8]};
    S pos_cap[3];
    const S* mat_cap = mat2;
    if (x > S(0)) {
      for (int k = 0; k < 3; ++k) pos_cap[k] = pos2[k] + axis[k] * height;
    } else {
      for (int k = 0; k < 3; ++k) pos_cap[k] = pos2[k] + axis[k] * -height;
      mat_cap = flip;
    }
    const int n = collide_plane_sphere_raw(con, margin, pos_cap, mat_cap, pos1, r1);
    if (n) scale3(con->normal, con->normal, S(-1));
    return n;
  }
  // the rim: the sphere against a point
  scale3(p_proj, p_proj, size2[0] / std::sqrt(p_proj_sqr));
  scale3(vec, axis, x > S(0) ? height : -height);
  vec[0] += p_proj[0]; vec[1] += p_proj[1]; vec[2] += p_proj[2];
  vec[0] += pos2[0]; vec[1] += pos2[1]; vec[2] += pos2[2];
  return collide_sphere_sphere_raw(con, margin, pos1, mat1, r1, vec, mat2, S(0));
}

/// Point pos + axis*t (axis already scaled by the half length).
template <class S> RLK_INLINE void segment_point(S* r, const S* pos, const S* axis, S t) {
  scale3(r, axis, t);
  r[0] += pos[0]; r[1] += pos[1]; r[2] += pos[2];
}

/// Capsule against capsule by the closest points of their segments (MuJoCo's parametrisation:
/// points pos + t*half_axis, t in [-1, 1]); nearly parallel axes: up to 2 contacts from the end
/// points, tried in MuJoCo's order.
template <class S>
RLK_INLINE int collide_capsule_capsule(pre_contact<S>* con, S margin, const S* pos1, const S* mat1, const S* size1,
                                       const S* pos2, const S* mat2, const S* size2) {
  S a1[3] = {mat1[2] * size1[1], mat1[5] * size1[1], mat1[8] * size1[1]};
  S a2[3] = {mat2[2] * size2[1], mat2[5] * size2[1], mat2[8] * size2[1]};
  S dif[3];
  sub3(dif, pos1, pos2);
  // normal equations of min |pos1 + x1 a1 - pos2 - x2 a2|^2
  const S ma = dot3(a1, a1);
  const S mb = -dot3(a1, a2);
  const S mc = dot3(a2, a2);
  const S u = -dot3(a1, dif);
  const S v = dot3(a2, dif);
  const S det = ma * mc - mb * mb;
  S p1[3], p2[3];
  if (std::fabs(det) >= min_value<S>()) {
    S x1 = (mc * u - mb * v) / det;
    S x2 = (ma * v - mb * u) / det;
    if (x1 > S(1)) {
      x1 = S(1);
      x2 = (v - mb) / mc;
    } else if (x1 < S(-1)) {
      x1 = S(-1);
      x2 = (v + mb) / mc;
    }
    if (x2 > S(1)) {
      x2 = S(1);
      x1 = clip((u - mb) / ma, S(-1), S(1));
    } else if (x2 < S(-1)) {
      x2 = S(-1);
      x1 = clip((u + mb) / ma, S(-1), S(1));
    }
    segment_point(p1, pos1, a1, x1);
    segment_point(p2, pos2, a2, x2);
    return collide_sphere_sphere_raw(con, margin, p1, mat1, size1[0], p2, mat2, size2[0]);
  }
  // parallel: the ends of segment 1 against segment 2, then (if fewer than 2) the ends of segment 2
  add3(p1, pos1, a1);
  segment_point(p2, pos2, a2, clip((v - mb) / mc, S(-1), S(1)));
  int n = collide_sphere_sphere_raw(con, margin, p1, mat1, size1[0], p2, mat2, size2[0]);
  sub3(p1, pos1, a1);
  segment_point(p2, pos2, a2, clip((v + mb) / mc, S(-1), S(1)));
  n += collide_sphere_sphere_raw(con + n, margin, p1, mat1, size1[0], p2, mat2, size2[0]);
  if (n >= 2) return n;
  add3(p2, pos2, a2);
  segment_point(p1, pos1, a1, clip((u - mb) / ma, S(-1), S(1)));
  n += collide_sphere_sphere_raw(con + n, margin, p1, mat1, size1[0], p2, mat2, size2[0]);
  if (n >= 2) return n;
  sub3(p2, pos2, a2);
  segment_point(p1, pos1, a1, clip((u + mb) / ma, S(-1), S(1)));
  n += collide_sphere_sphere_raw(con + n, margin, p1, mat1, size1[0], p2, mat2, size2[0]);
  return n;
}

/// Completes a contact frame from its normal (row 0) and optional tangent (row 1), as MuJoCo's
/// mju_makeFrame: an unset tangent becomes (0,1,0), or (0,0,1) when the normal is close to y.
template <class S> RLK_INLINE void make_contact_frame(S* frame) {
  normalize3(frame);
  S* t1 = frame + 3;
  if (dot3(t1, t1) < S(0.25)) {
    t1[0] = t1[1] = t1[2] = S(0);
    if (frame[1] < S(0.5) && frame[1] > S(-0.5)) {
      t1[1] = S(1);
    } else {
      t1[2] = S(1);
    }
  }
  S proj[3];
  scale3(proj, frame, dot3(frame, t1));
  t1[0] -= proj[0]; t1[1] -= proj[1]; t1[2] -= proj[2];
  normalize3(t1);
  cross3(frame + 6, frame, t1);
}

/// A capsule or cylinder against a cylinder: MuJoCo's mjc_Convex with its native GJK/EPA
/// (ccd_penetration) and multiCCD: after a first contact, four more passes with geom 1 turned by
/// +-1e-3 rad about each tangent of the first contact's frame (about the contact point) and geom 2
/// turned back; a new point farther than 1e-3 times the smaller bounding radius from all kept ones
/// is added with the first one's depth. At most 5 contacts; N: the iterations (ccd_iterations).
template <class S, int N>
RLK_HOST_DEVICE int collide_convex(pre_contact<S>* con, S margin, S tolerance, int type1, const S* pos1, const S* mat1,
                                   const S* size1, S rbound1, int type2, const S* pos2, const S* mat2, const S* size2,
                                   S rbound2) {
  ccd_object<S> o1, o2;
  ccd_init_object(o1, type1, size1, pos1, mat1, margin);
  ccd_init_object(o2, type2, size2, pos2, mat2, margin);
  int ncon = ccd_penetration<S, N>(con, o1, o2, margin, N, tolerance);
  if (ncon != 1) return ncon;
  S frame[9] = {con[0].normal[0], con[0].normal[1], con[0].normal[2], S(0), S(0), S(0), S(0), S(0), S(0)};
  make_contact_frame(frame);
  const S distinct_tol = S(1e-3) * (rbound1 < rbound2 ? rbound1 : rbound2);
  const S angles[2] = {S(-1e-3), S(1e-3)};
  for (int axis_id = 0; axis_id < 2; ++axis_id) {
    for (int angle_id = 0; angle_id < 2; ++angle_id) {
      S quat[4], rot[9], invrot[9];
      axis_angle_to_quat(quat, frame + 3 + 3 * axis_id, angles[angle_id]);
      quat_to_mat(rot, quat);
      ccd_rotate_frame(con[0].pos, rot, o1.mat, o1.pos);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) invrot[3 * i + j] = rot[3 * j + i];
      ccd_rotate_frame(con[0].pos, invrot, o2.mat, o2.pos);
      const int n = ccd_penetration<S, N>(con + ncon, o1, o2, margin, N, tolerance);
      if (n) {
        bool distinct = true;
        for (int i = 0; i < ncon; ++i) {
          S dif[3];
          sub3(dif, con[i].pos, con[ncon].pos);
          if (std::sqrt(dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2]) <= distinct_tol) distinct = false;
        }
        if (distinct) {
          con[ncon].dist = con[0].dist;
          ++ncon;
        }
      }
      copy3(o1.pos, pos1);
      copy3(o2.pos, pos2);
      for (int i = 0; i < 9; ++i) {
        o1.mat[i] = mat1[i];
        o2.mat[i] = mat2[i];
      }
    }
  }
  return ncon;
}

/// The solmix weight of geom1 against geom2 (mj_contactParam's mix).
template <class Scalar, class Dims>
RLK_INLINE Scalar solmix_weight(const model<Scalar, Dims>& m, int g1, int g2) {
  const Scalar s1 = m.geom_solmix[g1], s2 = m.geom_solmix[g2];
  const Scalar tiny = min_value<Scalar>();
  if (s1 >= tiny && s2 >= tiny) return s1 / (s1 + s2);
  if (s1 < tiny && s2 < tiny) return Scalar(0.5);
  return s1 < tiny ? Scalar(0) : Scalar(1);
}

/// The mixed condim and friction of two geoms (MuJoCo's mj_contactParam without pairs or flexes;
/// adhesion is not supported: the generator refuses it). The mixed solref and solimp come from
/// contact_solver_params.
template <class Scalar, class Dims>
RLK_INLINE void contact_params(const model<Scalar, Dims>& m, int g1, int g2, contact<Scalar>& c) {
  Scalar fri[3];
  const int p1 = m.geom_priority[g1], p2 = m.geom_priority[g2];
  if (p1 != p2) {
    const int g = p1 > p2 ? g1 : g2;
    c.dim = m.geom_condim[g];
    for (int i = 0; i < 3; ++i) fri[i] = m.geom_friction[g][i];
  } else {
    c.dim = m.geom_condim[g1] > m.geom_condim[g2] ? m.geom_condim[g1] : m.geom_condim[g2];
    for (int i = 0; i < 3; ++i) {
      const Scalar f1 = m.geom_friction[g1][i], f2 = m.geom_friction[g2][i];
      fri[i] = f1 > f2 ? f1 : f2;
    }
  }
  // 5-D friction (tangent, tangent, spin, roll, roll), each at least MuJoCo's mjMINMU
  const Scalar f5[5] = {fri[0], fri[0], fri[1], fri[2], fri[2]};
  for (int i = 0; i < 5; ++i) c.friction[i] = f5[i] > Scalar(1e-5) ? f5[i] : Scalar(1e-5);
}

/// The mixed solref and solimp of a contact between geoms g1 and g2 (mj_contactParam: the geom of
/// higher priority, else the solmix-weighted mean; direct (negative) references take the smaller).
/// Computed where make_constraint needs them, not stored in the contact (data::con_solref and
/// con_solimp keep a copy with dims_with_efc_terms).
template <class Scalar, class Dims>
RLK_INLINE void contact_solver_params(const model<Scalar, Dims>& m, int g1, int g2, Scalar* solref, Scalar* solimp) {
  const int p1 = m.geom_priority[g1], p2 = m.geom_priority[g2];
  if (p1 != p2) {
    const int g = p1 > p2 ? g1 : g2;
    for (int i = 0; i < 2; ++i) solref[i] = m.geom_solref[g][i];
    for (int i = 0; i < 5; ++i) solimp[i] = m.geom_solimp[g][i];
    return;
  }
  const Scalar mix = solmix_weight(m, g1, g2);
  const Scalar* r1 = m.geom_solref[g1];
  const Scalar* r2 = m.geom_solref[g2];
  if (r1[0] > Scalar(0) && r2[0] > Scalar(0)) {
    for (int i = 0; i < 2; ++i) solref[i] = mix * r1[i] + (Scalar(1) - mix) * r2[i];
  } else {  // direct (negative) references: the smaller
    for (int i = 0; i < 2; ++i) solref[i] = r1[i] < r2[i] ? r1[i] : r2[i];
  }
  for (int i = 0; i < 5; ++i) solimp[i] = mix * m.geom_solimp[g1][i] + (Scalar(1) - mix) * m.geom_solimp[g2][i];
}

/// Radius of a sphere about the geom's centre that holds it (MuJoCo's geom_rbound), for the
/// non-plane types.
template <class Scalar, class Dims>
RLK_INLINE Scalar bounding_radius(const model<Scalar, Dims>& m, int g) {
  const Scalar* s = m.geom_size[g];
  switch (m.geom_type_[g]) {
    case geom_type::sphere: return s[0];
    case geom_type::capsule: return s[0] + s[1];
    case geom_type::cylinder: return std::sqrt(s[0] * s[0] + s[1] * s[1]);
    case geom_type::box: return std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    default: return max_value<Scalar>();  // (planes are never tested this way)
  }
}

/// True when two non-plane geoms are so far apart that no collider can find a contact within
/// reach (= margin + gap): their bounding spheres, grown by reach and by 1% (so that rounding in
/// the colliders can never make a pair this test skipped touch), do not meet. Only saves time:
/// every pair it lets through still goes through its collider, which decides as MuJoCo's does.
template <class Scalar, class Dims>
RLK_INLINE bool bounding_spheres_apart(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, int g1, int g2,
                                       Scalar reach) {
  const Scalar bound = (bounding_radius(m, g1) + bounding_radius(m, g2) + reach) * Scalar(1.01);
  Scalar dif[3];
  sub3(dif, d.geom_xpos[g1], d.geom_xpos[g2]);
  return dot3(dif, dif) > bound * bound;
}

/// Runs the collider for geom types t1 <= t2; returns the number of pre-contacts
/// (<= max_contacts_per_pair).
template <class Scalar, class Dims>
RLK_INLINE int narrow_phase(const model<Scalar, Dims>& m, const data<Scalar, Dims>& d, int g1, int g2,
                            Scalar margin, pre_contact<Scalar>* pc) {
  const geom_type t1 = m.geom_type_[g1], t2 = m.geom_type_[g2];
  const Scalar* pos1 = d.geom_xpos[g1];
  const Scalar* mat1 = d.geom_xmat[g1];
  const Scalar* pos2 = d.geom_xpos[g2];
  const Scalar* mat2 = d.geom_xmat[g2];
  if (t1 == geom_type::plane) {
    if (t2 == geom_type::sphere) return collide_plane_sphere_raw(pc, margin, pos1, mat1, pos2, m.geom_size[g2][0]);
    if (t2 == geom_type::capsule) return collide_plane_capsule(pc, margin, pos1, mat1, pos2, mat2, m.geom_size[g2]);
    if (t2 == geom_type::box) return collide_plane_box(pc, margin, pos1, mat1, pos2, mat2, m.geom_size[g2]);
    if (t2 == geom_type::cylinder) return collide_plane_cylinder(pc, margin, pos1, mat1, pos2, mat2, m.geom_size[g2]);
    return 0;  // plane-plane: MuJoCo has no collider
  }
  if (t1 == geom_type::sphere) {
    if (t2 == geom_type::sphere)
      return collide_sphere_sphere_raw(pc, margin, pos1, mat1, m.geom_size[g1][0], pos2, mat2, m.geom_size[g2][0]);
    if (t2 == geom_type::capsule)
      return collide_sphere_capsule(pc, margin, pos1, mat1, m.geom_size[g1][0], pos2, mat2, m.geom_size[g2]);
    if (t2 == geom_type::cylinder)
      return collide_sphere_cylinder(pc, margin, pos1, mat1, m.geom_size[g1][0], pos2, mat2, m.geom_size[g2]);
    return 0;
  }
  if (t1 == geom_type::capsule && t2 == geom_type::capsule)
    return collide_capsule_capsule(pc, margin, pos1, mat1, m.geom_size[g1], pos2, mat2, m.geom_size[g2]);
  if constexpr (dims_ccd_iterations<Dims> > 0) {
    if ((t1 == geom_type::capsule || t1 == geom_type::cylinder) && t2 == geom_type::cylinder)
      return collide_convex<Scalar, dims_ccd_iterations<Dims>>(
          pc, margin, m.ccd_tolerance, static_cast<int>(t1), pos1, mat1, m.geom_size[g1], bounding_radius(m, g1),
          static_cast<int>(t2), pos2, mat2, m.geom_size[g2], bounding_radius(m, g2));
  }
  return 0;
}

}  // namespace detail

/// @brief Finds the contacts of the model's candidate pairs (d.ncon, d.con[]) from the geom frames
/// of the position stage (d.geom_xpos, d.geom_xmat), as MuJoCo's mj_collision: each pair is
/// tested with margin + gap (the sums over its two geoms), its contacts get includemargin = the
/// summed margin, exclude = (dist >= includemargin), the mixed parameters (priority, condim max,
/// friction max; the solmix-weighted solref/solimp only with dims_with_efc_terms, else
/// make_constraint mixes them) and MuJoCo's frame (normal from geom1 to geom2,
/// then the tangents). Contacts are packed in pair order (the model's pair order is MuJoCo's;
/// pair_maxcon/pair_conadr only size the slots); excluded ones are kept (as in mjData)
/// but make no constraint rows. Sets warning_contact_full if the slots would overflow.
template <class Scalar, class Dims>
RLK_HOST_DEVICE void collide(const model<Scalar, Dims>& m, data<Scalar, Dims>& d) {
  d.ncon = 0;
  if (m.disableflags & (disable_constraint | disable_contact)) return;
  for (int p = 0; p < Dims::npair; ++p) {
    int g1 = m.pair_geom1[p], g2 = m.pair_geom2[p];
    if (static_cast<int>(m.geom_type_[g1]) > static_cast<int>(m.geom_type_[g2])) {  // MuJoCo orders by type
      const int t = g1; g1 = g2; g2 = t;
    }
    const Scalar margin = m.geom_margin[g1] + m.geom_margin[g2];
    const Scalar gap = m.geom_gap[g1] + m.geom_gap[g2];
    if (m.geom_type_[g1] != geom_type::plane && detail::bounding_spheres_apart(m, d, g1, g2, margin + gap)) continue;
    detail::pre_contact<Scalar> pc[detail::max_contacts_per_pair];
    const int n = detail::narrow_phase(m, d, g1, g2, margin + gap, pc);
    if (n == 0) continue;
    if (d.ncon + n > Dims::ncon) {
      d.warning |= warning_contact_full;
      return;
    }
    for (int j = 0; j < n; ++j) {
      contact<Scalar>& c = d.con[d.ncon++];
      c.dist = pc[j].dist;
      detail::copy3(c.pos, pc[j].pos);
      detail::copy3(c.frame, pc[j].normal);
      detail::copy3(c.frame + 3, pc[j].tangent);
      c.frame[6] = c.frame[7] = c.frame[8] = Scalar(0);
      c.geom1 = g1;
      c.geom2 = g2;
      detail::contact_params(m, g1, g2, c);
      if constexpr (data<Scalar, Dims>::efc_terms)
        detail::contact_solver_params(m, g1, g2, d.con_solref[d.ncon - 1], d.con_solimp[d.ncon - 1]);
      c.includemargin = margin;
      c.exclude = c.dist >= margin ? 1 : 0;
      detail::make_contact_frame(c.frame);
      c.efc_address = -1;
      c.mu = Scalar(0);
    }
  }
}

}  // namespace physics
}  // namespace rlkernels
