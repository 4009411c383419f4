// benchmarks/losses/losses_bench.cpp
// Samples per second of the loss kernels with their gradients (float), each beside a
// straightforward single-threaded loop computing the same outputs in the same binary: PPO's
// clipped surrogate (loss, clip fraction, both KL estimates, d/d log_probs), the clipped value loss
// (CleanRL's max form), the categorical log-prob over 4 actions (d/d logits), the tanh-Gaussian
// log-prob of one action dimension (d/d mean, d/d log_std), the Huber TD loss over Q-values of 4
// actions (TD errors, d/dQ), the twin-critic loss (SAC/TD3) and SAC's actor loss. Built once per
// backend by rlk_add_variants.
#include <rlkernels/core/memory.hpp>
#include <rlkernels/losses/distributions.hpp>
#include <rlkernels/losses/dqn.hpp>
#include <rlkernels/losses/ppo.hpp>
#include <rlkernels/losses/sac.hpp>

#include <benchmark/benchmark.h>

#include "../bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

namespace rlk = rlkernels;
using rlk_bench::bench_backend;
using rlk_bench::fixture_for;

constexpr std::int64_t batch_sizes[] = {256, 4096, 65536, std::int64_t(1) << 20};
constexpr std::size_t num_actions = 4;
constexpr float clip_eps = 0.2f, alpha = 0.2f;
constexpr double min_time_s = 0.2;

/// Random inputs of every loss for a batch of B (host copies for the loops, backend copies for
/// the kernels) and the gradient outputs.
struct loss_fixture {
  std::size_t num_envs;  // B (named as bench_common's fixture_for expects)
  std::vector<float> h_logp, h_old_logp, h_adv, h_q, h_targets, h_q1, h_q2;
  std::vector<std::int32_t> h_actions;
  rlk::buffer<float, bench_backend> logp, old_logp, adv, q, targets, q1, q2;
  rlk::buffer<std::int32_t, bench_backend> actions;
  rlk::buffer<float, bench_backend> grad_b, grad_b2, grad_b3, grad_q, td_errors;
  std::vector<float> h_grad_b, h_grad_b2, h_grad_b3, h_grad_q, h_td;
  // value loss, categorical and tanh-Gaussian inputs
  std::vector<float> h_old_values, h_logits, h_mean, h_log_std, h_eps, h_out_b;
  rlk::buffer<float, bench_backend> old_values, logits, mean, log_std, eps, out_b;

  static std::vector<float> uniform(std::size_t n, float lo, float hi, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(gen);
    return v;
  }

  loss_fixture(std::size_t b, int)
      : num_envs(b), h_logp(uniform(b, -2.0f, -0.5f, 1)), h_old_logp(uniform(b, -2.0f, -0.5f, 2)),
        h_adv(uniform(b, -1, 1, 3)), h_q(uniform(b * num_actions, -1, 1, 4)), h_targets(uniform(b, -1, 1, 5)),
        h_q1(uniform(b, -1, 1, 6)), h_q2(uniform(b, -1, 1, 7)), h_actions(b),
        logp(bench_backend{}, h_logp), old_logp(bench_backend{}, h_old_logp), adv(bench_backend{}, h_adv),
        q(bench_backend{}, h_q), targets(bench_backend{}, h_targets), q1(bench_backend{}, h_q1),
        q2(bench_backend{}, h_q2), actions(bench_backend{}, b), grad_b(bench_backend{}, b),
        grad_b2(bench_backend{}, b), grad_b3(bench_backend{}, b), grad_q(bench_backend{}, b * num_actions),
        td_errors(bench_backend{}, b), h_grad_b(b), h_grad_b2(b), h_grad_b3(b), h_grad_q(b * num_actions), h_td(b),
        h_old_values(uniform(b, -1, 1, 9)), h_logits(uniform(b * num_actions, -3, 3, 10)),
        h_mean(uniform(b, -1, 1, 11)), h_log_std(uniform(b, -2, 0.5f, 12)), h_eps(uniform(b, -2, 2, 13)), h_out_b(b),
        old_values(bench_backend{}, h_old_values), logits(bench_backend{}, h_logits), mean(bench_backend{}, h_mean),
        log_std(bench_backend{}, h_log_std), eps(bench_backend{}, h_eps), out_b(bench_backend{}, b) {
    std::mt19937 gen(8);
    for (auto& a : h_actions) a = std::int32_t(gen() % num_actions);
    actions.assign(h_actions);
  }
};

// ---- rlkernels ------------------------------------------------------------------------------------

