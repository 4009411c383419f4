// rlkernels/physics/math.hpp
// Small fixed-size vector, matrix and quaternion operations for the physics engine (host and device),
// with MuJoCo's conventions: quaternions (w, x, y, z), 3x3 matrices row-major in 9 scalars.
// Internal (rlkernels::physics::detail); the engine and the collision functions share them.
#pragma once

#include "../core/config.hpp"

#include <cmath>

namespace rlkernels {
namespace physics {
namespace detail {

/// MuJoCo's mjMINVAL (the smallest denominator it accepts; the same in float and double builds)
/// and mjMAXVAL (the largest sane state value).
template <class S> RLK_INLINE S min_value() { return S(1e-15); }
template <class S> RLK_INLINE S max_value() { return S(1e10); }

/// Dot product in MuJoCo's order of additions (mju_dot: four partial sums over blocks of 4,
/// combined as (0 + 2) + (1 + 3), then the remaining 1-3 products): the solver's sums then round
/// exactly as MuJoCo's.
/// The same with a(i) giving a's entries (for a matrix stored otherwise, e.g. a packed triangle).
template <class S, class A> RLK_INLINE S mj_dot_by(const A& a, const S* b, int n) {
  S r0 = S(0), r1 = S(0), r2 = S(0), r3 = S(0);
  int i = 0;
  for (; i <= n - 4; i += 4) {
    r0 += a(i) * b[i];
    r1 += a(i + 1) * b[i + 1];
    r2 += a(i + 2) * b[i + 2];
    r3 += a(i + 3) * b[i + 3];
  }
  S r = (r0 + r2) + (r1 + r3);
  const int rest = n - i;
  if (rest == 3) {
    r += a(i) * b[i] + a(i + 1) * b[i + 1] + a(i + 2) * b[i + 2];
  } else if (rest == 2) {
    r += a(i) * b[i] + a(i + 1) * b[i + 1];
  } else if (rest == 1) {
    r += a(i) * b[i];
  }
  return r;
}

template <class S> RLK_INLINE S mj_dot(const S* a, const S* b, int n) {
  return mj_dot_by<S>([a](int i) { return a[i]; }, b, n);
}

template <class S> RLK_INLINE S dot3(const S* a, const S* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/// r = a x b (r may not alias a or b).
template <class S> RLK_INLINE void cross3(S* r, const S* a, const S* b) {
  r[0] = a[1] * b[2] - a[2] * b[1];
  r[1] = a[2] * b[0] - a[0] * b[2];
  r[2] = a[0] * b[1] - a[1] * b[0];
}

template <class S> RLK_INLINE void copy3(S* r, const S* a) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; }
template <class S> RLK_INLINE void add3(S* r, const S* a, const S* b) { r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; r[2] = a[2] + b[2]; }
template <class S> RLK_INLINE void sub3(S* r, const S* a, const S* b) { r[0] = a[0] - b[0]; r[1] = a[1] - b[1]; r[2] = a[2] - b[2]; }
template <class S> RLK_INLINE void scale3(S* r, const S* a, S s) { r[0] = a[0] * s; r[1] = a[1] * s; r[2] = a[2] * s; }
/// r += a * s
template <class S> RLK_INLINE void add_scaled3(S* r, const S* a, S s) { r[0] += a[0] * s; r[1] += a[1] * s; r[2] += a[2] * s; }
template <class S> RLK_INLINE S norm3(const S* a) { return std::sqrt(dot3(a, a)); }

/// Normalizes a in place and returns its former length (MuJoCo's mju_normalize3: a near-zero
/// vector becomes (1, 0, 0)).
template <class S> RLK_INLINE S normalize3(S* a) {
  const S n = norm3(a);
  if (n < S(1e-15)) {
    a[0] = S(1); a[1] = S(0); a[2] = S(0);
  } else {
    const S inv = S(1) / n;
    a[0] *= inv; a[1] *= inv; a[2] *= inv;
  }
  return n;
}

/// r = M v (M row-major 3x3; r may not alias v).
template <class S> RLK_INLINE void mul_mat_vec3(S* r, const S* M, const S* v) {
  r[0] = M[0] * v[0] + M[1] * v[1] + M[2] * v[2];
  r[1] = M[3] * v[0] + M[4] * v[1] + M[5] * v[2];
  r[2] = M[6] * v[0] + M[7] * v[1] + M[8] * v[2];
}

/// r = M^T v (r may not alias v).
template <class S> RLK_INLINE void mul_mat_t_vec3(S* r, const S* M, const S* v) {
  r[0] = M[0] * v[0] + M[3] * v[1] + M[6] * v[2];
  r[1] = M[1] * v[0] + M[4] * v[1] + M[7] * v[2];
  r[2] = M[2] * v[0] + M[5] * v[1] + M[8] * v[2];
}

/// r = A B for 3x3 matrices (r may not alias A or B).
template <class S> RLK_INLINE void mul_mat_mat3(S* r, const S* A, const S* B) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/// r = q1 * q2 (Hamilton product; r may not alias the inputs).
template <class S> RLK_INLINE void mul_quat(S* r, const S* a, const S* b) {
  r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/// Normalizes q in place (MuJoCo's mju_normalize4: a near-zero quaternion becomes identity).
template <class S> RLK_INLINE void normalize_quat(S* q) {
  const S n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (n < S(1e-15)) {
    q[0] = S(1); q[1] = S(0); q[2] = S(0); q[3] = S(0);
  } else {
    const S inv = S(1) / n;
    q[0] *= inv; q[1] *= inv; q[2] *= inv; q[3] *= inv;
  }
}

/// Rotation matrix (row-major) of a unit quaternion.
template <class S> RLK_INLINE void quat_to_mat(S* M, const S* q) {
  const S q00 = q[0] * q[0], q01 = q[0] * q[1], q02 = q[0] * q[2], q03 = q[0] * q[3];
  const S q11 = q[1] * q[1], q12 = q[1] * q[2], q13 = q[1] * q[3];
  const S q22 = q[2] * q[2], q23 = q[2] * q[3], q33 = q[3] * q[3];
  M[0] = q00 + q11 - q22 - q33;
  M[4] = q00 - q11 + q22 - q33;
  M[8] = q00 - q11 - q22 + q33;
  M[1] = S(2) * (q12 - q03);
  M[2] = S(2) * (q13 + q02);
  M[3] = S(2) * (q12 + q03);
  M[5] = S(2) * (q23 - q01);
  M[6] = S(2) * (q13 - q02);
  M[7] = S(2) * (q23 + q01);
}

/// r = q v q^-1 (rotate v by the unit quaternion q; r may not alias v).
template <class S> RLK_INLINE void rotate_by_quat(S* r, const S* q, const S* v) {
  S M[9];
  quat_to_mat(M, q);
  mul_mat_vec3(r, M, v);
}

/// Unit quaternion of a rotation by `angle` about the unit axis.
template <class S> RLK_INLINE void axis_angle_to_quat(S* q, const S* axis, S angle) {
  const S half = angle / S(2);
  const S s = std::sin(half);
  q[0] = std::cos(half);
  q[1] = axis[0] * s;
  q[2] = axis[1] * s;
  q[3] = axis[2] * s;
}

}  // namespace detail
}  // namespace physics
}  // namespace rlkernels
