// Tests of rlkernels/nn: the MLP's forward pass against a float64 reference loop, every parameter
// and input gradient against central finite differences in double (one-chunk and multi-chunk
// batches), accumulation, determinism (run to run; serial == OpenMP at any thread count),
// initialisation schemes, Adam and SGD against reference loops of PyTorch's updates, gradient
// norm and clipping, the linear schedule, saving/loading, and argument checks.
#include "../test_backend.hpp"

#include <rlkernels/nn/init.hpp>
#include <rlkernels/nn/mlp.hpp>
#include <rlkernels/nn/optim.hpp>
#include <rlkernels/nn/serialize.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#if !defined(RLK_BACKEND_CUDA) && defined(_OPENMP)
#include <omp.h>
#endif

namespace {
namespace rlk = rlkernels;
using rlk::activation;
using rlk::buffer;
using rlk::mlp_layout;
using B = rlk_test::backend_t;

using rlk_test::make;
using rlk_test::zeros;
/// A host copy of a view into backend memory.
template <class T>
std::vector<std::remove_const_t<T>> host_copy(rlk::view<T> v) {
  buffer<std::remove_const_t<T>, B> out(rlk_test::backend(), v.size());
  rlk::copy(rlk_test::backend(), v, out.view());
  return out.to_host();
}
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
inline bool close(double got, double want, double tol) { return std::fabs(got - want) <= tol * (1 + std::fabs(want)); }

constexpr activation all_activations[] = {activation::identity, activation::tanh, activation::relu, activation::elu};

double act_ref(activation a, double z) {
  switch (a) {
    case activation::identity: return z;
    case activation::tanh: return std::tanh(z);
    case activation::relu: return z > 0 ? z : 0;
    case activation::elu: return z > 0 ? z : std::expm1(z);
  }
  return z;
}

/// Every layer's output [batch, fan_out(l)] of the network with flat parameters p (mlp_layout's
/// order: W_l [out][in] row-major, then b_l) on x [batch, in], in double: y = f(W a + b) per layer.
/// `signs`, when given, receives whether each relu pre-activation is > 0 (to spot kink crossings).
std::vector<std::vector<double>> reference_layers(const mlp_layout& lay, const std::vector<double>& p,
                                                  const std::vector<double>& x, std::size_t batch,
                                                  std::vector<char>* signs = nullptr) {
  std::vector<std::vector<double>> outs;
  if (signs) signs->clear();
  const std::vector<double>* a = &x;
  for (std::size_t l = 0; l < lay.num_layers(); ++l) {
    const std::size_t in = std::size_t(lay.fan_in(l)), out = std::size_t(lay.fan_out(l));
    const double* W = p.data() + lay.weight_offset(l);
    const double* b = p.data() + lay.bias_offset(l);
    const activation f = lay.activation_of(l);
    std::vector<double> y(batch * out);
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t o = 0; o < out; ++o) {
        double z = b[o];
        for (std::size_t i = 0; i < in; ++i) z += W[o * in + i] * (*a)[r * in + i];
        if (signs && f == activation::relu) signs->push_back(z > 0);
        y[r * out + o] = act_ref(f, z);
      }
    outs.push_back(std::move(y));
    a = &outs.back();
  }
  return outs;
}
std::vector<double> reference_forward(const mlp_layout& lay, const std::vector<double>& p, const std::vector<double>& x,
                                      std::size_t batch, std::vector<char>* signs = nullptr) {
  return reference_layers(lay, p, x, batch, signs).back();
}
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// Random parameters of a moderate scale (W ~ N(0, 1.44 / fan_in), b ~ N(0, 0.09)).
std::vector<double> random_parameters(const mlp_layout& lay, std::mt19937& gen) {
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> p(lay.num_parameters());
  for (std::size_t l = 0; l < lay.num_layers(); ++l) {
    const double s = 1.2 / std::sqrt(double(lay.fan_in(l)));
    for (std::size_t k = 0; k < std::size_t(lay.fan_out(l)) * std::size_t(lay.fan_in(l)); ++k)
      p[lay.weight_offset(l) + k] = s * nd(gen);
    for (std::size_t k = 0; k < std::size_t(lay.fan_out(l)); ++k) p[lay.bias_offset(l) + k] = 0.3 * nd(gen);
  }
  return p;
}
std::vector<double> normal_vector(std::size_t n, std::mt19937& gen, double scale = 1.0) {
  std::normal_distribution<double> nd(0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = nd(gen);
  return v;
}

std::string layout_name(const mlp_layout& lay) {
  std::string s = "{";
  for (std::size_t i = 0; i < lay.sizes.size(); ++i) s += (i ? "," : "") + std::to_string(lay.sizes[i]);
  return s + "} " + rlk::activation_name(lay.hidden) + "/" + rlk::activation_name(lay.output);
}

/// Gradients of L = sum(c * y) for every parameter and every input of the batch against central
/// differences of the reference loop. Returns the number of parameters skipped because a relu
/// pre-activation changed sign within the difference step (a kink).
std::size_t check_gradients(const mlp_layout& lay, std::size_t batch, std::uint32_t seed) {
  std::mt19937 gen(seed);
  const std::vector<double> p = random_parameters(lay, gen);
  const std::size_t in = std::size_t(lay.input_size()), out = std::size_t(lay.output_size());
  const std::vector<double> x = normal_vector(batch * in, gen), c = normal_vector(batch * out, gen);

  rlk::mlp<double, B> net(rlk_test::backend(), lay);
  net.set_parameters(p);
  rlk::mlp_workspace<double, B> ws(net, batch);
  auto xb = make(x), cb = make(c);
  auto gx = zeros<double>(x.size());
  const std::vector<double> y = host_copy(net.forward(xb.cview(), ws));
  net.backward(xb.cview(), cb.cview(), ws, gx.view());
  const std::vector<double> g = host_copy(net.gradients()), gin = gx.to_host();

  // the double network itself against the reference
  std::vector<char> base_signs;
  const std::vector<double> y_ref = reference_forward(lay, p, x, batch, &base_signs);
  double worst_y = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    worst_y = std::max(worst_y, std::fabs(y[i] - y_ref[i]) / (1 + std::fabs(y_ref[i])));
  CHECK(worst_y < 1e-12);

  // parameters
  std::size_t skipped = 0, worst_k = 0;
  double worst = 0, largest = 0;
  std::vector<double> q = p;
  std::vector<char> sp, sm;
  for (std::size_t k = 0; k < p.size(); ++k) {
    const double h = 1e-5 * std::max(1.0, std::fabs(p[k]));
    q[k] = p[k] + h;
    const double lp = dot(c, reference_forward(lay, q, x, batch, &sp));
    q[k] = p[k] - h;
    const double lm = dot(c, reference_forward(lay, q, x, batch, &sm));
    q[k] = p[k];
    if (sp != base_signs || sm != base_signs) {
      ++skipped;
      continue;
    }
    const double want = (lp - lm) / (2 * h);
    const double err = std::fabs(g[k] - want) / (1 + std::fabs(want));
    largest = std::max(largest, std::fabs(want));
    if (err > worst) worst = err, worst_k = k;
  }
  INFO("parameter " << worst_k << " of " << p.size() << ": got " << g[worst_k]);
  CHECK(worst < 1e-6);
  // not vacuous (only a relu output layer that is off for every row has no gradient at all)
  if (std::any_of(y_ref.begin(), y_ref.end(), [](double v) { return v != 0; })) CHECK(largest > 1e-3);

  // inputs: x[r, i] only moves row r's share of the loss
  double worst_in = 0;
  std::size_t worst_in_k = 0;
  for (std::size_t r = 0; r < batch; ++r) {
    std::vector<double> row(x.begin() + std::ptrdiff_t(r * in), x.begin() + std::ptrdiff_t((r + 1) * in));
    const std::vector<double> cr(c.begin() + std::ptrdiff_t(r * out), c.begin() + std::ptrdiff_t((r + 1) * out));
    std::vector<char> s0;
    (void)reference_forward(lay, p, row, 1, &s0);
    for (std::size_t i = 0; i < in; ++i) {
      const double h = 1e-5 * std::max(1.0, std::fabs(row[i])), x0 = row[i];
      row[i] = x0 + h;
      const double lp = dot(cr, reference_forward(lay, p, row, 1, &sp));
      row[i] = x0 - h;
      const double lm = dot(cr, reference_forward(lay, p, row, 1, &sm));
      row[i] = x0;
      if (sp != s0 || sm != s0) {
        ++skipped;
        continue;
      }
      const double want = (lp - lm) / (2 * h);
      const double err = std::fabs(gin[r * in + i] - want) / (1 + std::fabs(want));
      if (err > worst_in) worst_in = err, worst_in_k = r * in + i;
    }
  }
  INFO("input " << worst_in_k << ": got " << gin[worst_in_k]);
  CHECK(worst_in < 1e-6);
  return skipped;
}

template <class T, class Backend>
std::vector<T> buffer_host(rlk::view<T> v, Backend backend) {
  buffer<T, Backend> out(backend, v.size());
  rlk::copy(backend, rlk::view<const T>(v), out.view());
  return out.to_host();
}

/// Forward output, gradients and input gradient of one pass, on the host.
template <class T>
struct pass_result {
  std::vector<T> y, g, gx;
};
template <class T, class Backend>
pass_result<T> run_pass(Backend backend, const mlp_layout& lay, const std::vector<T>& params, const std::vector<T>& x,
                        const std::vector<T>& dy, std::size_t batch) {
  rlk::mlp<T, Backend> net(backend, lay);
  net.set_parameters(params);
  rlk::mlp_workspace<T, Backend> ws(net, batch);
  buffer<T, Backend> xb(backend, x), dyb(backend, dy), gx(backend, x.size());
  const rlk::view<const T> y = net.forward(xb.cview(), ws);
  buffer<T, Backend> yb(backend, y.size());
  rlk::copy(backend, y, yb.view());
  net.backward(xb.cview(), dyb.cview(), ws, gx.view());
  return {yb.to_host(), buffer_host(net.gradients(), backend), gx.to_host()};
}

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

std::string temp_path(const std::string& stem) {
  std::random_device rd;
  return (std::filesystem::temp_directory_path() /
          ("rlk_nn_test_" + std::string(rlk::backend_name(B{})) + "_" + stem + "_" + std::to_string(rd()) + ".bin"))
      .string();
}
std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}
}  // namespace

