// benchmarks/nn/mlp_bench.cpp
// Rows per second of rlkernels::mlp (float) at the sizes RL uses, forward and forward+backward,
// each beside a straightforward single-threaded fused loop (rows x outputs x inputs, the same
// math) in the same binary: whether Eigen (host) or cuBLAS (CUDA) pays at these sizes. Networks:
// CartPole's PPO actor {4, 64, 64, 2} tanh, Pendulum's critic {3, 64, 64, 1} tanh, and a wider
// {64, 256, 256, 8} relu; batches 1 to 4096. Each fixture checks once that the loop and the
// network agree. Built once per backend by rlk_add_variants.
#include <rlkernels/core/memory.hpp>
#include <rlkernels/nn/mlp.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk::activation;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

struct net_spec {
  const char* name;
  std::vector<int> sizes;
  activation hidden, output;
};
const net_spec specs[] = {
    {"cartpole_actor_4x64x64x2_tanh", {4, 64, 64, 2}, activation::tanh, activation::identity},
    {"pendulum_critic_3x64x64x1_tanh", {3, 64, 64, 1}, activation::tanh, activation::identity},
    {"wide_64x256x256x8_relu", {64, 256, 256, 8}, activation::relu, activation::identity},
};
constexpr std::int64_t batch_sizes[] = {1, 8, 64, 256, 1024, 4096};
constexpr double min_time_s = 0.1;

// ---- the baseline: plain loops over rows, outputs and inputs, single-threaded, host memory --------

inline float activate(activation a, float z) {
  if (a == activation::tanh) return std::tanh(z);
  if (a == activation::relu) return z > 0.0f ? z : 0.0f;
  return z;
}
/// f'(z) from y = f(z).
inline float derivative(activation a, float y) {
  if (a == activation::tanh) return 1.0f - y * y;
  if (a == activation::relu) return y > 0.0f ? 1.0f : 0.0f;
  return 1.0f;
}

/// act[l] [B, fan_out(l)] = f_l(W_l act[l-1] + b_l), act[-1] = x.
void loop_forward(const rlk::mlp_layout& lay, const float* p, const float* x, std::size_t batch,
                  std::vector<std::vector<float>>& act) {
  for (std::size_t l = 0; l < lay.num_layers(); ++l) {
    const std::size_t in = std::size_t(lay.fan_in(l)), out = std::size_t(lay.fan_out(l));
    const float* W = p + lay.weight_offset(l);
    const float* b = p + lay.bias_offset(l);
    const activation f = lay.activation_of(l);
    const float* a = l == 0 ? x : act[l - 1].data();
    float* y = act[l].data();
    for (std::size_t r = 0; r < batch; ++r) {
      const float* ar = a + r * in;
      for (std::size_t o = 0; o < out; ++o) {
        const float* w = W + o * in;
        float z = b[o];
        for (std::size_t i = 0; i < in; ++i) z += w[i] * ar[i];
        y[r * out + o] = activate(f, z);
      }
    }
  }
}

/// Gradients of the batch into g (overwritten) from dy [B, out], after loop_forward; one fused
/// pass per layer accumulates dW, db and the previous layer's delta row by row.
void loop_backward(const rlk::mlp_layout& lay, const float* p, const float* x, const float* dy, std::size_t batch,
                   const std::vector<std::vector<float>>& act, float* g, std::vector<float>& delta,
                   std::vector<float>& next) {
  std::fill(g, g + lay.num_parameters(), 0.0f);
  const std::size_t layers = lay.num_layers();
  {
    const std::size_t out = std::size_t(lay.output_size());
    const activation f = lay.activation_of(layers - 1);
    for (std::size_t k = 0; k < batch * out; ++k) delta[k] = dy[k] * derivative(f, act[layers - 1][k]);
  }
  for (std::size_t l = layers; l-- > 0;) {
    const std::size_t in = std::size_t(lay.fan_in(l)), out = std::size_t(lay.fan_out(l));
    const float* W = p + lay.weight_offset(l);
    float* dW = g + lay.weight_offset(l);
    float* db = g + lay.bias_offset(l);
    const float* a = l == 0 ? x : act[l - 1].data();
    for (std::size_t r = 0; r < batch; ++r) {
      const float* ar = a + r * in;
      float* nr = next.data() + r * in;
      if (l > 0) std::fill(nr, nr + in, 0.0f);
      for (std::size_t o = 0; o < out; ++o) {
        const float d = delta[r * out + o];
        db[o] += d;
        float* dw = dW + o * in;
        for (std::size_t i = 0; i < in; ++i) dw[i] += d * ar[i];
        if (l > 0) {
          const float* w = W + o * in;
          for (std::size_t i = 0; i < in; ++i) nr[i] += d * w[i];
        }
      }
      if (l > 0) {
        const activation f = lay.activation_of(l - 1);
        for (std::size_t i = 0; i < in; ++i) nr[i] *= derivative(f, ar[i]);
      }
    }
    if (l > 0) std::swap(delta, next);
  }
}

template <class T>
std::vector<T> to_host(rlk::view<const T> v) {
  rlk::buffer<T, bench_backend> out(bench_backend{}, v.size());
  rlk::copy(bench_backend{}, v, out.view());
  return out.to_host();
}

