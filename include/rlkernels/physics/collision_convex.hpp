// rlkernels/physics/collision_convex.hpp
// MuJoCo 3.12's general convex collider for the pairs it sends there (mjc_Convex with its native
// GJK + EPA, "nativeccd", and multi-contact CCD): GJK's signed-volume distance subalgorithm
// (Montanari et al., ToG 2017), the intersection fallback, the initial polytopes from a 1-, 2-
// or 3-simplex, EPA with its horizon search, the capsule-as-segment shortcut for shallow contacts,
// and multiCCD's four extra passes with both geoms turned by +-1e-3 rad about the first contact's
// tangents. The algorithm, its branches and its order of floating-point operations are MuJoCo's,
// so that in double (built without FP contraction) the contacts are mj_collision's bit for bit
// (tests/physics/mujoco_constraint_test.cpp measures it from random poses). The shapes are the
// ones the engine has pairs for: capsules and cylinders (a capsule becomes its segment plus a
// radius, as in MuJoCo). No allocation: the EPA polytope lives on the stack, sized by the model's
// ccd_iterations at compile time (Dims::ccd_iterations).
#pragma once

#include "../core/config.hpp"
#include "math.hpp"

#include <cfloat>
#include <cmath>

namespace rlkernels {
namespace physics {
namespace detail {

/// The numerical limits of MuJoCo's engine_collision_gjk.c, in its double and single builds.
template <class S> struct ccd_limits;
template <> struct ccd_limits<double> {
  static constexpr double max_limit = DBL_MAX;     ///< mjMAX_LIMIT
  static constexpr double min_val = 1e-15;         ///< mjMINVAL
  static constexpr double min_val2 = 1e-15 * 1e-15;  ///< mjMINVAL2
  static constexpr double max_val2 = 1e10 * 1e10;  ///< mjMAXVAL2
  static constexpr double min_dist2 = 1e-15 * 1e-15;  ///< mjMINDIST2 (polytope2)
  static constexpr double min_dist3 = 1e-15 * 1e-15;  ///< mjMINDIST3 (polytope3)
  static constexpr double min_dist4 = 1e-15 * 1e-15;  ///< mjMINDIST4 (polytope4)
};
template <> struct ccd_limits<float> {
  static constexpr float max_limit = FLT_MAX;
  static constexpr float min_val = 1e-15f;
  static constexpr float min_val2 = 1e-15f * 1e-15f;
  static constexpr float max_val2 = 1e10f * 1e10f;
  static constexpr float min_dist2 = 1e-10f;
  static constexpr float min_dist3 = 1e-10f;
  static constexpr float min_dist4 = 1e-17f;
};

/// Support mappings of the convex shapes (mjCCDObj's support functions).
enum class ccd_shape : int { line, capsule, cylinder };

/// One shape in world coordinates (MuJoCo's mjCCDObj for a geom): the frame may be turned by
/// multiCCD, so it is a copy.
template <class S>
struct ccd_object {
  ccd_shape shape;
  int geom_type;  ///< mjtGeom number of the geom (capsule 3, cylinder 5)
  S size[3];
  S pos[3];
  S mat[9];
  S margin;  ///< margin + gap of the pair; the support point moves out by half of it
};

/// A vertex of the Minkowski difference and the two support points it came from.
template <class S>
struct ccd_vertex {
  S vert[3];
  S vert1[3];
  S vert2[3];
};

/// GJK/EPA state (mjCCDStatus for one witness pair).
template <class S>
struct ccd_status {
  int separated;
  S dist;
  S x1[3];
  S x2[3];
  int nx;
  int max_iterations;
  S tolerance;
  S dist_cutoff;
  int gjk_iterations;
  int epa_iterations;
  int epa_status;
  ccd_vertex<S> simplex[4];
  int nsimplex;
};

/// A face of the EPA polytope: its vertices (10 bits each), its neighbours across edges
/// (v1,v2), (v2,v3), (v3,v1), the origin's projection on it and the projection's squared norm;
/// index: its slot in the map, -1 outside it, -2 deleted.
template <class S>
struct ccd_face {
  int verts;
  short adj[3];
  short index;
  S v[3];
  S dist2;
};

/// The expanding polytope for at most N EPA iterations (MuJoCo's sizes: 5 + N vertices, 6 N
/// faces); the horizon arrays get 6 N entries (MuJoCo's 24 could overflow).
template <class S, int N>
struct ccd_polytope {
  ccd_vertex<S> verts[5 + N];
  int nverts;
  ccd_face<S> faces[6 * N];
  int nfaces;
  S center[3];
  short map[6 * N];
  int nmap;
  short horizon_indices[6 * N];
  signed char horizon_edges[6 * N];
  int nedges;
  const S* w;
};

// ------------------------------------------------------------------------------- support ----

template <class S> RLK_INLINE void ccd_local_to_global(S* res, const S* mat, const S* dir, const S* pos) {
  mul_mat_vec3(res, mat, dir);
  res[0] += pos[0];
  res[1] += pos[1];
  res[2] += pos[2];
}

/// The shape's support point in the unit direction dir (without the margin).
template <class S>
RLK_INLINE void ccd_shape_support(S* res, const ccd_object<S>& o, const S* dir) {
  const S* mat = o.mat;
  const S* pos = o.pos;
  if (o.shape == ccd_shape::line) {  // mjc_lineSupport
    const S dot = mat[2] * dir[0] + mat[5] * dir[1] + mat[8] * dir[2];
    const S scl = dot >= S(0) ? o.size[1] : -o.size[1];
    res[0] = mat[2] * scl + pos[0];
    res[1] = mat[5] * scl + pos[1];
    res[2] = mat[8] * scl + pos[2];
    return;
  }
  S local_dir[3], local_supp[3];
  mul_mat_t_vec3(local_dir, mat, dir);
  if (o.shape == ccd_shape::capsule) {  // mjc_capsuleSupport
    local_supp[0] = local_dir[0] * o.size[0];
    local_supp[1] = local_dir[1] * o.size[0];
    local_supp[2] = local_dir[2] * o.size[0];
    local_supp[2] += local_dir[2] >= S(0) ? o.size[1] : -o.size[1];
  } else {  // mjc_cylinderSupport
    const S n2 = local_dir[0] * local_dir[0] + local_dir[1] * local_dir[1];
    const S scl = n2 >= ccd_limits<S>::min_val2 ? o.size[0] / std::sqrt(n2) : S(0);
    local_supp[0] = scl * local_dir[0];
    local_supp[1] = scl * local_dir[1];
    local_supp[2] = local_dir[2] >= S(0) ? o.size[1] : -o.size[1];
  }
  ccd_local_to_global(res, mat, local_supp, pos);
}

/// Support point of the Minkowski difference in dir (obj1 in dir, obj2 in dir_neg), each moved
/// out by half its margin (MuJoCo's support()).
template <class S>
RLK_INLINE void ccd_support(ccd_vertex<S>& v, const ccd_object<S>& o1, const ccd_object<S>& o2, const S* dir,
                            const S* dir_neg) {
  ccd_shape_support(v.vert1, o1, dir);
  if (o1.margin > S(0)) {
    const S margin = S(0.5) * o1.margin;
    v.vert1[0] += dir[0] * margin;
    v.vert1[1] += dir[1] * margin;
    v.vert1[2] += dir[2] * margin;
  }
  ccd_shape_support(v.vert2, o2, dir_neg);
  if (o2.margin > S(0)) {
    const S margin = S(0.5) * o2.margin;
    v.vert2[0] += dir_neg[0] * margin;
    v.vert2[1] += dir_neg[1] * margin;
    v.vert2[2] += dir_neg[2] * margin;
  }
  sub3(v.vert, v.vert1, v.vert2);
}

template <class S>
RLK_INLINE void gjk_support(ccd_vertex<S>& v, const ccd_object<S>& o1, const ccd_object<S>& o2, const S* x_k,
                            S x_norm) {
  S dir[3], dir_neg[3];
  scale3(dir_neg, x_k, S(1) / x_norm);
  scale3(dir, dir_neg, S(-1));
  ccd_support(v, o1, o2, dir, dir_neg);
}

// ------------------------------------------------------------------- GJK subalgorithms ----

template <class S> RLK_INLINE S ccd_det3(const S* v1, const S* v2, const S* v3) {
  return v1[0] * (v2[1] * v3[2] - v2[2] * v3[1]) + v1[1] * (v2[2] * v3[0] - v2[0] * v3[2]) +
         v1[2] * (v2[0] * v3[1] - v2[1] * v3[0]);
}

/// res = coef[0] v1 + ... + coef[n-1] vn.
template <class S>
RLK_INLINE void ccd_lincomb(S* res, const S* coef, int n, const S* v1, const S* v2, const S* v3, const S* v4) {
  switch (n) {
    case 1:
      for (int i = 0; i < 3; ++i) res[i] = coef[0] * v1[i];
      break;
    case 2:
      for (int i = 0; i < 3; ++i) res[i] = coef[0] * v1[i] + coef[1] * v2[i];
      break;
    case 3:
      for (int i = 0; i < 3; ++i) res[i] = coef[0] * v1[i] + coef[1] * v2[i] + coef[2] * v3[i];
      break;
    case 4:
      for (int i = 0; i < 3; ++i) res[i] = coef[0] * v1[i] + coef[1] * v2[i] + coef[2] * v3[i] + coef[3] * v4[i];
      break;
    default:
      res[0] = res[1] = res[2] = S(0);
  }
}

/// The origin projected on the plane of v1, v2, v3; returns 1 when the plane is degenerate.
template <class S> RLK_INLINE int project_origin_plane(S* res, const S* v1, const S* v2, const S* v3) {
  S diff21[3], diff31[3], diff32[3], n[3];
  sub3(diff21, v2, v1);
  sub3(diff31, v3, v1);
  sub3(diff32, v3, v2);
  cross3(n, diff32, diff21);
  S nv = dot3(n, v2);
  S nn = dot3(n, n);
  if (nn == S(0)) return 1;
  if (nv != S(0) && nn > ccd_limits<S>::min_val) {
    scale3(res, n, nv / nn);
    return 0;
  }
  cross3(n, diff21, diff31);
  nv = dot3(n, v1);
  nn = dot3(n, n);
  if (nn == S(0)) return 1;
  if (nv != S(0) && nn > ccd_limits<S>::min_val) {
    scale3(res, n, nv / nn);
    return 0;
  }
  cross3(n, diff31, diff32);
  nv = dot3(n, v3);
  nn = dot3(n, n);
  scale3(res, n, nv / nn);
  return 0;
}

template <class S> RLK_INLINE void project_origin_line(S* res, const S* v1, const S* v2) {
  S diff[3];
  sub3(diff, v2, v1);
  const S scl = -(dot3(v2, diff) / dot3(diff, diff));
  res[0] = v2[0] + scl * diff[0];
  res[1] = v2[1] + scl * diff[1];
  res[2] = v2[2] + scl * diff[2];
}

template <class S> RLK_INLINE int same_sign2(S a, S b) {
  if (a > S(0) && b > S(0)) return 1;
  if (a < S(0) && b < S(0)) return -1;
  return 0;
}

template <class S> RLK_HOST_DEVICE void gjk_s1d(S* lambda, const S* s1, const S* s2) {
  S p_o[3];
  project_origin_line(p_o, s1, s2);
  S mu = s1[0] - s2[0];
  S mu_max = mu;
  int index = 0;
  mu = s1[1] - s2[1];
  if (std::fabs(mu) >= std::fabs(mu_max)) {
    mu_max = mu;
    index = 1;
  }
  mu = s1[2] - s2[2];
  if (std::fabs(mu) >= std::fabs(mu_max)) {
    mu_max = mu;
    index = 2;
  }
  const S c1 = p_o[index] - s2[index];
  const S c2 = s1[index] - p_o[index];
  const bool same = same_sign2(mu_max, c1) && same_sign2(mu_max, c2);
  lambda[0] = same ? c1 / mu_max : S(0);
  lambda[1] = same ? c2 / mu_max : S(1);
}

/// The 2x2 minors and the projection axes of S2D and triAffineCoord: drops the axis along which
/// the triangle's projection is largest; returns that minor, sets x and y to the kept axes.
template <class S> RLK_INLINE S triangle_axes(const S* s1, const S* s2, const S* s3, int& x, int& y) {
  const S m14 = s2[1] * s3[2] - s2[2] * s3[1] - s1[1] * s3[2] + s1[2] * s3[1] + s1[1] * s2[2] - s1[2] * s2[1];
  const S m24 = s2[0] * s3[2] - s2[2] * s3[0] - s1[0] * s3[2] + s1[2] * s3[0] + s1[0] * s2[2] - s1[2] * s2[0];
  const S m34 = s2[0] * s3[1] - s2[1] * s3[0] - s1[0] * s3[1] + s1[1] * s3[0] + s1[0] * s2[1] - s1[1] * s2[0];
  const S mu1 = std::fabs(m14), mu2 = std::fabs(m24), mu3 = std::fabs(m34);
  if (mu1 >= mu2 && mu1 >= mu3) {
    x = 1;
    y = 2;
    return m14;
  }
  if (mu2 >= mu3) {
    x = 0;
    y = 2;
    return m24;
  }
  x = 0;
  y = 1;
  return m34;
}

/// Signed areas (cofactors C31, C32, C33) of the point p with the triangle's edges, in the plane
/// of axes x, y.
template <class S>
RLK_INLINE void triangle_cofactors(S* c, const S* p, const S* v1, const S* v2, const S* v3, int x, int y) {
  c[0] = p[x] * v2[y] + p[y] * v3[x] + v2[x] * v3[y] - p[x] * v3[y] - p[y] * v2[x] - v3[x] * v2[y];
  c[1] = p[x] * v3[y] + p[y] * v1[x] + v3[x] * v1[y] - p[x] * v1[y] - p[y] * v3[x] - v1[x] * v3[y];
  c[2] = p[x] * v1[y] + p[y] * v2[x] + v1[x] * v2[y] - p[x] * v2[y] - p[y] * v1[x] - v2[x] * v1[y];
}

template <class S> RLK_HOST_DEVICE void gjk_s2d(S* lambda, const S* s1, const S* s2, const S* s3) {
  S p_o[3];
  if (project_origin_plane(p_o, s1, s2, s3)) {
    gjk_s1d(lambda, s1, s2);
    lambda[2] = S(0);
    return;
  }
  int x, y;
  const S m_max = triangle_axes(s1, s2, s3, x, y);
  S c[3];
  triangle_cofactors(c, p_o, s1, s2, s3, x, y);
  const int comp1 = same_sign2(m_max, c[0]), comp2 = same_sign2(m_max, c[1]), comp3 = same_sign2(m_max, c[2]);
  if (comp1 && comp2 && comp3) {
    lambda[0] = c[0] / m_max;
    lambda[1] = c[1] / m_max;
    lambda[2] = c[2] / m_max;
    return;
  }
  S dmin = ccd_limits<S>::max_limit;
  if (!comp1) {
    S l[2], xp[3];
    gjk_s1d(l, s2, s3);
    ccd_lincomb<S>(xp, l, 2, s2, s3, nullptr, nullptr);
    const S d = dot3(xp, xp);
    lambda[0] = S(0);
    lambda[1] = l[0];
    lambda[2] = l[1];
    dmin = d;
  }
  if (!comp2) {
    S l[2], xp[3];
    gjk_s1d(l, s1, s3);
    ccd_lincomb<S>(xp, l, 2, s1, s3, nullptr, nullptr);
    const S d = dot3(xp, xp);
    if (d < dmin) {
      lambda[0] = l[0];
      lambda[1] = S(0);
      lambda[2] = l[1];
      dmin = d;
    }
  }
  if (!comp3) {
    S l[2], xp[3];
    gjk_s1d(l, s1, s2);
    ccd_lincomb<S>(xp, l, 2, s1, s2, nullptr, nullptr);
    const S d = dot3(xp, xp);
    if (d < dmin) {
      lambda[0] = l[0];
      lambda[1] = l[1];
      lambda[2] = S(0);
    }
  }
}

template <class S> RLK_HOST_DEVICE void gjk_s3d(S* lambda, const S* s1, const S* s2, const S* s3, const S* s4) {
  const S c41 = -ccd_det3(s2, s3, s4);
  const S c42 = ccd_det3(s1, s3, s4);
  const S c43 = -ccd_det3(s1, s2, s4);
  const S c44 = ccd_det3(s1, s2, s3);
  const S m_det = c41 + c42 + c43 + c44;
  const int comp1 = same_sign2(m_det, c41), comp2 = same_sign2(m_det, c42), comp3 = same_sign2(m_det, c43),
            comp4 = same_sign2(m_det, c44);
  if (comp1 && comp2 && comp3 && comp4) {
    lambda[0] = c41 / m_det;
    lambda[1] = c42 / m_det;
    lambda[2] = c43 / m_det;
    lambda[3] = c44 / m_det;
    return;
  }
  S dmin = ccd_limits<S>::max_limit;
  // each face opposite a vertex whose sign differs: (the three kept vertices, the dropped slot)
  const S* faces[4][3] = {{s2, s3, s4}, {s1, s3, s4}, {s1, s2, s4}, {s1, s2, s3}};
  const int comps[4] = {comp1, comp2, comp3, comp4};
  for (int f = 0; f < 4; ++f) {
    if (comps[f]) continue;
    S l[3], xp[3];
    gjk_s2d(l, faces[f][0], faces[f][1], faces[f][2]);
    ccd_lincomb<S>(xp, l, 3, faces[f][0], faces[f][1], faces[f][2], nullptr);
    const S d = dot3(xp, xp);
    if (f == 0 || d < dmin) {  // (the first candidate is taken unconditionally, as in MuJoCo)
      int j = 0;
      for (int i = 0; i < 4; ++i) lambda[i] = i == f ? S(0) : l[j++];
      dmin = d;
    }
  }
}

/// Barycentric coordinates of the simplex point closest to the origin.
template <class S> RLK_INLINE void gjk_subdistance(S* lambda, int n, const ccd_vertex<S>* simplex) {
  lambda[0] = lambda[1] = lambda[2] = lambda[3] = S(0);
  switch (n) {
    case 4: gjk_s3d(lambda, simplex[0].vert, simplex[1].vert, simplex[2].vert, simplex[3].vert); break;
    case 3: gjk_s2d(lambda, simplex[0].vert, simplex[1].vert, simplex[2].vert); break;
    case 2: gjk_s1d(lambda, simplex[0].vert, simplex[1].vert); break;
    default: lambda[0] = S(1); break;
  }
}

// ------------------------------------------------------------------------------------ GJK ----

/// Signed distance of the origin to the plane of v1, v2, v3 (normal (v3-v1) x (v2-v1)).
template <class S>
RLK_INLINE S ccd_signed_distance(S* normal, const ccd_vertex<S>& v1, const ccd_vertex<S>& v2, const ccd_vertex<S>& v3) {
  S diff1[3], diff2[3];
  sub3(diff1, v3.vert, v1.vert);
  sub3(diff2, v2.vert, v1.vert);
  cross3(normal, diff1, diff2);
  const S norm2 = dot3(normal, normal);
  if (norm2 > ccd_limits<S>::min_val2 && norm2 < ccd_limits<S>::max_val2) {
    scale3(normal, normal, S(1) / std::sqrt(norm2));
    return dot3(normal, v1.vert);
  }
  return ccd_limits<S>::max_limit;
}

/// GJK's intersection test from a tetrahedron: 1 in contact, 0 not, -1 inconclusive.
template <class S>
RLK_HOST_DEVICE int gjk_intersect(ccd_status<S>& st, const ccd_object<S>& o1, const ccd_object<S>& o2) {
  ccd_vertex<S> simplex[4] = {st.simplex[0], st.simplex[1], st.simplex[2], st.simplex[3]};
  int s[4] = {0, 1, 2, 3};
  int k = st.gjk_iterations;
  const int kmax = st.max_iterations;
  for (; k < kmax; k++) {
    S dist[4], normals[12];
    dist[0] = ccd_signed_distance(normals + 0, simplex[s[2]], simplex[s[1]], simplex[s[3]]);
    dist[1] = ccd_signed_distance(normals + 3, simplex[s[0]], simplex[s[2]], simplex[s[3]]);
    dist[2] = ccd_signed_distance(normals + 6, simplex[s[1]], simplex[s[0]], simplex[s[3]]);
    dist[3] = ccd_signed_distance(normals + 9, simplex[s[0]], simplex[s[1]], simplex[s[2]]);
    if (!dist[3] || !dist[2] || !dist[1] || !dist[0]) {
      st.gjk_iterations = k;
      return -1;
    }
    int i = dist[0] < dist[1] ? 0 : 1;
    int j = dist[2] < dist[3] ? 2 : 3;
    const int index = dist[i] < dist[j] ? i : j;
    if (dist[index] > S(0)) {
      st.nsimplex = 4;
      for (int q = 0; q < 4; ++q) st.simplex[q] = simplex[s[q]];
      st.gjk_iterations = k;
      return 1;
    }
    const S* dir = normals + 3 * index;
    const S dir_neg[3] = {-dir[0], -dir[1], -dir[2]};
    ccd_support(simplex[s[index]], o1, o2, dir, dir_neg);
    if (dot3(dir, simplex[s[index]].vert) < S(0)) {
      st.nsimplex = 0;
      st.gjk_iterations = k;
      return 0;
    }
    i = (index + 1) & 3;
    j = (index + 2) & 3;
    const int swap = s[i];
    s[i] = s[j];
    s[j] = swap;
  }
  st.gjk_iterations = k;
  return -1;
}

/// MuJoCo's gjk(): the distance between the shapes (or contact), the witness points x1, x2 and
/// the final simplex.
template <class S>
RLK_HOST_DEVICE void gjk(ccd_status<S>& st, const ccd_object<S>& o1, const ccd_object<S>& o2) {
  using L = ccd_limits<S>;
  const bool get_dist = st.dist_cutoff > S(0);
  bool backup_gjk = !get_dist;
  ccd_vertex<S>* simplex = st.simplex;
  int n = 0;
  int k = 0;
  const int kmax = st.max_iterations;
  S* x1_k = st.x1;
  S* x2_k = st.x2;
  S x_k[3];
  S lambda[4] = {S(0), S(0), S(0), S(0)};
  const S cutoff2 = st.dist_cutoff * st.dist_cutoff;
  const S tol2 = st.tolerance * st.tolerance;
  st.separated = 0;
  // (capsules and cylinders are smooth shapes: never MuJoCo's "discrete geoms")
  const S epsilon = S(0.5) * tol2;
  const S min_norm = st.tolerance;
  sub3(x_k, x1_k, x2_k);
  S x_norm = norm3(x_k), x_norm_prev = S(0);

  for (; k < kmax; k++) {
    if (x_norm < min_norm || std::fabs(x_norm_prev - x_norm) < L::min_val) break;
    gjk_support(simplex[n], o1, o2, x_k, x_norm);
    const S* s_k = simplex[n].vert;
    S diff[3];
    sub3(diff, x_k, s_k);
    if (dot3(x_k, diff) < epsilon) break;
    if (!get_dist) {
      if (dot3(x_k, s_k) > S(0)) {
        st.separated = 1;
        st.gjk_iterations = k;
        st.nsimplex = 0;
        st.nx = 0;
        st.dist = L::max_limit;
        return;
      }
    } else if (st.dist_cutoff < L::max_limit) {
      const S vs = dot3(x_k, s_k);
      if (vs > S(0) && (vs * vs) >= cutoff2 * (x_norm * x_norm)) {
        st.separated = 1;
        st.gjk_iterations = k;
        st.nsimplex = 0;
        st.nx = 0;
        st.dist = L::max_limit;
        return;
      }
    }
    if (n == 3 && backup_gjk) {
      st.gjk_iterations = k;
      const int ret = gjk_intersect(st, o1, o2);
      if (ret != -1) {
        st.nx = 0;
        st.separated = ret == 0;
        st.dist = ret > 0 ? S(0) : L::max_limit;
        return;
      }
      k = st.gjk_iterations;
      backup_gjk = false;
    }
    gjk_subdistance(lambda, n + 1, simplex);
    n = 0;
    for (int i = 0; i < 4; i++) {
      if (!lambda[i]) continue;
      simplex[n] = simplex[i];
      lambda[n++] = lambda[i];
    }
    if (n < 1) {  // (MuJoCo: "should not occur")
      st.gjk_iterations = k;
      st.nsimplex = 0;
      st.nx = 0;
      st.dist = L::max_limit;
      st.separated = 1;
      return;
    }
    ccd_lincomb(x_k, lambda, n, simplex[0].vert, simplex[1].vert, simplex[2].vert, simplex[3].vert);
    x_norm_prev = x_norm;
    x_norm = norm3(x_k);
    if (n == 4) break;
  }

  if (n > 0) {
    ccd_lincomb(x1_k, lambda, n, simplex[0].vert1, simplex[1].vert1, simplex[2].vert1, simplex[3].vert1);
    ccd_lincomb(x2_k, lambda, n, simplex[0].vert2, simplex[1].vert2, simplex[2].vert2, simplex[3].vert2);
  }
  ccd_vertex<S> tmp;
  gjk_support(tmp, o1, o2, x_k, x_norm);
  if (dot3(x_k, tmp.vert) > S(0)) st.separated = 1;
  if (n == 4 && st.separated == 0) x_norm = S(0);
  st.nx = 1;
  st.gjk_iterations = k;
  st.nsimplex = n;
  st.dist = x_norm;
}

// ------------------------------------------------------------------------------------ EPA ----

/// EPA status codes (mjEPAStatus).
enum : int {
  epa_success = 0,
  epa_p2_invalid_faces,
  epa_p2_nonconvex,
  epa_p2_origin_on_face,
  epa_p3_bad_normal,
  epa_p3_invalid_v4,
  epa_p3_invalid_v5,
  epa_p3_missing_origin,
  epa_p3_origin_on_face,
  epa_p4_missing_origin
};

template <class S, int N>
RLK_INLINE int epa_insert_vertex(ccd_polytope<S, N>& pt, const ccd_vertex<S>& v) {
  const int n = pt.nverts++;
  pt.verts[n] = v;
  return n;
}

template <class S, int N>
RLK_INLINE int epa_support(ccd_polytope<S, N>& pt, const ccd_object<S>& o1, const ccd_object<S>& o2, const S* d,
                           S dnorm) {
  S dir[3] = {S(1), S(0), S(0)}, dir_neg[3] = {S(-1), S(0), S(0)};
  if (dnorm > ccd_limits<S>::min_val) {
    dir[0] = d[0] / dnorm;
    dir[1] = d[1] / dnorm;
    dir[2] = d[2] / dnorm;
    scale3(dir_neg, dir, S(-1));
  }
  const int n = pt.nverts++;
  ccd_support(pt.verts[n], o1, o2, dir, dir_neg);
  return n;
}

template <class S> RLK_INLINE void epa_expand(int packed, int* v) {
  v[0] = packed & 0x3FF;
  v[1] = packed >> 10 & 0x3FF;
  v[2] = packed >> 20 & 0x3FF;
}

/// Appends a face with vertices v1, v2, v3 and neighbours adj1..3; returns its squared distance
/// to the origin (0 when the plane is degenerate).
template <class S, int N>
RLK_INLINE S epa_attach_face(ccd_polytope<S, N>& pt, int v1, int v2, int v3, int adj1, int adj2, int adj3) {
  ccd_face<S>& face = pt.faces[pt.nfaces++];
  face.verts = v1 + (v2 << 10) + (v3 << 20);
  face.adj[0] = static_cast<short>(adj1);
  face.adj[1] = static_cast<short>(adj2);
  face.adj[2] = static_cast<short>(adj3);
  if (project_origin_plane(face.v, pt.verts[v3].vert, pt.verts[v2].vert, pt.verts[v1].vert)) return S(0);
  S outward[3];
  sub3(outward, pt.verts[v1].vert, pt.center);
  if (dot3(face.v, outward) < S(0)) scale3(face.v, face.v, S(-1));
  face.dist2 = dot3(face.v, face.v);
  face.index = -1;
  return face.dist2;
}

template <class S, int N> RLK_INLINE void epa_fill_map(ccd_polytope<S, N>& pt, int n) {
  for (int i = 0; i < n; i++) {
    pt.map[i] = static_cast<short>(i);
    pt.faces[i].index = static_cast<short>(i);
  }
  pt.nmap = n;
}

template <class S, int N>
RLK_INLINE void epa_replace_simplex3(ccd_polytope<S, N>& pt, ccd_status<S>& st, int v1, int v2, int v3) {
  st.nsimplex = 3;
  st.simplex[0] = pt.verts[v1];
  st.simplex[1] = pt.verts[v2];
  st.simplex[2] = pt.verts[v3];
  pt.nfaces = 0;
  pt.nverts = 0;
  pt.nmap = 0;
}

/// 1 if the origin and p3 are strictly on the same side of the plane of p0, p1, p2.
template <class S> RLK_INLINE int epa_same_side(const S* p0, const S* p1, const S* p2, const S* p3) {
  S diff1[3], diff2[3], diff3[3], diff4[3], n[3];
  sub3(diff1, p1, p0);
  sub3(diff2, p2, p0);
  cross3(n, diff1, diff2);
  sub3(diff3, p3, p0);
  const S dot1 = dot3(n, diff3);
  scale3(diff4, p0, S(-1));
  const S dot2 = dot3(n, diff4);
  if (dot1 > S(0) && dot2 > S(0)) return 1;
  if (dot1 < S(0) && dot2 < S(0)) return 1;
  return 0;
}

template <class S> RLK_INLINE int epa_test_tetra(const S* p0, const S* p1, const S* p2, const S* p3) {
  return epa_same_side(p0, p1, p2, p3) && epa_same_side(p1, p2, p3, p0) && epa_same_side(p2, p3, p0, p1) &&
         epa_same_side(p3, p0, p1, p2);
}

/// Rotation by 120 degrees about axis.
template <class S> RLK_INLINE void epa_rotmat(S* R, const S* axis) {
  const S n = norm3(axis);
  const S u1 = axis[0] / n, u2 = axis[1] / n, u3 = axis[2] / n;
  const S sn = S(0.86602540378);
  const S cs = S(-0.5);
  R[0] = cs + u1 * u1 * (S(1) - cs);
  R[1] = u1 * u2 * (S(1) - cs) - u3 * sn;
  R[2] = u1 * u3 * (S(1) - cs) + u2 * sn;
  R[3] = u2 * u1 * (S(1) - cs) + u3 * sn;
  R[4] = cs + u2 * u2 * (S(1) - cs);
  R[5] = u2 * u3 * (S(1) - cs) - u1 * sn;
  R[6] = u1 * u3 * (S(1) - cs) - u2 * sn;
  R[7] = u2 * u3 * (S(1) - cs) + u1 * sn;
  R[8] = cs + u3 * u3 * (S(1) - cs);
}

/// Nonzero if the ray v1 v2 meets the triangle v3 v4 v5.
template <class S> RLK_INLINE int epa_ray_triangle(const S* v1, const S* v2, const S* v3, const S* v4, const S* v5) {
  S diff12[3], diff13[3], diff14[3], diff15[3];
  sub3(diff12, v2, v1);
  sub3(diff13, v3, v1);
  sub3(diff14, v4, v1);
  sub3(diff15, v5, v1);
  const S vol1 = ccd_det3(diff13, diff14, diff12);
  const S vol2 = ccd_det3(diff14, diff15, diff12);
  const S vol3 = ccd_det3(diff15, diff13, diff12);
  if (vol1 >= S(0) && vol2 >= S(0) && vol3 >= S(0)) return 1;
  if (vol1 <= S(0) && vol2 <= S(0) && vol3 <= S(0)) return -1;
  return 0;
}

/// Affine coordinates of p on the triangle v1 v2 v3.
template <class S> RLK_INLINE void epa_tri_affine(S* lambda, const S* v1, const S* v2, const S* v3, const S* p) {
  int x, y;
  const S m_max = triangle_axes(v1, v2, v3, x, y);
  S c[3];
  triangle_cofactors(c, p, v1, v2, v3, x, y);
  lambda[0] = c[0] / m_max;
  lambda[1] = c[1] / m_max;
  lambda[2] = c[2] / m_max;
}

template <class S> RLK_INLINE int epa_tri_point_intersect(const S* v1, const S* v2, const S* v3, const S* p) {
  S lambda[3];
  epa_tri_affine(lambda, v1, v2, v3, p);
  if (lambda[0] < S(0) || lambda[1] < S(0) || lambda[2] < S(0)) return 0;
  S pr[3], diff[3];
  pr[0] = v1[0] * lambda[0] + v2[0] * lambda[1] + v3[0] * lambda[2];
  pr[1] = v1[1] * lambda[0] + v2[1] * lambda[1] + v3[1] * lambda[2];
  pr[2] = v1[2] * lambda[0] + v2[2] * lambda[1] + v3[2] * lambda[2];
  sub3(diff, pr, p);
  return norm3(diff) < ccd_limits<S>::min_val;
}

/// The initial hexahedron from a 2-simplex (triangle): returns 0 on success.
template <class S, int N>
RLK_HOST_DEVICE int epa_polytope3(ccd_polytope<S, N>& pt, ccd_status<S>& st, const ccd_object<S>& o1,
                                  const ccd_object<S>& o2) {
  const S* v1 = st.simplex[0].vert;
  const S* v2 = st.simplex[1].vert;
  const S* v3 = st.simplex[2].vert;
  add3(pt.center, v1, v2);
  add3(pt.center, pt.center, v3);
  scale3(pt.center, pt.center, S(1.0 / 3.0));
  S diff1[3], diff2[3], n[3], n_neg[3];
  sub3(diff1, v2, v1);
  sub3(diff2, v3, v1);
  cross3(n, diff1, diff2);
  const S n_norm = norm3(n);
  if (n_norm < ccd_limits<S>::min_val) return epa_p3_bad_normal;
  scale3(n_neg, n, S(-1));
  const int v1i = epa_insert_vertex(pt, st.simplex[0]);
  const int v2i = epa_insert_vertex(pt, st.simplex[1]);
  const int v3i = epa_insert_vertex(pt, st.simplex[2]);
  const int v5i = epa_support(pt, o1, o2, n_neg, n_norm);
  const int v4i = epa_support(pt, o1, o2, n, n_norm);
  const S* v4 = pt.verts[v4i].vert;
  const S* v5 = pt.verts[v5i].vert;
  if (epa_tri_point_intersect(v1, v2, v3, v4)) return epa_p3_invalid_v4;
  if (epa_tri_point_intersect(v1, v2, v3, v5)) return epa_p3_invalid_v5;
  if (st.dist > S(10) * ccd_limits<S>::min_val && !epa_test_tetra(v1, v2, v3, v4) && !epa_test_tetra(v1, v2, v3, v5))
    return epa_p3_missing_origin;
  const S tol = ccd_limits<S>::min_dist3;
  if (epa_attach_face(pt, v4i, v1i, v2i, 1, 3, 2) < tol) return epa_p3_origin_on_face;
  if (epa_attach_face(pt, v4i, v3i, v1i, 2, 4, 0) < tol) return epa_p3_origin_on_face;
  if (epa_attach_face(pt, v4i, v2i, v3i, 0, 5, 1) < tol) return epa_p3_origin_on_face;
  if (epa_attach_face(pt, v5i, v2i, v1i, 5, 0, 4) < tol) return epa_p3_origin_on_face;
  if (epa_attach_face(pt, v5i, v1i, v3i, 3, 1, 5) < tol) return epa_p3_origin_on_face;
  if (epa_attach_face(pt, v5i, v3i, v2i, 4, 2, 3) < tol) return epa_p3_origin_on_face;
  epa_fill_map(pt, 6);
  return 0;
}

/// The initial hexahedron from a 1-simplex (segment): three more points 120 degrees apart
/// around it; a face through the origin falls back to that triangle.
template <class S, int N>
RLK_HOST_DEVICE int epa_polytope2(ccd_polytope<S, N>& pt, ccd_status<S>& st, const ccd_object<S>& o1,
                                  const ccd_object<S>& o2) {
  const S* v1 = st.simplex[0].vert;
  const S* v2 = st.simplex[1].vert;
  add3(pt.center, v1, v2);
  scale3(pt.center, pt.center, S(0.5));
  S diff[3];
  sub3(diff, v2, v1);
  S value = ccd_limits<S>::max_limit;
  int index = 0;
  for (int i = 0; i < 3; i++) {
    if (std::fabs(diff[i]) < value) {
      value = std::fabs(diff[i]);
      index = i;
    }
  }
  S e[3] = {S(0), S(0), S(0)};
  e[index] = S(1);
  S d1[3], d2[3], d3[3], R[9];
  cross3(d1, e, diff);
  epa_rotmat(R, diff);
  mul_mat_vec3(d2, R, d1);
  mul_mat_vec3(d3, R, d2);
  const int v1i = epa_insert_vertex(pt, st.simplex[0]);
  const int v2i = epa_insert_vertex(pt, st.simplex[1]);
  const int v3i = epa_support(pt, o1, o2, d1, norm3(d1));
  const int v4i = epa_support(pt, o1, o2, d2, norm3(d2));
  const int v5i = epa_support(pt, o1, o2, d3, norm3(d3));
  const S* v3 = pt.verts[v3i].vert;
  const S* v4 = pt.verts[v4i].vert;
  const S* v5 = pt.verts[v5i].vert;
  // (copies: replacing the simplex overwrites st.simplex, which v1 and v2 point into)
  const int faces[6][6] = {{v1i, v3i, v4i, 1, 3, 2}, {v1i, v5i, v3i, 2, 4, 0}, {v1i, v4i, v5i, 0, 5, 1},
                           {v2i, v4i, v3i, 5, 0, 4}, {v2i, v3i, v5i, 3, 1, 5}, {v2i, v5i, v4i, 4, 2, 3}};
  for (int f = 0; f < 6; ++f) {
    const int* q = faces[f];
    if (epa_attach_face(pt, q[0], q[1], q[2], q[3], q[4], q[5]) < ccd_limits<S>::min_dist2) {
      epa_replace_simplex3(pt, st, q[0], q[1], q[2]);
      return epa_polytope3(pt, st, o1, o2);
    }
  }
  if (!epa_ray_triangle(v1, v2, v3, v4, v5)) return epa_p2_nonconvex;
  epa_fill_map(pt, 6);
  return 0;
}

/// The initial tetrahedron from a 3-simplex; a face through the origin falls back to it.
template <class S, int N>
RLK_HOST_DEVICE int epa_polytope4(ccd_polytope<S, N>& pt, ccd_status<S>& st, const ccd_object<S>& o1,
                                  const ccd_object<S>& o2) {
  const int v1 = epa_insert_vertex(pt, st.simplex[0]);
  const int v2 = epa_insert_vertex(pt, st.simplex[1]);
  const int v3 = epa_insert_vertex(pt, st.simplex[2]);
  const int v4 = epa_insert_vertex(pt, st.simplex[3]);
  add3(pt.center, pt.verts[v1].vert, pt.verts[v2].vert);
  add3(pt.center, pt.center, pt.verts[v3].vert);
  add3(pt.center, pt.center, pt.verts[v4].vert);
  scale3(pt.center, pt.center, S(0.25));
  const int faces[4][6] = {{v1, v2, v3, 1, 3, 2}, {v1, v4, v2, 2, 3, 0}, {v1, v3, v4, 0, 3, 1}, {v4, v3, v2, 2, 0, 1}};
  for (int f = 0; f < 4; ++f) {
    const int* q = faces[f];
    if (epa_attach_face(pt, q[0], q[1], q[2], q[3], q[4], q[5]) < ccd_limits<S>::min_dist4) {
      epa_replace_simplex3(pt, st, q[0], q[1], q[2]);
      return epa_polytope3(pt, st, o1, o2);
    }
  }
  if (!epa_test_tetra(pt.verts[v1].vert, pt.verts[v2].vert, pt.verts[v3].vert, pt.verts[v4].vert))
    return epa_p4_missing_origin;
  epa_fill_map(pt, 4);
  return 0;
}

template <class S, int N> RLK_INLINE void epa_delete_face(ccd_polytope<S, N>& pt, int f) {
  ccd_face<S>& face = pt.faces[f];
  if (face.index >= 0) {
    pt.map[face.index] = pt.map[--pt.nmap];
    pt.faces[pt.map[face.index]].index = face.index;
  }
  face.index = -2;
}

template <class S, int N> RLK_INLINE void epa_add_edge(ccd_polytope<S, N>& pt, int index, int edge) {
  pt.horizon_edges[pt.nedges] = static_cast<signed char>(edge);
  pt.horizon_indices[pt.nedges++] = static_cast<short>(index);
}

template <class S> RLK_INLINE int epa_get_edge(const ccd_face<S>& face, int vertex) {
  int v[3];
  epa_expand<S>(face.verts, v);
  if (v[0] == vertex) return 0;
  if (v[1] == vertex) return 1;
  return 2;
}

template <class S, int N> RLK_INLINE bool epa_visible(const ccd_polytope<S, N>& pt, int f) {
  return dot3(pt.faces[f].v, pt.w) - pt.faces[f].dist2 > ccd_limits<S>::min_val;
}

/// MuJoCo's recursive horizonRec without recursion (an explicit depth-first stack in the same
/// visiting order): deletes the faces visible from w reachable from face f0 across edge e0, and
/// collects the horizon edges. Returns whether f0 was visible.
template <class S, int N>
RLK_HOST_DEVICE bool epa_horizon_rec(ccd_polytope<S, N>& pt, int f0, int e0) {
  if (!epa_visible(pt, f0)) return false;
  epa_delete_face(pt, f0);
  // frames: face * 16 + edge * 4 + next k (1 or 2; 3 = done)
  int stack[6 * N];
  int depth = 0;
  stack[depth++] = f0 * 16 + e0 * 4 + 1;
  while (depth > 0) {
    const int top = stack[depth - 1];
    const int f = top >> 4, e = (top >> 2) & 3, k = top & 3;
    if (k == 3) {
      --depth;
      continue;
    }
    stack[depth - 1] = top + 1;
    int verts[3];
    epa_expand<S>(pt.faces[f].verts, verts);
    const int i = (e + k) % 3;
    const int a = pt.faces[f].adj[i];
    if (pt.faces[a].index > -2) {
      const int adj_edge = epa_get_edge(pt.faces[a], verts[(i + 1) % 3]);
      if (epa_visible(pt, a)) {
        epa_delete_face(pt, a);
        stack[depth++] = a * 16 + adj_edge * 4 + 1;
      } else {
        epa_add_edge(pt, a, adj_edge);
      }
    }
  }
  return true;
}

template <class S, int N> RLK_HOST_DEVICE void epa_horizon(ccd_polytope<S, N>& pt, int f) {
  epa_delete_face(pt, f);
  int verts[3];
  epa_expand<S>(pt.faces[f].verts, verts);
  int a = pt.faces[f].adj[0];
  int adj_edge = epa_get_edge(pt.faces[a], verts[1]);
  if (!epa_horizon_rec(pt, a, adj_edge)) epa_add_edge(pt, a, adj_edge);
  a = pt.faces[f].adj[1];
  adj_edge = epa_get_edge(pt.faces[a], verts[2]);
  if (pt.faces[a].index > -2 && !epa_horizon_rec(pt, a, adj_edge)) epa_add_edge(pt, a, adj_edge);
  a = pt.faces[f].adj[2];
  adj_edge = epa_get_edge(pt.faces[a], verts[0]);
  if (pt.faces[a].index > -2 && !epa_horizon_rec(pt, a, adj_edge)) epa_add_edge(pt, a, adj_edge);
}

/// Witness points on the two shapes from the face's affine coordinates; returns -|v|.
template <class S, int N> RLK_INLINE S epa_witness(const ccd_polytope<S, N>& pt, int f, S* x1, S* x2) {
  const ccd_face<S>& face = pt.faces[f];
  int verts[3];
  epa_expand<S>(face.verts, verts);
  const ccd_vertex<S>& v1 = pt.verts[verts[0]];
  const ccd_vertex<S>& v2 = pt.verts[verts[1]];
  const ccd_vertex<S>& v3 = pt.verts[verts[2]];
  S lambda[3];
  epa_tri_affine(lambda, v1.vert, v2.vert, v3.vert, face.v);
  ccd_lincomb<S>(x1, lambda, 3, v1.vert1, v2.vert1, v3.vert1, nullptr);
  ccd_lincomb<S>(x2, lambda, 3, v1.vert2, v2.vert2, v3.vert2, nullptr);
  return -std::sqrt(face.dist2);
}

/// MuJoCo's epa(): expands the polytope towards the face nearest the origin until the bounds
/// meet; the penetration depth and witness points go to st. Returns the face (-1: none).
template <class S, int N>
RLK_HOST_DEVICE int epa(ccd_status<S>& st, ccd_polytope<S, N>& pt, const ccd_object<S>& o1, const ccd_object<S>& o2) {
  using L = ccd_limits<S>;
  S upper = L::max_limit, upper2 = L::max_limit, lower2;
  int face = -1, pface = -1;
  const S tolerance = st.tolerance;
  int k;
  const int kmax = st.max_iterations < 1000 ? st.max_iterations : 1000;
  for (k = 0; k < kmax; k++) {
    pface = face;
    lower2 = L::max_limit;
    for (int i = 0; i < pt.nmap; i++) {
      if (pt.faces[pt.map[i]].dist2 < lower2) {
        face = pt.map[i];
        lower2 = pt.faces[face].dist2;
      }
    }
    if (lower2 > upper2 || face < 0) {
      face = pface;
      break;
    }
    if (lower2 <= S(0)) break;  // (MuJoCo warns: the origin lies on a face's plane)
    const S lower = std::sqrt(lower2);
    const int wi = epa_support(pt, o1, o2, pt.faces[face].v, lower);
    const ccd_vertex<S>& w = pt.verts[wi];
    const S upper_k = dot3(pt.faces[face].v, w.vert) / lower;
    if (upper_k < upper) {
      upper = upper_k;
      upper2 = upper * upper;
    }
    if (upper - lower < tolerance) {
      if (k == 0 && upper < lower - S(1e-10)) face = -1;
      break;
    }
    pt.w = w.vert;
    epa_horizon(pt, face);
    if (pt.nedges < 3) {
      face = -1;
      break;
    }
    const int nfaces = pt.nfaces, nedges = pt.nedges;
    if (nedges > 6 * N - pt.nfaces) break;  // (MuJoCo warns: out of memory for faces)
    for (int i = 0; i < nedges; i++) {
      const int cur = nfaces + i;
      const int prev = i == 0 ? nfaces + nedges - 1 : cur - 1;
      const int next = nfaces + (i + 1) % nedges;
      const int hzn_index = pt.horizon_indices[i], hzn_edge = pt.horizon_edges[i];
      ccd_face<S>& hzn_face = pt.faces[hzn_index];
      int hzn_verts[3];
      epa_expand<S>(hzn_face.verts, hzn_verts);
      const int v1 = hzn_verts[hzn_edge];
      const int v2 = hzn_verts[(hzn_edge + 1) % 3];
      hzn_face.adj[hzn_edge] = static_cast<short>(cur);
      const S dist2 = epa_attach_face(pt, wi, v2, v1, prev, hzn_index, next);
      if (dist2 == S(0)) {
        face = -1;
        break;
      }
      if (dist2 >= lower2 && dist2 <= upper2) {
        const int idx = pt.nmap++;
        pt.map[idx] = static_cast<short>(pt.nfaces - 1);
        pt.faces[pt.nfaces - 1].index = static_cast<short>(idx);
      }
    }
    pt.nedges = 0;
    if (!pt.nmap || face < 0) break;
  }
  st.epa_iterations = k;
  if (face >= 0) {
    st.dist = epa_witness(pt, face, st.x1, st.x2);
    st.nx = 1;
  } else {
    st.nx = 0;
    st.dist = S(0);
  }
  return face;
}

// ------------------------------------------------------------------------------ the driver ----

/// Moves x1 and x2 out along their connecting line by the radii the shortcut took off.
template <class S> RLK_INLINE void ccd_inflate(ccd_status<S>& st, S margin1, S margin2) {
  S n[3];
  sub3(n, st.x2, st.x1);
  normalize3(n);
  if (margin1 != S(0)) {
    st.x1[0] += margin1 * n[0];
    st.x1[1] += margin1 * n[1];
    st.x1[2] += margin1 * n[2];
  }
  if (margin2 != S(0)) {
    st.x2[0] -= margin2 * n[0];
    st.x2[1] -= margin2 * n[1];
    st.x2[2] -= margin2 * n[2];
  }
  st.dist -= (margin1 + margin2);
}

/// MuJoCo's mjc_ccd for one witness pair (max_contacts 1, no distance wanted): a capsule is
/// first treated as its segment (GJK distance minus the radius and half the margin, enough for
/// shallow contacts); deeper ones run GJK and EPA on the full shapes. Returns the signed
/// distance (negative: penetration).
template <class S, int N>
RLK_HOST_DEVICE S ccd_distance(ccd_status<S>& st, ccd_object<S>& o1, ccd_object<S>& o2, int iterations, S tolerance) {
  copy3(st.x1, o1.pos);
  copy3(st.x2, o2.pos);
  st.gjk_iterations = 0;
  st.epa_iterations = 0;
  st.epa_status = -1;
  st.tolerance = tolerance;
  st.max_iterations = iterations;
  st.dist_cutoff = S(0);
  st.nx = 0;
  st.nsimplex = 0;
  if (o1.shape == ccd_shape::capsule || o2.shape == ccd_shape::capsule) {
    S full_margin1 = S(0), full_margin2 = S(0);
    const S margin1 = o1.margin, margin2 = o2.margin;
    if (o1.shape == ccd_shape::capsule) {
      full_margin1 = o1.size[0] + S(0.5) * margin1;
      o1.shape = ccd_shape::line;
      o1.margin = S(0);
    }
    if (o2.shape == ccd_shape::capsule) {
      full_margin2 = o2.size[0] + S(0.5) * margin2;
      o2.shape = ccd_shape::line;
      o2.margin = S(0);
    }
    st.dist_cutoff += full_margin1 + full_margin2;
    gjk(st, o1, o2);
    st.dist_cutoff = S(0);
    o1.margin = margin1;
    o2.margin = margin2;
    if (o1.shape == ccd_shape::line) o1.shape = ccd_shape::capsule;
    if (o2.shape == ccd_shape::line) o2.shape = ccd_shape::capsule;
    if (st.dist > st.tolerance) {
      ccd_inflate(st, full_margin1, full_margin2);
      if (st.dist > st.dist_cutoff) st.dist = ccd_limits<S>::max_limit;
      return st.dist;
    }
    st.gjk_iterations = 0;
    copy3(st.x1, o1.pos);
    copy3(st.x2, o2.pos);
  }
  gjk(st, o1, o2);
  if (st.dist <= tolerance && st.nsimplex > 1 && !st.separated) {
    st.dist = S(0);
    ccd_polytope<S, N> pt;
    pt.nfaces = pt.nmap = pt.nverts = pt.nedges = 0;
    int ret;
    if (st.nsimplex == 2) {
      ret = epa_polytope2(pt, st, o1, o2);
    } else if (st.nsimplex == 3) {
      ret = epa_polytope3(pt, st, o1, o2);
    } else {
      ret = epa_polytope4(pt, st, o1, o2);
    }
    st.epa_status = ret;
    if (!ret) epa(st, pt, o1, o2);
  }
  return st.dist;
}

/// mjc_penetration: one contact from the witness points when the shapes are closer than the
/// margin (dist < 0 after the margin is taken off); returns the number of contacts (0 or 1).
template <class S, int N, class PreContact>
RLK_INLINE int ccd_penetration(PreContact* con, ccd_object<S>& o1, ccd_object<S>& o2, S margin, int iterations,
                               S tolerance) {
  ccd_status<S> st;
  if (ccd_distance<S, N>(st, o1, o2, iterations, tolerance) < S(0)) {
    if (st.nx < 1) return 0;
    con->dist = margin + st.dist;
    add3(con->pos, st.x1, st.x2);
    scale3(con->pos, con->pos, S(0.5));
    sub3(con->normal, st.x1, st.x2);
    normalize3(con->normal);
    con->tangent[0] = con->tangent[1] = con->tangent[2] = S(0);
    return 1;
  }
  return 0;
}

/// Turns a frame (mat, pos) in place by rot about the point origin.
template <class S> RLK_INLINE void ccd_rotate_frame(const S* origin, const S* rot, S* xmat, S* xpos) {
  S mat[9], vec[3], rel[3];
  mul_mat_mat3(mat, rot, xmat);
  for (int i = 0; i < 9; ++i) xmat[i] = mat[i];
  sub3(rel, origin, xpos);
  mul_mat_vec3(vec, rot, rel);
  vec[0] -= rel[0];
  vec[1] -= rel[1];
  vec[2] -= rel[2];
  xpos[0] -= vec[0];
  xpos[1] -= vec[1];
  xpos[2] -= vec[2];
}

template <class S> RLK_INLINE void ccd_init_object(ccd_object<S>& o, int type, const S* size, const S* pos,
                                                   const S* mat, S margin) {
  o.geom_type = type;
  o.shape = type == 3 ? ccd_shape::capsule : ccd_shape::cylinder;
  for (int i = 0; i < 3; ++i) o.size[i] = size[i];
  copy3(o.pos, pos);
  for (int i = 0; i < 9; ++i) o.mat[i] = mat[i];
  o.margin = margin;
}

}  // namespace detail
}  // namespace physics
}  // namespace rlkernels
