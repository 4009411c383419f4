// rlkernels/buffers/common.hpp
// What the buffers share internally: the shape and memory check their constructors make before
// allocating anything, and a read-only view of any buffer-like source (buffer or view).
#pragma once

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace rlkernels {
namespace detail {

/// A view<const T> of anything with data() and size() (a buffer, a view).
template <class T, class Source>
view<const T> const_view_of(const Source& source) {
  return view<const T>(source.data(), source.size());
}

/// Checks a [rows, N, ...] storage shape and that `bytes` (SIZE_MAX when the size overflows) fit
/// on the backend, before the caller allocates anything. `who` names the class, `rows_name` its
/// first dimension ("num_steps", "capacity_steps").
/// @throw std::invalid_argument for a zero dimension; out_of_memory naming the shape and the bytes
template <class Backend>
void check_storage_shape(const Backend& backend, const char* who, const char* rows_name, std::size_t rows,
                         std::size_t num_envs, int observation_size, int action_width, std::size_t bytes) {
  RLK_EXPECTS(rows >= 1, std::invalid_argument, who, ": ", rows_name, " must be >= 1, got ", rows);
  RLK_EXPECTS(num_envs >= 1, std::invalid_argument, who, ": num_envs must be >= 1, got ", num_envs);
  RLK_EXPECTS(observation_size >= 1, std::invalid_argument, who, ": observation_size must be >= 1, got ",
              observation_size);
  RLK_EXPECTS(action_width >= 1, std::invalid_argument, who, ": action_width must be >= 1, got ", action_width);
  const std::string what = concat(who, ": ", rows, " steps x ", num_envs, " envs (observation_size ", observation_size,
                                  ", action_width ", action_width, ")");
  if (bytes == std::size_t(-1)) {
    throw out_of_memory(bytes, concat(what, " needs more than ", bytes, " bytes (overflows the address space)"));
  }
  expect_fits(backend, bytes, what);
}

}  // namespace detail
}  // namespace rlkernels