void BM_ppo_policy_loss(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    const rlk::ppo_policy_stats s = rlk::ppo_policy_loss<bench_backend, float>(
        bench_backend{}, f.logp.cview(), f.old_logp.cview(), f.adv.cview(), clip_eps, false, f.grad_b.view());
    benchmark::DoNotOptimize(s);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_td_loss_huber(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const rlk::td_loss_options<float> options{};
  for (auto _ : state) {
    const rlk::td_loss_result r =
        rlk::td_loss<bench_backend, float>(bench_backend{}, f.q.cview(), num_actions, f.actions.cview(),
                                           f.targets.cview(), {}, options, f.td_errors.view(), f.grad_q.view());
    benchmark::DoNotOptimize(r);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_sac_actor_loss(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    const rlk::sac_actor_loss_result r = rlk::sac_actor_loss<bench_backend, float>(
        bench_backend{}, f.logp.cview(), f.q1.cview(), f.q2.cview(), alpha, f.grad_b.view(), f.grad_b2.view(),
        f.grad_b3.view());
    benchmark::DoNotOptimize(r);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_value_loss_clipped(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    const rlk::value_loss_stats r = rlk::value_loss<bench_backend, float>(
        bench_backend{}, f.q1.cview(), f.targets.cview(), f.old_values.cview(), rlk::value_loss_form::clipped_max,
        clip_eps, f.grad_b.view());
    benchmark::DoNotOptimize(r);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_categorical_log_prob(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const rlk::categorical_view<float> dist{num_actions, f.logits.cview(), {}};
  for (auto _ : state) {
    rlk::categorical_log_prob(bench_backend{}, dist, f.actions.cview(), f.out_b.view(), f.grad_q.view());
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_tanh_gaussian_log_prob(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const rlk::gaussian_view<float> dist{1, f.mean.cview(), f.log_std.cview()};
  for (auto _ : state) {
    rlk::tanh_gaussian_log_prob(bench_backend{}, dist, rlk::action_bounds<float>{}, f.eps.cview(), f.out_b.view(),
                                f.grad_b.view(), f.grad_b2.view());
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_twin_critic_loss(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  for (auto _ : state) {
    const rlk::twin_critic_loss_result r = rlk::twin_critic_loss<bench_backend, float>(
        bench_backend{}, f.q1.cview(), f.q2.cview(), f.targets.cview(), 0.5f, f.grad_b.view(), f.grad_b2.view());
    benchmark::DoNotOptimize(r);
    rlk::synchronize(bench_backend{});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// ---- straightforward single-threaded loops (host memory) ----------------------------------------

void BM_value_loss_clipped_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    double loss = 0, clipped = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const float v = f.h_q1[i], r = f.h_targets[i], v_old = f.h_old_values[i];
      const float d = std::min(std::max(v - v_old, -clip_eps), clip_eps);
      const float vc = v_old + d;
      const float e1 = (v - r) * (v - r), e2 = (vc - r) * (vc - r);
      loss += 0.5f * std::max(e1, e2);
      clipped += std::abs(v - v_old) > clip_eps;
      const bool inside = std::abs(v - v_old) <= clip_eps;
      f.h_grad_b[i] = (e1 >= e2 ? (v - r) : (inside ? vc - r : 0.0f)) / float(b);
    }
    benchmark::DoNotOptimize(loss + clipped);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_categorical_log_prob_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    for (std::size_t i = 0; i < b; ++i) {
      const float* z = &f.h_logits[i * num_actions];
      float m = z[0];
      for (std::size_t k = 1; k < num_actions; ++k) m = std::max(m, z[k]);
      float sum = 0;
      for (std::size_t k = 0; k < num_actions; ++k) sum += std::exp(z[k] - m);
      const float log_norm = m + std::log(sum);
      const std::size_t a = std::size_t(f.h_actions[i]);
      f.h_out_b[i] = z[a] - log_norm;
      for (std::size_t k = 0; k < num_actions; ++k)
        f.h_grad_q[i * num_actions + k] = (k == a ? 1.0f : 0.0f) - std::exp(z[k] - log_norm);
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_tanh_gaussian_log_prob_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  const float half_log_two_pi = 0.9189385332f, log_two = 0.6931471806f;
  for (auto _ : state) {
    for (std::size_t i = 0; i < b; ++i) {
      const float ls = std::min(std::max(f.h_log_std[i], -20.0f), 2.0f), sd = std::exp(ls), e = f.h_eps[i];
      const float u = f.h_mean[i] + sd * e;
      const float softplus = std::max(-2 * u, 0.0f) + std::log1p(std::exp(-std::abs(2 * u)));
      f.h_out_b[i] = -0.5f * e * e - ls - half_log_two_pi - 2 * (log_two - u - softplus);
      const float t = std::tanh(u);
      f.h_grad_b[i] = 2 * t;
      f.h_grad_b2[i] = -1 + 2 * t * sd * e;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_twin_critic_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    double l1 = 0, l2 = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const float d1 = f.h_q1[i] - f.h_targets[i], d2 = f.h_q2[i] - f.h_targets[i];
      l1 += d1 * d1;
      l2 += d2 * d2;
      f.h_grad_b[i] = d1 / float(b);
      f.h_grad_b2[i] = d2 / float(b);
    }
    benchmark::DoNotOptimize(0.5 * (l1 + l2) / double(b));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_ppo_policy_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    double loss = 0, clipped = 0, k1 = 0, k3 = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const float log_ratio = f.h_logp[i] - f.h_old_logp[i];
      const float r = std::exp(log_ratio), a = f.h_adv[i];
      const float rc = std::min(std::max(r, 1 - clip_eps), 1 + clip_eps);
      const bool use_clipped = rc * a < r * a;
      loss -= use_clipped ? rc * a : r * a;
      clipped += std::abs(r - 1) > clip_eps;
      k1 -= log_ratio;
      k3 += (r - 1) - log_ratio;
      f.h_grad_b[i] = (use_clipped && rc != r) ? 0.0f : -a * r / float(b);
    }
    benchmark::DoNotOptimize(loss + clipped + k1 + k3);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_td_loss_huber_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    double loss = 0, abs_sum = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const std::size_t a = std::size_t(f.h_actions[i]);
      const float x = f.h_q[i * num_actions + a] - f.h_targets[i];
      const float ax = std::abs(x);
      loss += ax <= 1 ? 0.5f * x * x : ax - 0.5f;
      abs_sum += ax;
      f.h_td[i] = -x;
      for (std::size_t k = 0; k < num_actions; ++k) f.h_grad_q[i * num_actions + k] = 0;
      f.h_grad_q[i * num_actions + a] = std::min(std::max(x, -1.0f), 1.0f) / float(b);
    }
    benchmark::DoNotOptimize(loss + abs_sum);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_sac_actor_loop(benchmark::State& state) {
  auto& f = fixture_for<loss_fixture>(std::size_t(state.range(0)), 0);
  const std::size_t b = f.num_envs;
  for (auto _ : state) {
    double loss = 0, entropy = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const float q1 = f.h_q1[i], q2 = f.h_q2[i];
      loss += alpha * f.h_logp[i] - std::min(q1, q2);
      entropy -= f.h_logp[i];
      f.h_grad_b[i] = alpha / float(b);
      const float g = -1.0f / float(b);
      f.h_grad_b2[i] = q1 < q2 ? g : (q1 == q2 ? 0.5f * g : 0.0f);
      f.h_grad_b3[i] = q2 < q1 ? g : (q1 == q2 ? 0.5f * g : 0.0f);
    }
    benchmark::DoNotOptimize(loss + entropy);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string backend = rlk::backend_name(bench_backend{});
  for (const std::int64_t b : batch_sizes) {
    rlk_bench::add_row("BM_ppo_policy_loss/" + backend, BM_ppo_policy_loss, b, min_time_s);
    rlk_bench::add_row("BM_ppo_policy_loop/serial", BM_ppo_policy_loop, b, min_time_s);
    rlk_bench::add_row("BM_value_loss_clipped/" + backend, BM_value_loss_clipped, b, min_time_s);
    rlk_bench::add_row("BM_value_loss_clipped_loop/serial", BM_value_loss_clipped_loop, b, min_time_s);
    rlk_bench::add_row("BM_categorical_log_prob/" + backend, BM_categorical_log_prob, b, min_time_s);
    rlk_bench::add_row("BM_categorical_log_prob_loop/serial", BM_categorical_log_prob_loop, b, min_time_s);
    rlk_bench::add_row("BM_tanh_gaussian_log_prob/" + backend, BM_tanh_gaussian_log_prob, b, min_time_s);
    rlk_bench::add_row("BM_tanh_gaussian_log_prob_loop/serial", BM_tanh_gaussian_log_prob_loop, b, min_time_s);
    rlk_bench::add_row("BM_td_loss_huber/" + backend, BM_td_loss_huber, b, min_time_s);
    rlk_bench::add_row("BM_td_loss_huber_loop/serial", BM_td_loss_huber_loop, b, min_time_s);
    rlk_bench::add_row("BM_twin_critic_loss/" + backend, BM_twin_critic_loss, b, min_time_s);
    rlk_bench::add_row("BM_twin_critic_loop/serial", BM_twin_critic_loop, b, min_time_s);
    rlk_bench::add_row("BM_sac_actor_loss/" + backend, BM_sac_actor_loss, b, min_time_s);
    rlk_bench::add_row("BM_sac_actor_loop/serial", BM_sac_actor_loop, b, min_time_s);
  }
  return rlk_bench::run_registered_benchmarks(argc, argv, "losses_bench");
}
