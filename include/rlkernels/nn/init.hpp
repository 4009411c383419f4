// rlkernels/nn/init.hpp
// Weight initialisation schemes (orthogonal with gain, Xavier/Glorot, Kaiming/He, PyTorch's Linear
// default), drawn on the host from the library's Philox generator: the same parameters on every
// backend for the same seed.
#pragma once

#include "../core/error.hpp"
#include "../core/random.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "eigen_config.hpp"  // Eigen/Core and Eigen/QR, without Eigen's own OpenMP threads

namespace rlkernels {

/// @brief How a dense layer's weights W [fan_out, fan_in] are drawn.
enum class weight_init : int {
  orthogonal,       ///< gain * (semi-)orthogonal matrix, as torch.nn.init.orthogonal_ (CleanRL's layer_init)
  xavier_uniform,   ///< U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))
  xavier_normal,    ///< N(0, s^2), s = gain * sqrt(2 / (fan_in + fan_out))
  kaiming_uniform,  ///< U(-a, a), a = gain * sqrt(3 / fan_in) (gain sqrt(2) for ReLU)
  kaiming_normal,   ///< N(0, s^2), s = gain / sqrt(fan_in)
  pytorch_default,  ///< torch.nn.Linear's default: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); gain and bias ignored
};

/// @brief Initialisation of one dense layer.
struct layer_init {
  weight_init scheme = weight_init::orthogonal;  ///< how W is drawn
  double gain = 1.4142135623730951;              ///< scale (sqrt(2), CleanRL's hidden layers)
  double bias = 0.0;                             ///< constant bias (except pytorch_default)
};

namespace detail {
inline void check_layer_init(const layer_init& init, const char* who) {
  RLK_EXPECTS(std::isfinite(init.gain) && init.gain >= 0.0, std::invalid_argument, who,
              ": gain must be finite and >= 0, got ", init.gain);
  RLK_EXPECTS(std::isfinite(init.bias), std::invalid_argument, who, ": bias must be finite, got ", init.bias);
  RLK_EXPECTS(int(init.scheme) >= 0 && int(init.scheme) <= int(weight_init::pytorch_default), std::invalid_argument,
              who, ": unknown weight_init ", int(init.scheme));
}
}  // namespace detail

/// @brief Weights [rows = fan_out, cols = fan_in] row-major, drawn with `init` from Philox stream
/// `stream` of `seed` (in double, rounded once to T).
///
/// Orthogonal follows torch.nn.init.orthogonal_: a standard-normal matrix of shape
/// (max(rows, cols), min(rows, cols)) is QR-decomposed, Q's columns are multiplied by the signs of
/// R's diagonal, transposed when rows < cols, and scaled by the gain; so the rows (rows <= cols) or
/// the columns (rows >= cols) are orthonormal times the gain.
/// @throw std::invalid_argument for a zero size, a negative or non-finite gain
template <class T>
std::vector<T> init_weights(std::size_t rows, std::size_t cols, const layer_init& init, std::uint64_t seed,
                            std::uint64_t stream) {
  constexpr const char* who = "rlkernels::init_weights";
  detail::check_layer_init(init, who);
  RLK_EXPECTS(rows >= 1 && cols >= 1, std::invalid_argument, who, ": a ", rows, " x ", cols, " matrix is empty");
  rng gen(seed, stream);
  std::vector<T> w(rows * cols);
  const double fan_in = double(cols), fan_out = double(rows);
  switch (init.scheme) {
    case weight_init::orthogonal: {
      const std::size_t big = rows > cols ? rows : cols, small = rows > cols ? cols : rows;
      Eigen::MatrixXd a{static_cast<Eigen::Index>(big), static_cast<Eigen::Index>(small)};
      for (Eigen::Index j = 0; j < a.cols(); ++j)
        for (Eigen::Index i = 0; i < a.rows(); ++i) a(i, j) = gen.normal<double>();
      Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
      Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(a.rows(), a.cols());
      const Eigen::MatrixXd r = qr.matrixQR().topRows(a.cols());
      for (Eigen::Index j = 0; j < q.cols(); ++j) q.col(j) *= r(j, j) < 0 ? -1.0 : 1.0;
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
          const double v = rows >= cols ? q(Eigen::Index(i), Eigen::Index(j)) : q(Eigen::Index(j), Eigen::Index(i));
          w[i * cols + j] = T(init.gain * v);
        }
      break;
    }
    case weight_init::xavier_uniform: {
      const double a = init.gain * std::sqrt(6.0 / (fan_in + fan_out));
      for (T& x : w) x = T(gen.uniform<double>(-a, a));
      break;
    }
    case weight_init::xavier_normal: {
      const double s = init.gain * std::sqrt(2.0 / (fan_in + fan_out));
      for (T& x : w) x = T(s * gen.normal<double>());
      break;
    }
    case weight_init::kaiming_uniform: {
      const double a = init.gain * std::sqrt(3.0 / fan_in);
      for (T& x : w) x = T(gen.uniform<double>(-a, a));
      break;
    }
    case weight_init::kaiming_normal: {
      const double s = init.gain / std::sqrt(fan_in);
      for (T& x : w) x = T(s * gen.normal<double>());
      break;
    }
    case weight_init::pytorch_default: {
      const double a = 1.0 / std::sqrt(fan_in);
      for (T& x : w) x = T(gen.uniform<double>(-a, a));
      break;
    }
  }
  return w;
}

/// @brief Biases [rows] for a layer with `cols` inputs: the constant init.bias, or for
/// pytorch_default U(-1/sqrt(cols), 1/sqrt(cols)) drawn from Philox stream `stream` of `seed`
/// after the weights' blocks (so weights and biases never share draws).
template <class T>
std::vector<T> init_biases(std::size_t rows, std::size_t cols, const layer_init& init, std::uint64_t seed,
                           std::uint64_t stream) {
  constexpr const char* who = "rlkernels::init_biases";
  detail::check_layer_init(init, who);
  RLK_EXPECTS(rows >= 1 && cols >= 1, std::invalid_argument, who, ": a layer of ", rows, " x ", cols, " is empty");
  std::vector<T> b(rows, T(init.bias));
  if (init.scheme == weight_init::pytorch_default) {
    // Blocks from 2^40 on: far past any weight draw of this stream.
    rng gen(seed, stream, std::uint64_t(1) << 40);
    const double a = 1.0 / std::sqrt(double(cols));
    for (T& x : b) x = T(gen.uniform<double>(-a, a));
  }
  return b;
}

}  // namespace rlkernels
