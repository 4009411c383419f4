// python/src/envs_double_serial.cpp: make_vec() for double envs on the serial backend (every registered id).
#include "bound_env.hpp"

namespace rlkernels_python {

std::unique_ptr<any_vec_env> make_vec_double_serial(const make_request& r) {
  return make_bound<double>(r, rlkernels::serial_backend{});
}

std::vector<param_entry> default_params(const std::string& id) {
  return rlkernels::visit_env<double>(id, [](auto entry) {
    using Env = typename decltype(entry)::env_type;
    return detail::params_of<Env>(entry.params);
  });
}

std::pair<std::pair<int, int>, std::pair<int, int>> capacities_of(const std::string& id) {
  return rlkernels::visit_env<double>(id, [](auto entry) {
    using Env = typename decltype(entry)::env_type;
    return std::make_pair(detail::capacities<Env>(), detail::capacities<rlkernels::full_capacity_t<Env>>());
  });
}

}  // namespace rlkernels_python