// ---- gradients --------------------------------------------------------------------------------------

TEST_CASE("mlp backward: every parameter and input gradient matches finite differences (double)", "[nn][mlp][grad]") {
  const std::vector<std::vector<int>> layouts = {{3, 5, 4, 2}, {1, 1}, {6, 16, 3}};
  const std::size_t batches[] = {1, 7, 256, 257, 600};  // 256-row host chunks: 1, 1, 1, 2, 3 chunks
  std::size_t checked = 0, skipped = 0;
  std::uint32_t seed = 11;
  for (const auto& sizes : layouts)
    for (activation hidden : all_activations)
      for (activation output : all_activations) {
        if (sizes.size() == 2 && hidden != activation::tanh) continue;  // no hidden layer: one pass per output
        for (std::size_t batch : batches) {
          const mlp_layout lay{sizes, hidden, output};
          INFO(layout_name(lay) << " batch " << batch);
          skipped += check_gradients(lay, batch, seed++);
          checked += lay.num_parameters() + batch * std::size_t(lay.input_size());
        }
      }
  INFO("skipped " << skipped << " of " << checked << " at relu kinks");
  CHECK(skipped * 100 < checked);
}

TEST_CASE("mlp backward: accumulate adds to the gradients; without it they are overwritten", "[nn][mlp][grad]") {
  const mlp_layout lay{{5, 9, 3}, activation::tanh, activation::identity};
  for (std::size_t batch : {std::size_t(7), std::size_t(600)}) {  // the host's one-chunk and multi-chunk paths
    INFO("batch " << batch);
    std::mt19937 gen{std::uint32_t(batch)};
    const std::vector<double> p = random_parameters(lay, gen);
    const std::vector<double> x = normal_vector(batch * 5, gen), c1 = normal_vector(batch * 3, gen),
                              c2 = normal_vector(batch * 3, gen);
    rlk::mlp<double, B> net(rlk_test::backend(), lay);
    net.set_parameters(p);
    rlk::mlp_workspace<double, B> ws(net, batch);
    auto xb = make(x), c1b = make(c1), c2b = make(c2);
    auto gx = zeros<double>(x.size());
    net.forward(xb.cview(), ws);
    net.backward(xb.cview(), c1b.cview(), ws);
    const std::vector<double> g1 = host_copy(net.gradients());
    net.backward(xb.cview(), c2b.cview(), ws, gx.view());
    const std::vector<double> g2 = host_copy(net.gradients()), gx2 = gx.to_host();
    net.backward(xb.cview(), c2b.cview(), ws);
    CHECK(same_bits(host_copy(net.gradients()), g2));  // overwritten, not added

    net.backward(xb.cview(), c1b.cview(), ws);
    net.forward(xb.cview(), ws);  // a new forward pass between does not matter
    net.backward(xb.cview(), c2b.cview(), ws, gx.view(), true);
    const std::vector<double> sum = host_copy(net.gradients());
    double worst = 0;
    for (std::size_t k = 0; k < sum.size(); ++k)
      worst = std::max(worst, std::fabs(sum[k] - (g1[k] + g2[k])) / (1 + std::fabs(g1[k] + g2[k])));
    CHECK(worst < 1e-12);
    bool differs = false;
    for (std::size_t k = 0; k < sum.size(); ++k) differs |= std::fabs(sum[k] - g2[k]) > 1e-6;
    CHECK(differs);
    CHECK(same_bits(gx.to_host(), gx2));  // the input gradient is written, never accumulated
    net.zero_gradients();
    CHECK(host_copy(net.gradients()) == std::vector<double>(sum.size(), 0.0));
  }
}

TEST_CASE("mlp input_gradient: backward's input gradient bit for bit, parameter gradients untouched", "[nn][mlp][grad]") {
  const mlp_layout lay{{4, 11, 6, 1}, activation::relu, activation::identity};
  for (std::size_t batch : {std::size_t(5), std::size_t(530)}) {  // one chunk and several on the host
    INFO("batch " << batch);
    std::mt19937 gen{std::uint32_t(batch + 17)};
    const std::vector<double> x = normal_vector(batch * 4, gen), dy = normal_vector(batch, gen);
    rlk::mlp<double, B> net(rlk_test::backend(), lay);
    net.set_parameters(random_parameters(lay, gen));
    rlk::mlp_workspace<double, B> ws(net, batch);
    auto xb = make(x), dyb = make(dy);
    auto gx_backward = zeros<double>(x.size()), gx_only = zeros<double>(x.size());
    net.forward(xb.cview(), ws);
    net.backward(xb.cview(), dyb.cview(), ws, gx_backward.view());
    const std::vector<double> grads = host_copy(net.gradients());
    net.input_gradient(xb.cview(), dyb.cview(), ws, gx_only.view());
    CHECK(same_bits(gx_only.to_host(), gx_backward.to_host()));
    CHECK(same_bits(host_copy(net.gradients()), grads));
    auto short_out = zeros<double>(x.size() - 1);
    CHECK_THROWS_WITH(net.input_gradient(xb.cview(), dyb.cview(), ws, short_out.view()),
                      Catch::Matchers::Contains("grad_input"));
  }
}

// ---- float forward and backward -----------------------------------------------------------------------

