// rlkernels/losses/polyak.hpp
// Polyak (exponential moving) averaging of parameter arrays for target networks (DQN, SAC, TD3):
// target = tau * source + (1 - tau) * target, element-wise on any backend.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <cstddef>
#include <stdexcept>
#include <type_traits>

namespace rlkernels {

namespace detail {
template <class T>
struct polyak_kernel {
  const T* source;
  T* target;
  T tau;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    // tau = 1 copies and tau = 0 keeps the target bit for bit (no a + tau * (b - a) rounding).
    target[i] = tau * source[i] + (T(1) - tau) * target[i];
  }
};
template <class T>
struct polyak_identity {
  using type = T;
};
}  // namespace detail

/// @brief Polyak averaging: target[k] = tau * source[k] + (1 - tau) * target[k] for every k.
/// tau = 1 copies the source exactly, tau = 0 leaves the target unchanged (for finite values).
/// @param backend where to run; both views are in its memory
/// @param source [P] online parameters
/// @param target [P] target parameters, updated in place
/// @param tau averaging weight in [0, 1] (SB3/CleanRL's tau; SAC's default is 0.005)
/// @throw std::invalid_argument on a size mismatch, a null non-empty view, or tau outside [0, 1] / NaN
template <class Backend, class T>
void polyak_update(const Backend& backend, view<const typename detail::polyak_identity<T>::type> source, view<T> target,
                   T tau) {
  static_assert(std::is_floating_point_v<T>, "rlkernels::polyak_update: T must be float or double");
  constexpr const char* who = "rlkernels::polyak_update";
  RLK_EXPECTS(tau >= T(0) && tau <= T(1), std::invalid_argument, who, ": tau must be in [0, 1], got ", tau);
  RLK_EXPECTS(source.size() == target.size(), std::invalid_argument, who, ": source has ", source.size(),
              " elements, target has ", target.size());
  if (target.size() == 0) return;
  RLK_EXPECTS(source.data() != nullptr && target.data() != nullptr, std::invalid_argument, who, ": null view");
  // Element-wise and cheap: on OpenMP, arrays under 32k elements stay on the calling thread.
  for_each_index(detail::light_backend(backend), target.size(), detail::polyak_kernel<T>{source.data(), target.data(), tau});
}

}  // namespace rlkernels