/// A network of specs[S], its workspace and inputs for a batch of B rows on the backend, and the
/// host arrays of the loop.
template <int S>
struct mlp_fixture {
  std::size_t num_envs;  // B (named as bench_common's fixture_for expects)
  rlk::mlp<float, bench_backend> net;
  rlk::mlp_workspace<float, bench_backend> ws;
  std::vector<float> h_x, h_dy, h_params, h_grads, h_delta, h_next;
  std::vector<std::vector<float>> h_act;
  rlk::buffer<float, bench_backend> x, dy;

  static std::vector<float> uniform(std::size_t n, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& e : v) e = d(gen);
    return v;
  }

  mlp_fixture(std::size_t b, int)
      : num_envs(b),
        net(bench_backend{}, specs[S].sizes, specs[S].hidden, specs[S].output),
        ws(net, b),
        h_x(uniform(b * std::size_t(net.input_size()), 1)),
        h_dy(uniform(b * std::size_t(net.output_size()), 2)),
        x(bench_backend{}, h_x),
        dy(bench_backend{}, h_dy) {
    net.initialize(7);
    const rlk::mlp_layout& lay = net.layout();
    h_params = net.parameters_to_host();
    h_grads.resize(net.num_parameters());
    h_delta.resize(b * std::size_t(lay.max_width()));
    h_next.resize(b * std::size_t(lay.max_width()));
    for (std::size_t l = 0; l < lay.num_layers(); ++l) h_act.emplace_back(b * std::size_t(lay.fan_out(l)));
    check();
  }

  /// The loop and the network agree (to float rounding) on outputs and gradients.
  void check() {
    const std::vector<float> y = to_host(net.forward(x.cview(), ws));
    net.backward(x.cview(), dy.cview(), ws);
    const std::vector<float> g = to_host(rlk::view<const float>(net.gradients()));
    loop_forward(net.layout(), h_params.data(), h_x.data(), num_envs, h_act);
    loop_backward(net.layout(), h_params.data(), h_x.data(), h_dy.data(), num_envs, h_act, h_grads.data(), h_delta,
                  h_next);
    const auto agree = [](const std::vector<float>& a, const std::vector<float>& b) {
      float scale = 1.0f;
      for (float v : b) scale = std::max(scale, std::abs(v));
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::abs(a[i] - b[i]) <= 1e-3f * scale)) return false;
      return a.size() == b.size();
    };
    RLK_EXPECTS(agree(y, h_act.back()) && agree(g, h_grads), rlk::error, "mlp_bench: the loop and ", specs[S].name,
                " disagree at batch ", num_envs);
  }
};

// ---- rlkernels ------------------------------------------------------------------------------------

template <int S>
void BM_mlp_forward(benchmark::State& state) {
  auto& f = fixture_for<mlp_fixture<S>>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    const rlk::view<const float> y = f.net.forward(f.x.cview(), f.ws);
    benchmark::DoNotOptimize(y);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

template <int S>
void BM_mlp_forward_backward(benchmark::State& state) {
  auto& f = fixture_for<mlp_fixture<S>>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    f.net.forward(f.x.cview(), f.ws);
    f.net.backward(f.x.cview(), f.dy.cview(), f.ws);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// ---- the plain loops ------------------------------------------------------------------------------

template <int S>
void BM_mlp_forward_loop(benchmark::State& state) {
  auto& f = fixture_for<mlp_fixture<S>>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    loop_forward(f.net.layout(), f.h_params.data(), f.h_x.data(), f.num_envs, f.h_act);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

template <int S>
void BM_mlp_forward_backward_loop(benchmark::State& state) {
  auto& f = fixture_for<mlp_fixture<S>>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    loop_forward(f.net.layout(), f.h_params.data(), f.h_x.data(), f.num_envs, f.h_act);
    loop_backward(f.net.layout(), f.h_params.data(), f.h_x.data(), f.h_dy.data(), f.num_envs, f.h_act, f.h_grads.data(),
                  f.h_delta, f.h_next);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

template <int S>
void add_rows(std::int64_t batch, const std::string& backend) {
  const std::string net = specs[S].name;
  rlk_bench::add_row("BM_mlp_forward/" + net + "/" + backend, BM_mlp_forward<S>, batch, min_time_s);
  rlk_bench::add_row("BM_mlp_forward_loop/" + net + "/serial", BM_mlp_forward_loop<S>, batch, min_time_s);
  rlk_bench::add_row("BM_mlp_forward_backward/" + net + "/" + backend, BM_mlp_forward_backward<S>, batch, min_time_s);
  rlk_bench::add_row("BM_mlp_forward_backward_loop/" + net + "/serial", BM_mlp_forward_backward_loop<S>, batch,
                     min_time_s);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string backend = rlk::backend_name(bench_backend{});
  // N by N, so each fixture is built once per batch size
  for (const std::int64_t b : batch_sizes) {
    add_rows<0>(b, backend);
    add_rows<1>(b, backend);
    add_rows<2>(b, backend);
  }
  return rlk_bench::run_registered_benchmarks(argc, argv, "mlp_bench");
}