TEST_CASE("mlp<float> forward matches a float64 reference loop; float gradients match double's", "[nn][mlp]") {
  const std::vector<mlp_layout> layouts = {{{4, 64, 64, 2}, activation::tanh, activation::identity},
                                           {{3, 64, 64, 1}, activation::relu, activation::identity},
                                           {{8, 32, 5}, activation::relu, activation::tanh},
                                           {{64, 256, 256, 8}, activation::relu, activation::identity}};
  std::uint64_t seed = 5;
  for (const mlp_layout& lay : layouts) {
    for (std::size_t batch : {std::size_t(1), std::size_t(300)}) {
      INFO(layout_name(lay) << " batch " << batch);
      rlk::mlp<float, B> net(rlk_test::backend(), lay);
      net.initialize(seed++, rlk::layer_init{rlk::weight_init::orthogonal, std::sqrt(2.0), 0.1},
                     rlk::layer_init{rlk::weight_init::xavier_uniform, 1.0, -0.2});
      std::mt19937 gen{std::uint32_t(seed)};
      const std::vector<float> x = cast<float>(normal_vector(batch * std::size_t(lay.input_size()), gen));
      const std::vector<float> dy = cast<float>(normal_vector(batch * std::size_t(lay.output_size()), gen));
      rlk::mlp_workspace<float, B> ws(net, batch);
      auto xb = make(x), dyb = make(dy);
      const rlk::view<const float> yv = net.forward(xb.cview(), ws);
      CHECK(yv.data() == ws.output().data());
      CHECK(ws.batch() == batch);
      const std::vector<float> y = host_copy(yv);
      const std::vector<float> pf = net.parameters_to_host();
      const auto ref = reference_layers(lay, to_double(pf), to_double(x), batch);
      double worst = 0;
      for (std::size_t i = 0; i < y.size(); ++i)
        worst = std::max(worst, std::fabs(y[i] - ref.back()[i]) / (1 + std::fabs(ref.back()[i])));
      CHECK(worst < 1e-5);
      const std::vector<float> h0 = host_copy(ws.layer_output(0));  // hidden layer kept for backward
      REQUIRE(h0.size() == ref[0].size());
      double worst_h = 0;
      for (std::size_t i = 0; i < h0.size(); ++i)
        worst_h = std::max(worst_h, std::fabs(h0[i] - ref[0][i]) / (1 + std::fabs(ref[0][i])));
      CHECK(worst_h < 1e-5);

      // backward in float against the double network with the same (float) parameters and inputs
      net.backward(xb.cview(), dyb.cview(), ws);
      const std::vector<float> gf = host_copy(net.gradients());
      rlk::mlp<double, B> netd(rlk_test::backend(), lay);
      netd.set_parameters(to_double(pf));
      rlk::mlp_workspace<double, B> wsd(netd, batch);
      auto xd = make(to_double(x)), dyd = make(to_double(dy));
      netd.forward(xd.cview(), wsd);
      netd.backward(xd.cview(), dyd.cview(), wsd);
      const std::vector<double> gd = host_copy(netd.gradients());
      double scale = 1, worst_g = 0;
      for (double v : gd) scale = std::max(scale, std::fabs(v));
      for (std::size_t k = 0; k < gd.size(); ++k) worst_g = std::max(worst_g, std::fabs(gf[k] - gd[k]) / scale);
      CHECK(worst_g < 2e-5);
    }
  }
}

// ---- determinism -------------------------------------------------------------------------------------

TEST_CASE("mlp: identical bits run to run, and on the host for serial and OpenMP at any thread count",
          "[nn][mlp][determinism]") {
  const mlp_layout lay{{17, 64, 33, 5}, activation::relu, activation::tanh};
  for (std::size_t batch : {std::size_t(100), std::size_t(1000)}) {
    INFO("batch " << batch);
    std::mt19937 gen{std::uint32_t(batch)};
    const std::vector<float> p = cast<float>(random_parameters(lay, gen));
    const std::vector<float> x = cast<float>(normal_vector(batch * 17, gen));
    const std::vector<float> dy = cast<float>(normal_vector(batch * 5, gen));
    const auto a = run_pass(rlk_test::backend(), lay, p, x, dy, batch);
    const auto b = run_pass(rlk_test::backend(), lay, p, x, dy, batch);
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.g, b.g));
    CHECK(same_bits(a.gx, b.gx));
#if !defined(RLK_BACKEND_CUDA)
    const auto s = run_pass(rlk::serial, lay, p, x, dy, batch);
    CHECK(same_bits(a.y, s.y));
    CHECK(same_bits(a.g, s.g));
    CHECK(same_bits(a.gx, s.gx));
    for (int threads : {1, 2, 3}) {
      INFO("OpenMP threads " << threads);
      const auto o = run_pass(rlk::openmp_backend{threads, 0}, lay, p, x, dy, batch);
      CHECK(same_bits(o.y, s.y));
      CHECK(same_bits(o.g, s.g));
      CHECK(same_bits(o.gx, s.gx));
    }
#endif
  }
}

#if !defined(RLK_BACKEND_CUDA) && defined(_OPENMP)
TEST_CASE("mlp on the host: the bits do not depend on OpenMP's thread count (no Eigen-internal threads)",
          "[nn][mlp][determinism]") {
  // Wide inputs make Eigen's GEMM split the work across OpenMP threads unless EIGEN_DONT_PARALLELIZE
  // is in effect, which changes its blocking and so the bits.
  const mlp_layout lay{{400, 64, 2}, activation::tanh, activation::identity};
  const std::size_t batch = 600;  // three 256-row chunks
  std::mt19937 gen(4);
  const std::vector<float> p = cast<float>(random_parameters(lay, gen));
  const std::vector<float> x = cast<float>(normal_vector(batch * 400, gen));
  const std::vector<float> dy = cast<float>(normal_vector(batch * 2, gen));
  const int saved = omp_get_max_threads();
  std::vector<pass_result<float>> runs, omp1_runs, omp2_runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(run_pass(rlk::serial, lay, p, x, dy, batch));
    omp1_runs.push_back(run_pass(rlk::openmp_backend{1, 0}, lay, p, x, dy, batch));
    omp2_runs.push_back(run_pass(rlk::openmp_backend{2, 0}, lay, p, x, dy, batch));
  }
  omp_set_num_threads(saved);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    INFO("omp_set_num_threads(" << i + 1 << ")");
    CHECK(same_bits(runs[i].y, runs[0].y));
    CHECK(same_bits(runs[i].g, runs[0].g));
    CHECK(same_bits(runs[i].gx, runs[0].gx));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    INFO("omp_set_num_threads(" << i + 1 << ")");
    CHECK(same_bits(omp1_runs[i].y, runs[0].y));
    CHECK(same_bits(omp1_runs[i].g, runs[0].g));
    CHECK(same_bits(omp2_runs[i].g, runs[0].g));
    CHECK(same_bits(omp2_runs[i].gx, runs[0].gx));
  }
  // and the same parameters from initialize()
  std::vector<std::vector<float>> inits;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    rlk::mlp<float, rlk::serial_backend> net(rlk::serial, {300, 200, 3});
    net.initialize(9);
    inits.push_back(net.parameters_to_host());
  }
  omp_set_num_threads(saved);
  CHECK(same_bits(inits[0], inits[1]));
}
#endif

// ---- initialisation ------------------------------------------------------------------------------------

