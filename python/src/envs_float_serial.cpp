// python/src/envs_float_serial.cpp: make_vec() for float envs on the serial backend (every registered id).
#include "bound_env.hpp"

namespace rlkernels_python {

std::unique_ptr<any_vec_env> make_vec_float_serial(const make_request& r) {
  return make_bound<float>(r, rlkernels::serial_backend{});
}


}  // namespace rlkernels_python
