// python/src/envs_float_openmp.cpp: make_vec() for float envs on the openmp backend (every registered id).
#include "bound_env.hpp"

namespace rlkernels_python {

std::unique_ptr<any_vec_env> make_vec_float_openmp(const make_request& r) {
  rlkernels::openmp_backend backend;
  backend.num_threads = r.num_threads;
  return make_bound<float>(r, backend);
}


}  // namespace rlkernels_python