TEST_CASE("init_weights orthogonal: (semi-)orthogonal times the gain, reproducible per seed and stream", "[nn][init]") {
  const double gain = 1.7;
  const rlk::layer_init init{rlk::weight_init::orthogonal, gain, 0.0};
  const std::pair<std::size_t, std::size_t> shapes[] = {{4, 9}, {9, 4}, {7, 7},   {1, 5},
                                                        {5, 1}, {1, 1}, {64, 64}, {64, 17}};
  for (const auto& [rows, cols] : shapes) {
    INFO(rows << " x " << cols);
    const std::vector<double> w = rlk::init_weights<double>(rows, cols, init, 42, 3);
    REQUIRE(w.size() == rows * cols);
    double worst = 0;
    if (rows <= cols) {  // W W^T = gain^2 I
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < rows; ++j) {
          double s = 0;
          for (std::size_t k = 0; k < cols; ++k) s += w[i * cols + k] * w[j * cols + k];
          worst = std::max(worst, std::fabs(s - (i == j ? gain * gain : 0.0)));
        }
    }
    if (rows >= cols) {  // W^T W = gain^2 I
      for (std::size_t i = 0; i < cols; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
          double s = 0;
          for (std::size_t k = 0; k < rows; ++k) s += w[k * cols + i] * w[k * cols + j];
          worst = std::max(worst, std::fabs(s - (i == j ? gain * gain : 0.0)));
        }
    }
    CHECK(worst < 1e-10);
    CHECK(rlk::init_weights<double>(rows, cols, init, 42, 3) == w);
    if (rows * cols > 1) {
      CHECK(rlk::init_weights<double>(rows, cols, init, 43, 3) != w);
      CHECK(rlk::init_weights<double>(rows, cols, init, 42, 4) != w);
    }
    // float: the same matrix rounded once
    const std::vector<float> wf = rlk::init_weights<float>(rows, cols, init, 42, 3);
    for (std::size_t k = 0; k < w.size(); ++k) CHECK(wf[k] == float(w[k]));
  }
  // gain 0.01 (CleanRL's policy head) scales exactly
  const std::vector<double> unit = rlk::init_weights<double>(3, 8, {rlk::weight_init::orthogonal, 1.0, 0}, 1, 0);
  const std::vector<double> small = rlk::init_weights<double>(3, 8, {rlk::weight_init::orthogonal, 0.01, 0}, 1, 0);
  for (std::size_t k = 0; k < unit.size(); ++k) CHECK(small[k] == Approx(0.01 * unit[k]).epsilon(1e-12));
}

