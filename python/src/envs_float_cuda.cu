// python/src/envs_float_cuda.cu: make_vec() for float envs on the CUDA backend (every registered id;
// built only with -DRLK_PYTHON_CUDA=ON, compiled by nvcc into a static library the module links).
#include "bound_env.hpp"

namespace rlkernels_python {

std::unique_ptr<any_vec_env> make_vec_float_cuda(const make_request& r) {
  return make_bound<float>(r, rlkernels::cuda_backend{});
}

}  // namespace rlkernels_python
