// rlkernels/core/math.hpp
// Small scalar helpers that reproduce how reference implementations (NumPy, Python) round: a
// square through libm's pow as `x**2` does, floor-style modulo as Python's `%`, and np.clip.
// Host and device; internal to the library (rlkernels::detail).
#pragma once

#include "config.hpp"

#include <cmath>
#include <type_traits>

namespace rlkernels {
namespace detail {

/// pi in the scalar type (math.pi rounded to Scalar).
template <class Scalar>
constexpr Scalar pi_v = Scalar(3.141592653589793238462643383279502884);

/// @brief x squared as Python/NumPy's `x**2` rounds it.
///
/// For double this calls the C library's pow: glibc's pow(x, 2) is not always the correctly
/// rounded x*x (they differ in about 1 of 1200 random inputs), and compilers fold a literal
/// pow(x, 2.0) into x*x, so the exponent is hidden from the optimiser. For float (which has no
/// bit-exact reference to meet) it is x*x. On CUDA the device pow is used as is.
template <class Scalar>
RLK_INLINE Scalar reference_square(Scalar x) {
  if constexpr (std::is_same_v<Scalar, double>) {
#if defined(__CUDA_ARCH__)
    return ::pow(x, 2.0);
#else
    volatile double two = 2.0;  // not a constant: keeps the call to libm's pow
    return std::pow(x, two);
#endif
  } else {
    return x * x;
  }
}

/// Floor-style modulo as Python's and NumPy's `a % b` (the result has the sign of b).
template <class Scalar>
RLK_INLINE Scalar floor_mod(Scalar a, Scalar b) {
  Scalar m = std::fmod(a, b);
  if (m != Scalar(0)) {
    if ((b < Scalar(0)) != (m < Scalar(0))) m += b;
  } else {
    m = std::copysign(Scalar(0), b);
  }
  return m;
}

/// np.clip(x, lo, hi) for scalars: min(max(x, lo), hi).
template <class Scalar>
RLK_INLINE Scalar clip(Scalar x, Scalar lo, Scalar hi) {
  const Scalar y = x < lo ? lo : x;
  return y > hi ? hi : y;
}

}  // namespace detail
}  // namespace rlkernels