namespace {
struct moments {
  double mean, var, max_abs;
};
moments sample_moments(const std::vector<double>& v) {
  double m = 0, mx = 0;
  for (double x : v) m += x, mx = std::max(mx, std::fabs(x));
  m /= double(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return {m, s / double(v.size() - 1), mx};
}
}  // namespace

TEST_CASE("init_weights: uniform bounds and sample variances of Xavier, Kaiming and PyTorch's default", "[nn][init]") {
  const std::size_t rows = 128, cols = 512;  // fan_out 128, fan_in 512: a swapped fan shows
  const double fan_in = double(cols), fan_out = double(rows), gain = 1.3;
  struct scheme_case {
    rlk::weight_init scheme;
    double bound;  // 0: normal
    double variance;
  };
  const double xu = gain * std::sqrt(6.0 / (fan_in + fan_out)), ku = gain * std::sqrt(3.0 / fan_in),
               pu = 1.0 / std::sqrt(fan_in);
  const scheme_case cases[] = {
      {rlk::weight_init::xavier_uniform, xu, xu * xu / 3},
      {rlk::weight_init::xavier_normal, 0, gain * gain * 2.0 / (fan_in + fan_out)},
      {rlk::weight_init::kaiming_uniform, ku, ku * ku / 3},
      {rlk::weight_init::kaiming_normal, 0, gain * gain / fan_in},
      {rlk::weight_init::pytorch_default, pu, pu * pu / 3},
  };
  for (const scheme_case& sc : cases) {
    INFO("scheme " << int(sc.scheme));
    const rlk::layer_init init{sc.scheme, gain, 0.25};
    const std::vector<double> w = rlk::init_weights<double>(rows, cols, init, 7, 2);
    const moments m = sample_moments(w);
    CHECK(std::fabs(m.var / sc.variance - 1) < 0.05);
    CHECK(std::fabs(m.mean) < 5 * std::sqrt(sc.variance / double(w.size())));
    if (sc.bound > 0) {
      CHECK(m.max_abs <= sc.bound);
      CHECK(m.max_abs > 0.99 * sc.bound);
    } else {
      CHECK(m.max_abs > 3.5 * std::sqrt(sc.variance));  // normal tails, not a uniform
    }
    CHECK(rlk::init_weights<double>(rows, cols, init, 7, 2) == w);
    CHECK(rlk::init_weights<double>(rows, cols, init, 8, 2) != w);
    CHECK(rlk::init_weights<double>(rows, cols, init, 7, 3) != w);
    // biases
    const std::vector<double> b = rlk::init_biases<double>(1000, cols, init, 7, 2);
    REQUIRE(b.size() == 1000);
    if (sc.scheme == rlk::weight_init::pytorch_default) {
      const moments mb = sample_moments(b);
      CHECK(mb.max_abs <= pu);
      CHECK(mb.max_abs > 0.99 * pu);
      CHECK(std::fabs(mb.var / (pu * pu / 3) - 1) < 0.15);  // 1000 samples
      // drawn apart from the weights of the same stream
      const std::vector<double> w1000 = rlk::init_weights<double>(1000, 1, init, 7, 2);
      std::size_t equal = 0;
      for (std::size_t k = 0; k < 1000; ++k) equal += b[k] == w1000[k] || b[k] == w[k];
      CHECK(equal == 0);
      CHECK(rlk::init_biases<double>(1000, cols, init, 7, 2) == b);
      CHECK(rlk::init_biases<double>(1000, cols, init, 7, 5) != b);
    } else {
      CHECK(b == std::vector<double>(1000, 0.25));
    }
  }
  // pytorch_default ignores the gain
  CHECK(rlk::init_weights<double>(4, 6, {rlk::weight_init::pytorch_default, 5.0, 0}, 1, 0) ==
        rlk::init_weights<double>(4, 6, {rlk::weight_init::pytorch_default, 1.0, 0}, 1, 0));
  // bad arguments
  CHECK_THROWS_AS(rlk::init_weights<double>(0, 3, {}, 1, 0), std::invalid_argument);
  CHECK_THROWS_WITH(rlk::init_weights<double>(2, 3, {rlk::weight_init::orthogonal, -1.0, 0}, 1, 0),
                    Catch::Contains("gain"));
  CHECK_THROWS_WITH(rlk::init_weights<double>(2, 3, {rlk::weight_init::orthogonal, std::nan(""), 0}, 1, 0),
                    Catch::Contains("gain"));
}

TEST_CASE("mlp::initialize: per layer from init_weights/init_biases with stream l, the same on every backend",
          "[nn][init]") {
  const mlp_layout lay{{6, 32, 16, 3}, activation::tanh, activation::identity};
  const rlk::layer_init hidden{rlk::weight_init::orthogonal, std::sqrt(2.0), 0.0};
  const rlk::layer_init head{rlk::weight_init::orthogonal, 0.01, 0.5};
  rlk::mlp<float, B> net(rlk_test::backend(), lay);
  net.initialize(123, hidden, head);
  const std::vector<float> p = net.parameters_to_host();
  for (std::size_t l = 0; l < lay.num_layers(); ++l) {
    INFO("layer " << l);
    const rlk::layer_init& init = l + 1 == lay.num_layers() ? head : hidden;
    const std::size_t rows = std::size_t(lay.fan_out(l)), cols = std::size_t(lay.fan_in(l));
    const std::vector<float> w = rlk::init_weights<float>(rows, cols, init, 123, l);
    const std::vector<float> b = rlk::init_biases<float>(rows, cols, init, 123, l);
    CHECK(std::vector<float>(p.begin() + std::ptrdiff_t(lay.weight_offset(l)),
                             p.begin() + std::ptrdiff_t(lay.weight_offset(l) + rows * cols)) == w);
    CHECK(std::vector<float>(p.begin() + std::ptrdiff_t(lay.bias_offset(l)),
                             p.begin() + std::ptrdiff_t(lay.bias_offset(l) + rows)) == b);
    CHECK(host_copy(rlk::view<const float>(net.weight(l))) == w);
    CHECK(host_copy(rlk::view<const float>(net.bias(l))) == b);
  }
  // per-layer form
  const std::vector<rlk::layer_init> per_layer = {{rlk::weight_init::pytorch_default, 1, 0},
                                                  {rlk::weight_init::kaiming_uniform, 2, 0.1},
                                                  {rlk::weight_init::xavier_normal, 1, -0.1}};
  rlk::mlp<float, B> net2(rlk_test::backend(), lay);
  net2.initialize(5, per_layer);
  const std::vector<float> p2 = net2.parameters_to_host();
  for (std::size_t l = 0; l < lay.num_layers(); ++l) {
    const std::size_t rows = std::size_t(lay.fan_out(l)), cols = std::size_t(lay.fan_in(l));
    const std::vector<float> w = rlk::init_weights<float>(rows, cols, per_layer[l], 5, l);
    CHECK(std::equal(w.begin(), w.end(), p2.begin() + std::ptrdiff_t(lay.weight_offset(l))));
    const std::vector<float> b = rlk::init_biases<float>(rows, cols, per_layer[l], 5, l);
    CHECK(std::equal(b.begin(), b.end(), p2.begin() + std::ptrdiff_t(lay.bias_offset(l))));
  }
#if !defined(RLK_BACKEND_CUDA)
  rlk::mlp<float, rlk::serial_backend> s(rlk::serial, lay);
  s.initialize(123, hidden, head);
  rlk::mlp<float, rlk::openmp_backend> o(rlk::openmp_backend{3, 0}, lay);
  o.initialize(123, hidden, head);
  CHECK(same_bits(s.parameters_to_host(), p));
  CHECK(same_bits(o.parameters_to_host(), p));
#endif
  // refused initialisations change nothing
  CHECK_THROWS_WITH(net.initialize(1, std::vector<rlk::layer_init>(2)), Catch::Contains("layer_init entries"));
  CHECK_THROWS_AS(net.initialize(1, rlk::layer_init{rlk::weight_init::orthogonal, -2.0, 0}), std::invalid_argument);
  CHECK(same_bits(net.parameters_to_host(), p));
}

// ---- optimisers -------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("adam: PyTorch's update (and AdamW decay) against a float64 loop, with a learning-rate change",
                   "[nn][optim]", float, double) {
  using T = TestType;
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  const std::size_t n = 3000;  // above OpenMP's serial_below: runs in parallel
  for (double wd : {0.0, 0.1}) {
    INFO("weight_decay " << wd);
    const rlk::adam_params hp{1e-2, 0.9, 0.999, 1e-5, wd};
    std::mt19937 gen(wd > 0 ? 2 : 1);
    const std::vector<T> p0 = cast<T>(normal_vector(n, gen));
    auto params = make(p0);
    rlk::adam<T, B> opt(rlk_test::backend(), n, hp);
    std::vector<double> p = to_double(p0), m(n, 0), v(n, 0);
    double lr = hp.learning_rate;
    for (int t = 1; t <= 20; ++t) {
      if (t == 11) {
        lr = 3e-3;
        opt.set_learning_rate(lr);
      }
      std::vector<T> g = cast<T>(normal_vector(n, gen, std::pow(10.0, (t % 5) - 2)));  // 0.01 ... 100
      for (std::size_t i = 0; i < n; i += 7) g[i] = T(0);
      auto gb = make(g);
      opt.step(params.view(), gb.cview());
      const double bc1 = 1 - std::pow(hp.beta1, t), bc2 = 1 - std::pow(hp.beta2, t);
      for (std::size_t i = 0; i < n; ++i) {
        const double gi = double(g[i]);
        p[i] -= lr * wd * p[i];
        m[i] = hp.beta1 * m[i] + (1 - hp.beta1) * gi;
        v[i] = hp.beta2 * v[i] + (1 - hp.beta2) * gi * gi;
        p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + hp.epsilon);
      }
      if (t == 1 || t == 10 || t == 20) {
        INFO("step " << t);
        const std::vector<T> got = params.to_host();
        double worst = 0, moved = 0;
        for (std::size_t i = 0; i < n; ++i) {
          worst = std::max(worst, std::fabs(double(got[i]) - p[i]) / (1 + std::fabs(p[i])));
          moved = std::max(moved, std::fabs(p[i] - double(p0[i])));
        }
        CHECK(worst < tol);
        CHECK(moved > 1e-3);
        const std::vector<T> mh = host_copy(opt.first_moments()), vh = host_copy(opt.second_moments());
        double err_m = 0, err_v = 0, max_m = 0, max_v = 0;
        for (std::size_t i = 0; i < n; ++i) {
          err_m = std::max(err_m, std::fabs(double(mh[i]) - m[i]));
          err_v = std::max(err_v, std::fabs(double(vh[i]) - v[i]));
          max_m = std::max(max_m, std::fabs(m[i]));
          max_v = std::max(max_v, v[i]);
        }
        CHECK(err_m < 10 * tol * max_m);
        CHECK(err_v < 10 * tol * max_v);
      }
    }
    CHECK(opt.steps() == 20);
    CHECK(opt.learning_rate() == 3e-3);
  }
  CHECK_THROWS_AS((rlk::adam<T, B>(rlk_test::backend(), 4, {1e-3, 1.0, 0.999, 1e-8, 0})), std::invalid_argument);
  rlk::adam<T, B> opt(rlk_test::backend(), 4);
  CHECK_THROWS_AS(opt.set_learning_rate(-1), std::invalid_argument);
  auto small = zeros<T>(3), grads = zeros<T>(4);
  CHECK_THROWS_WITH(opt.step(small.view(), grads.cview()), Catch::Contains("params"));
  CHECK(opt.steps() == 0);
}

TEMPLATE_TEST_CASE("sgd: plain, momentum, Nesterov and weight decay against PyTorch's loop", "[nn][optim]", float,
                   double) {
  using T = TestType;
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  const std::size_t n = 2000;
  const rlk::sgd_params configs[] = {{0.1, 0.0, false, 0.0},
                                     {0.1, 0.9, false, 0.0},
                                     {0.1, 0.9, true, 0.0},
                                     {0.05, 0.0, false, 0.01},
                                     {0.05, 0.8, true, 0.01}};
  int which = 0;
  for (const rlk::sgd_params& hp : configs) {
    INFO("config " << which << ": momentum " << hp.momentum << " nesterov " << hp.nesterov << " wd "
                   << hp.weight_decay);
    std::mt19937 gen{std::uint32_t(100 + which++)};
    const std::vector<T> p0 = cast<T>(normal_vector(n, gen));
    auto params = make(p0);
    rlk::sgd<T, B> opt(rlk_test::backend(), n, hp);
    std::vector<double> p = to_double(p0), buf(n, 0);
    double lr = hp.learning_rate;
    for (int t = 0; t < 15; ++t) {
      if (t == 8) {
        lr *= 0.5;
        opt.set_learning_rate(lr);
      }
      const std::vector<T> g = cast<T>(normal_vector(n, gen, 1 + t % 3));
      auto gb = make(g);
      opt.step(params.view(), gb.cview());
      for (std::size_t i = 0; i < n; ++i) {
        double d = double(g[i]) + hp.weight_decay * p[i];
        if (hp.momentum > 0) {
          buf[i] = t == 0 ? d : hp.momentum * buf[i] + d;
          d = hp.nesterov ? d + hp.momentum * buf[i] : buf[i];
        }
        p[i] -= lr * d;
      }
    }
    const std::vector<T> got = params.to_host();
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i)
      worst = std::max(worst, std::fabs(double(got[i]) - p[i]) / (1 + std::fabs(p[i])));
    CHECK(worst < 10 * tol);
    CHECK(opt.steps() == 15);
  }
  CHECK_THROWS_WITH((rlk::sgd<T, B>(rlk_test::backend(), 4, {0.1, 0.0, true, 0.0})), Catch::Contains("nesterov"));
}

TEMPLATE_TEST_CASE("global_norm and clip_grad_norm against double loops", "[nn][optim]", float, double) {
  using T = TestType;
  std::mt19937 gen(9);
  const std::vector<T> a0 = cast<T>(normal_vector(5000, gen, 0.3)), b0 = cast<T>(normal_vector(17, gen, 2.0)),
                       c0 = cast<T>(normal_vector(3, gen, 5.0));
  double ss = 0;
  for (const auto* v : {&a0, &b0, &c0})
    for (T x : *v) ss += double(x) * double(x);
  const double norm = std::sqrt(ss);
  auto a = make(a0), b = make(b0), c = make(c0);
  buffer<T, B> empty;
  const double got = rlk::global_norm(rlk_test::backend(), {a.cview(), b.cview(), empty.cview(), c.cview()});
  CHECK(got == Approx(norm).epsilon(1e-12));
  double ss_b = 0;
  for (T x : b0) ss_b += double(x) * double(x);
  CHECK(rlk::global_norm(rlk_test::backend(), {b.cview()}) == Approx(std::sqrt(ss_b)).epsilon(1e-12));

  SECTION("norm above max_norm: scaled by max_norm / (norm + 1e-6), pre-clip norm returned") {
    const double max_norm = 0.5 * norm;
    const double ret = rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, max_norm);
    CHECK(ret == Approx(norm).epsilon(1e-12));
    const double factor = max_norm / (norm + 1e-6);
    const std::vector<T> a1 = a.to_host(), b1 = b.to_host(), c1 = c.to_host();
    double worst = 0;
    for (std::size_t i = 0; i < a0.size(); ++i)
      worst = std::max(worst, std::fabs(a1[i] - a0[i] * factor) / (1e-30 + std::fabs(a0[i] * factor)));
    for (std::size_t i = 0; i < b0.size(); ++i)
      worst = std::max(worst, std::fabs(b1[i] - b0[i] * factor) / (1e-30 + std::fabs(b0[i] * factor)));
    for (std::size_t i = 0; i < c0.size(); ++i)
      worst = std::max(worst, std::fabs(c1[i] - c0[i] * factor) / (1e-30 + std::fabs(c0[i] * factor)));
    CHECK(worst < (std::is_same_v<T, float> ? 3e-7 : 1e-15));
    CHECK(rlk::global_norm(rlk_test::backend(), {a.cview(), b.cview(), c.cview()}) == Approx(max_norm).epsilon(1e-5));
  }
  SECTION("norm at or below max_norm: unchanged") {
    CHECK(rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, norm * 1.0001) ==
          Approx(norm).epsilon(1e-12));
    CHECK(rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, 1e9) == Approx(norm).epsilon(1e-12));
    CHECK(same_bits(a.to_host(), a0));
    CHECK(same_bits(b.to_host(), b0));
    CHECK(same_bits(c.to_host(), c0));
  }
  SECTION("NaN or infinity: rlkernels::error, gradients unchanged") {
    for (T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()}) {
      std::vector<T> b_bad = b0;
      b_bad[3] = bad;
      b.assign(b_bad);
      CHECK_THROWS_AS(rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, 0.1), rlk::error);
      CHECK_THROWS_WITH(rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, 0.1),
                        Catch::Contains("unchanged"));
      CHECK(same_bits(a.to_host(), a0));
      CHECK(same_bits(b.to_host(), b_bad));
      CHECK(same_bits(c.to_host(), c0));
      const double r = rlk::clip_grad_norm(rlk_test::backend(), {a.view(), b.view(), c.view()}, 0.1, false);
      CHECK(!std::isfinite(r));
      CHECK(same_bits(a.to_host(), a0));
    }
  }
  SECTION("max_norm <= 0: std::invalid_argument") {
    CHECK_THROWS_AS(rlk::clip_grad_norm(rlk_test::backend(), {a.view()}, 0.0), std::invalid_argument);
    CHECK_THROWS_WITH(rlk::clip_grad_norm(rlk_test::backend(), {a.view()}, -1.0), Catch::Contains("max_norm"));
    CHECK(same_bits(a.to_host(), a0));
  }
}

TEST_CASE("linear_schedule: start, middle, end, past the end, zero steps", "[nn][optim]") {
  const rlk::linear_schedule s{2.5e-4, 0.0, 100};
  CHECK(s(0) == 2.5e-4);
  CHECK(s(50) == Approx(1.25e-4).epsilon(1e-12));
  CHECK(s(25) == Approx(1.875e-4).epsilon(1e-12));
  CHECK(s(100) == 0.0);
  CHECK(s(1000) == 0.0);
  const rlk::linear_schedule up{0.1, 0.9, 8};
  CHECK(up(2) == Approx(0.3).epsilon(1e-12));
  CHECK(up(8) == 0.9);
  CHECK(up(9) == 0.9);
  const rlk::linear_schedule none{1.0, 0.5, 0};
  CHECK(none(0) == 0.5);
  CHECK(none(7) == 0.5);
}

// ---- saving and loading -----------------------------------------------------------------------------

TEST_CASE("save_parameters / load_parameters: round trip, and refused files leave the network unchanged",
          "[nn][serialize]") {
  const mlp_layout lay{{4, 16, 2}, activation::tanh, activation::identity};
  rlk::mlp<float, B> a(rlk_test::backend(), lay), b(rlk_test::backend(), lay);
  a.initialize(1);
  b.initialize(2);
  const std::vector<float> pa = a.parameters_to_host(), pb = b.parameters_to_host();
  REQUIRE(pa != pb);
  const std::string path = temp_path("roundtrip"), bad = temp_path("corrupt");
  rlk::save_parameters(a, path);

  SECTION("round trip") {
    rlk::load_parameters(b, path);
    CHECK(same_bits(b.parameters_to_host(), pa));
  }
  SECTION("another layout: std::invalid_argument naming both") {
    rlk::mlp<float, B> other(rlk_test::backend(), {4, 15, 2});
    const std::vector<float> po = other.parameters_to_host();
    CHECK_THROWS_AS(rlk::load_parameters(other, path), std::invalid_argument);
    CHECK_THROWS_WITH(rlk::load_parameters(other, path), Catch::Contains("{4, 16, 2} tanh/identity float") &&
                                                             Catch::Contains("{4, 15, 2} tanh/identity float"));
    CHECK(same_bits(other.parameters_to_host(), po));
    rlk::mlp<float, B> relu(rlk_test::backend(), {4, 16, 2}, activation::relu);
    CHECK_THROWS_WITH(rlk::load_parameters(relu, path),
                      Catch::Contains("tanh/identity") && Catch::Contains("relu/identity"));
    rlk::mlp<double, B> dbl(rlk_test::backend(), lay);
    CHECK_THROWS_WITH(rlk::load_parameters(dbl, path), Catch::Contains("float") && Catch::Contains("double"));
  }
  SECTION("a flipped byte in the data: checksum") {
    std::vector<char> bytes = read_file(path);
    REQUIRE(bytes.size() > 100);
    bytes[bytes.size() - 8 - 13] ^= 0x10;  // inside the parameters, before the checksum
    write_file(bad, bytes);
    CHECK_THROWS_AS(rlk::load_parameters(b, bad), rlk::error);
    CHECK_THROWS_WITH(rlk::load_parameters(b, bad), Catch::Contains("checksum"));
    CHECK(same_bits(b.parameters_to_host(), pb));
  }
  SECTION("truncated files") {
    const std::vector<char> bytes = read_file(path);
    for (std::size_t keep : {bytes.size() - 1, bytes.size() - 20, std::size_t(30)}) {
      INFO("keep " << keep << " of " << bytes.size() << " bytes");
      write_file(bad, std::vector<char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(keep)));
      CHECK_THROWS_AS(rlk::load_parameters(b, bad), rlk::error);
      CHECK_THROWS_WITH(rlk::load_parameters(b, bad), Catch::Contains("truncated"));
      CHECK(same_bits(b.parameters_to_host(), pb));
    }
    std::vector<char> longer = bytes;
    longer.push_back('x');
    write_file(bad, longer);
    CHECK_THROWS_WITH(rlk::load_parameters(b, bad), Catch::Contains("trailing"));
    std::vector<char> not_ours = bytes;
    not_ours[0] = 'X';
    write_file(bad, not_ours);
    CHECK_THROWS_WITH(rlk::load_parameters(b, bad), Catch::Contains("not an rlkernels MLP parameter file"));
    CHECK(same_bits(b.parameters_to_host(), pb));
  }
  SECTION("no such file; a directory") {
    CHECK_THROWS_AS(rlk::load_parameters(b, bad + ".missing"), rlk::error);
    CHECK_THROWS_WITH(rlk::load_parameters(b, bad + ".missing"), Catch::Contains("cannot open"));
    CHECK_THROWS_AS(rlk::load_parameters(b, std::filesystem::temp_directory_path().string()), rlk::error);
    CHECK_THROWS_WITH(rlk::save_parameters(b, std::filesystem::temp_directory_path().string()),
                      Catch::Contains("cannot open"));
    CHECK(same_bits(b.parameters_to_host(), pb));
  }
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

// ---- argument checks ---------------------------------------------------------------------------------

TEST_CASE("mlp: argument errors name the problem", "[nn][mlp][errors]") {
  CHECK_THROWS_WITH((rlk::mlp<float, B>(rlk_test::backend(), {4})), Catch::Contains("at least an input and an output"));
  CHECK_THROWS_WITH((rlk::mlp<float, B>(rlk_test::backend(), {4, 0, 2})), Catch::Contains("sizes[1] = 0"));
  CHECK_THROWS_AS((rlk::mlp<float, B>(rlk_test::backend(), std::vector<int>{})), std::invalid_argument);

  const mlp_layout lay{{3, 8, 2}, activation::tanh, activation::identity};
  rlk::mlp<float, B> net(rlk_test::backend(), lay);
  net.initialize(3);
  rlk::mlp_workspace<float, B> ws(net, 5);
  CHECK(ws.max_batch() == 5);
  CHECK(ws.batch() == 0);
  CHECK_THROWS_WITH((rlk::mlp_workspace<float, B>(net, 0)), Catch::Contains("max_batch must be >= 1"));
  auto x5 = zeros<float>(15), x6 = zeros<float>(18), x_odd = zeros<float>(7), x4 = zeros<float>(12);
  auto dy5 = zeros<float>(10), dy4 = zeros<float>(8), gx_bad = zeros<float>(14);

  CHECK_THROWS_WITH(net.forward(x_odd.cview(), ws),
                    Catch::Contains("x must be a non-null [B, 3] view") && Catch::Contains("7 elements"));
  CHECK_THROWS_WITH(net.forward(rlk::view<const float>(), ws), Catch::Contains("x must be"));
  CHECK_THROWS_WITH(net.forward(x6.cview(), ws),
                    Catch::Contains("batch of 6 rows exceeds the workspace's max_batch 5"));
  rlk::mlp<float, B> other(rlk_test::backend(), {3, 9, 2});
  rlk::mlp_workspace<float, B> other_ws(other, 5);
  CHECK_THROWS_WITH(net.forward(x5.cview(), other_ws), Catch::Contains("another shape"));
  CHECK(other_ws.batch() == 0);

  CHECK_THROWS_WITH(net.backward(x5.cview(), dy5.cview(), ws), Catch::Contains("last forward pass had 0"));
  net.forward(x5.cview(), ws);
  CHECK(ws.batch() == 5);
  net.zero_gradients();
  CHECK_THROWS_WITH(net.backward(x4.cview(), dy4.cview(), ws),
                    Catch::Contains("x has 4 rows but the workspace's last forward pass had 5"));
  CHECK_THROWS_WITH(net.backward(x5.cview(), dy4.cview(), ws),
                    Catch::Contains("grad_output has 8 elements, expected 10"));
  CHECK_THROWS_WITH(net.backward(x5.cview(), rlk::view<const float>(), ws), Catch::Contains("grad_output"));
  CHECK_THROWS_WITH(net.backward(x5.cview(), dy5.cview(), ws, gx_bad.view()),
                    Catch::Contains("grad_input has 14 elements, expected 15"));
  CHECK_THROWS_WITH(net.backward(x5.cview(), dy5.cview(), other_ws), Catch::Contains("another shape"));
  CHECK(host_copy(net.gradients()) == std::vector<float>(net.num_parameters(), 0.0f));  // nothing written

  // parameters
  CHECK_THROWS_WITH(net.set_parameters(std::vector<float>(3)), Catch::Contains("3 values for 50 parameters"));
  rlk::mlp<float, B> target(rlk_test::backend(), lay);
  target.copy_parameters_from(net);
  CHECK(same_bits(target.parameters_to_host(), net.parameters_to_host()));
  CHECK_THROWS_WITH(other.copy_parameters_from(net), Catch::Contains("different layouts"));
  rlk::mlp<float, B> relu_net(rlk_test::backend(), {3, 8, 2}, activation::relu);
  CHECK_THROWS_AS(relu_net.copy_parameters_from(net), std::invalid_argument);

  // layout arithmetic as documented
  CHECK(lay.num_parameters() == 8 * 3 + 8 + 2 * 8 + 2);
  CHECK(lay.weight_offset(1) == 32);
  CHECK(lay.bias_offset(1) == 48);
  CHECK(net.num_parameters() == 50);
  CHECK(lay.activation_of(0) == activation::tanh);
  CHECK(lay.activation_of(1) == activation::identity);
}

TEST_CASE("mlp: a batch above INT_MAX rows is rejected, naming the function and the batch, before anything changes",
          "[nn][mlp][errors]") {
  // cuBLAS takes the batch as an int; every backend takes at most INT_MAX rows per pass. The views
  // below only claim 2^31 rows (a real pointer, never read): the check comes before any access.
  const std::size_t too_many = std::size_t(INT_MAX) + 1;
  CHECK_NOTHROW(rlk::detail::check_mlp_batch(std::size_t(INT_MAX), "f"));
  CHECK_THROWS_WITH(rlk::detail::check_mlp_batch(too_many, "f"),
                    Catch::Contains("f: batch of 2147483648 rows exceeds 2147483647"));

  rlk::mlp<float, B> net(rlk_test::backend(), {3, 4, 2});
  net.initialize(5);
  rlk::mlp_workspace<float, B> ws(net, 2);
  auto x = make<float>({0.5f, -1.0f, 2.0f, 0.25f, 0.0f, -0.75f});
  auto dy = make<float>({1.0f, -1.0f, 0.5f, 2.0f});
  auto gx = zeros<float>(6);
  const std::vector<float> y = host_copy(net.forward(x.cview(), ws));
  const std::vector<float> params = net.parameters_to_host();

  const rlk::view<const float> huge_x(x.data(), too_many * 3);
  const rlk::view<const float> huge_dy(dy.data(), too_many * 2);
  const rlk::view<float> huge_gx(gx.data(), too_many * 3);
  CHECK_THROWS_WITH(net.forward(huge_x, ws),
                    Catch::Contains("rlkernels::mlp::forward: batch of 2147483648 rows exceeds 2147483647"));
  CHECK_THROWS_WITH(net.backward(huge_x, huge_dy, ws, huge_gx),
                    Catch::Contains("rlkernels::mlp::backward: batch of 2147483648 rows exceeds 2147483647"));
  CHECK_THROWS_WITH(net.input_gradient(huge_x, huge_dy, ws, huge_gx),
                    Catch::Contains("rlkernels::mlp::input_gradient: batch of 2147483648 rows exceeds 2147483647"));
  CHECK_THROWS_AS(net.forward(huge_x, ws), std::invalid_argument);
  CHECK(ws.batch() == 2);
  CHECK(same_bits(host_copy(ws.output()), y));
  CHECK(same_bits(net.parameters_to_host(), params));
  CHECK(host_copy(net.gradients()) == std::vector<float>(net.num_parameters(), 0.0f));
  CHECK(gx.to_host() == std::vector<float>(6, 0.0f));

  // A workspace for more rows than one pass takes is refused before it allocates anything.
  CHECK_THROWS_WITH((rlk::mlp_workspace<float, B>(net, too_many)),
                    Catch::Contains("max_batch 2147483648 exceeds 2147483647"));
  CHECK_THROWS_AS((rlk::mlp_workspace<float, B>(net, too_many)), std::invalid_argument);
}

TEST_CASE("mlp: moving a network moves its state (and, on CUDA, its cuBLAS handle)", "[nn][mlp]") {
  rlk::mlp<float, B> a(rlk_test::backend(), {3, 8, 2});
  a.initialize(11);
  auto x = make<float>({0.5f, -1.0f, 2.0f, 0.25f, 0.0f, -0.75f});
  rlk::mlp_workspace<float, B> ws(a, 2);
  const std::vector<float> y = host_copy(a.forward(x.cview(), ws));

  rlk::mlp<float, B> b(std::move(a));  // move construction
  rlk::mlp_workspace<float, B> ws_b(b, 2);
  CHECK(same_bits(host_copy(b.forward(x.cview(), ws_b)), y));

  rlk::mlp<float, B> c(rlk_test::backend(), {3, 8, 2});
  c = std::move(b);  // move assignment: c's own handle goes with b
  rlk::mlp_workspace<float, B> ws_c(c, 2);
  CHECK(same_bits(host_copy(c.forward(x.cview(), ws_c)), y));
  auto dy = make<float>({1.0f, -1.0f, 0.5f, 2.0f});
  c.backward(x.cview(), dy.cview(), ws_c);
  rlk::mlp<float, B> fresh(rlk_test::backend(), {3, 8, 2});
  fresh.initialize(11);
  rlk::mlp_workspace<float, B> ws_f(fresh, 2);
  fresh.forward(x.cview(), ws_f);
  fresh.backward(x.cview(), dy.cview(), ws_f);
  CHECK(same_bits(c.gradients_to_host(), fresh.gradients_to_host()));
}

// ---- Device forms of global_norm and clip_grad_norm (the norm stays in backend memory) ----

TEMPLATE_TEST_CASE("global_norm and clip_grad_norm device forms: the host forms' bits, no host wait", "[nn][optim][device_form]",
                   float, double) {
  using T = TestType;
  REQUIRE(rlk::host_sync_counting_enabled);
  const auto be = rlk_test::backend();
  std::mt19937 gen(19);
  const std::vector<T> a0 = cast<T>(normal_vector(9000, gen, 0.3)), b0 = cast<T>(normal_vector(17, gen, 2.0)),
                       c0 = cast<T>(normal_vector(3, gen, 5.0));
  auto a = make(a0), b = make(b0), c = make(c0);
  buffer<T, B> empty;
  auto out = rlk_test::zeros<double>(1);
  const double host = rlk::global_norm(be, {a.cview(), b.cview(), empty.cview(), c.cview()});
  rlk::reset_host_sync_counts();
  rlk::global_norm(be, out.view(), {a.cview(), b.cview(), empty.cview(), c.cview()});
  CHECK(rlk::host_sync_counts().total() == 0);
  const double dev = out.get(0);
  CHECK(std::memcmp(&dev, &host, sizeof(double)) == 0);
  if constexpr (!rlk_test::on_cuda) {  // today's host computation: sums in argument order
    double ss = 0.0;
    for (const auto* v : {&a, &b, &c})
      ss += rlk::detail::deterministic_sum(be, v->size(), rlk::detail::square_term<T>{v->data()}, 0.0,
                                           rlk::detail::plus_double{});
    CHECK(std::memcmp(&dev, &host, sizeof(double)) == 0);
    const double want = std::sqrt(ss);
    CHECK(std::memcmp(&want, &host, sizeof(double)) == 0);
  }
  // More arrays than the fixed scratch holds.
  const double host10 = rlk::global_norm(be, {b.cview(), c.cview(), b.cview(), c.cview(), b.cview(), c.cview(), b.cview(),
                                              c.cview(), b.cview(), a.cview()});
  rlk::global_norm(be, out.view(), {b.cview(), c.cview(), b.cview(), c.cview(), b.cview(), c.cview(), b.cview(), c.cview(),
                                    b.cview(), a.cview()});
  CHECK(out.get(0) == host10);
  double ss10 = 0;
  for (int k = 0; k < 5; ++k)
    for (T x : b0) ss10 += double(x) * double(x);
  for (int k = 0; k < 4; ++k)
    for (T x : c0) ss10 += double(x) * double(x);
  for (T x : a0) ss10 += double(x) * double(x);
  CHECK(host10 == Approx(std::sqrt(ss10)).epsilon(1e-12));

  for (double max_norm : {0.5 * host, 2.0 * host}) {
    INFO("max_norm " << max_norm);
    auto a1 = make(a0), b1 = make(b0), c1 = make(c0);
    const double ret = rlk::clip_grad_norm(be, {a1.view(), b1.view(), c1.view()}, max_norm);
    auto a2 = make(a0), b2 = make(b0), c2 = make(c0);
    rlk::reset_host_sync_counts();
    rlk::clip_grad_norm(be, out.view(), {a2.view(), b2.view(), c2.view()}, max_norm);
    CHECK(rlk::host_sync_counts().total() == 0);
    CHECK(out.get(0) == ret);
    CHECK(same_bits(a2.to_host(), a1.to_host()));
    CHECK(same_bits(b2.to_host(), b1.to_host()));
    CHECK(same_bits(c2.to_host(), c1.to_host()));
    if (max_norm < host) {  // scaled by T(max_norm / (norm + 1e-6)), as before
      const T factor = T(max_norm / (host + 1e-6));
      std::vector<T> want = b0;
      for (T& x : want) x *= factor;
      CHECK(same_bits(b2.to_host(), want));
    } else {
      CHECK(same_bits(a2.to_host(), a0));
    }
  }
  // A NaN: the device form leaves the gradients unchanged and reports the norm; the host form throws.
  std::vector<T> b_bad = b0;
  b_bad[2] = std::numeric_limits<T>::quiet_NaN();
  b.assign(b_bad);
  rlk::clip_grad_norm(be, out.view(), {a.view(), b.view()}, 1e-3);
  CHECK(std::isnan(out.get(0)));
  CHECK(same_bits(a.to_host(), a0));
  CHECK_THROWS_AS(rlk::clip_grad_norm(be, {a.view(), b.view()}, 1e-3), rlk::error);
  CHECK(std::isnan(rlk::clip_grad_norm(be, {a.view(), b.view()}, 1e-3, false)));
  CHECK(same_bits(a.to_host(), a0));
  CHECK_THROWS_AS(rlk::clip_grad_norm(be, out.view(), {a.view()}, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(rlk::clip_grad_norm(be, rlk::view<double>(), {a.view()}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(rlk::global_norm(be, out.view(), {a.cview(), rlk::view<const T>(nullptr, 3)}), std::invalid_argument);
}
