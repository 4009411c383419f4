// Tests of losses/dqn.hpp, losses/sac.hpp and losses/td3.hpp: every value against a float64
// reference loop written here, every gradient against central finite differences (in double) of
// that reference, plus the edges (|delta| = Huber delta, ties in min(Q1, Q2), importance weights,
// terminated/non-terminated mixes, per-sample discounts, TD3 noise clipping, bounds and
// determinism) and the validation errors.
#include "../test_backend.hpp"

#include <rlkernels/core/memory.hpp>
#include <rlkernels/core/random.hpp>
#include <rlkernels/losses/dqn.hpp>
#include <rlkernels/losses/sac.hpp>
#include <rlkernels/losses/td3.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using namespace rlkernels;
using rlk_test::backend;
using rlk_test::backend_t;

template <class T>
using buf = buffer<T, backend_t>;

template <class T>
buf<T> make(const std::vector<T>& host) {
  return buf<T>(backend(), host);
}

template <class T>
std::vector<T> uniform(std::mt19937_64& gen, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> out(n);
  for (auto& x : out) x = T(d(gen));
  return out;
}

std::vector<std::uint8_t> flags(std::mt19937_64& gen, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t((gen() >> 7) % 3 == 0);  // ~1/3 terminated
  out[0] = 1;
  out[1] = 0;
  return out;
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<double> to_double(const std::vector<double>& v) { return v; }

/// Relative tolerance of values computed in T against a float64 reference.
template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

bool close(double got, double want, double rel, double abs = 0.0) {
  return std::abs(got - want) <= abs + rel * std::max(std::abs(got), std::abs(want));
}

template <class T>
void check_all_close(const std::vector<T>& got, const std::vector<double>& want, double rel, double abs = 0.0) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << double(got[i]) << ", want " << want[i]);
    CHECK(close(double(got[i]), want[i], rel, abs));
  }
}

/// Central finite differences of f at x, element by element (relative step 1e-6).
std::vector<double> finite_differences(const std::function<double(const std::vector<double>&)>& f,
                                       std::vector<double> x) {
  std::vector<double> g(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double x0 = x[k];
    const double h = 1e-6 * std::max(1.0, std::abs(x0));
    x[k] = x0 + h;
    const double up = f(x);
    x[k] = x0 - h;
    const double down = f(x);
    x[k] = x0;
    g[k] = (up - down) / (2 * h);
  }
  return g;
}

/// Gradient check: analytic (from the library) against finite differences of the reference.
void check_gradient(const std::vector<double>& analytic, const std::vector<double>& fd) {
  REQUIRE(analytic.size() == fd.size());
  for (std::size_t k = 0; k < fd.size(); ++k) {
    INFO("gradient element " << k << ": analytic " << analytic[k] << ", finite differences " << fd[k]);
    CHECK(close(analytic[k], fd[k], 1e-6, 1e-9));
  }
}

// ---------------------------------------------------------------- float64 references

std::vector<double> ref_q_targets(const std::vector<double>& r, const std::vector<std::uint8_t>& term,
                                  const std::vector<double>& q_value, const std::vector<double>& q_select,
                                  std::size_t a_n, double gamma, const std::vector<double>& discounts) {
  std::vector<double> y(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::size_t best = 0;
    for (std::size_t a = 1; a < a_n; ++a)
      if (q_select[i * a_n + a] > q_select[i * a_n + best]) best = a;
    const double d = discounts.empty() ? gamma : discounts[i];
    y[i] = r[i] + d * (1.0 - term[i]) * q_value[i * a_n + best];
  }
  return y;
}

double ref_td_loss(const std::vector<double>& q, const std::vector<std::int32_t>& actions, const std::vector<double>& y,
                   const std::vector<double>& w, std::size_t a_n, bool huber, double k) {
  double sum = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double x = q[i * a_n + std::size_t(actions[i])] - y[i];
    double l;
    if (!huber) {
      l = x * x;
    } else if (std::abs(x) <= k) {
      l = 0.5 * x * x;
    } else {
      l = k * (std::abs(x) - 0.5 * k);
    }
    sum += (w.empty() ? 1.0 : w[i]) * l;
  }
  return sum / double(y.size());
}

double ref_twin_loss(const std::vector<double>& q1, const std::vector<double>& q2, const std::vector<double>& y,
                     double scale) {
  double s1 = 0, s2 = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    s1 += (q1[i] - y[i]) * (q1[i] - y[i]);
    s2 += (q2[i] - y[i]) * (q2[i] - y[i]);
  }
  return scale * (s1 / double(y.size()) + s2 / double(y.size()));
}

double ref_sac_actor(const std::vector<double>& logp, const std::vector<double>& q1, const std::vector<double>& q2,
                     double alpha) {
  double s = 0;
  for (std::size_t i = 0; i < logp.size(); ++i) s += alpha * logp[i] - std::min(q1[i], q2[i]);
  return s / double(logp.size());
}

// ---------------------------------------------------------------- DQN targets

}  // namespace

TEMPLATE_TEST_CASE("q_learning_targets and double_q_learning_targets match the reference", "[losses][dqn]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 gen(11);
  const std::size_t b = 37, a_n = 5;
  auto r = uniform<T>(gen, b, -2, 2);
  auto term = flags(gen, b);
  auto q_online = uniform<T>(gen, b * a_n, -3, 3);
  auto q_target = uniform<T>(gen, b * a_n, -3, 3);
  auto disc = uniform<T>(gen, b, 0, 1);
  // Ties in the online argmax: rows 2 and 3 have equal maxima at actions 1 and 3 (lowest index wins).
  for (std::size_t i : {std::size_t(2), std::size_t(3)}) {
    term[i] = 0;
    for (std::size_t a = 0; a < a_n; ++a) q_online[i * a_n + a] = T(-1);
    q_online[i * a_n + 1] = q_online[i * a_n + 3] = T(2);
    q_target[i * a_n + 1] = T(0.25);
    q_target[i * a_n + 3] = T(-1.75);
  }
  const auto rb = make(r), qob = make(q_online), qtb = make(q_target), db = make(disc);
  const auto tb = make(term);
  buf<T> out(backend(), b);
  const T gamma = T(0.97);
  const auto rd = to_double(r), qod = to_double(q_online), qtd = to_double(q_target), dd = to_double(disc);

  SECTION("Q-learning, scalar gamma") {
    q_learning_targets(backend(), rb.cview(), tb.cview(), qtb.cview(), a_n, gamma, out.view());
    check_all_close(out.to_host(), ref_q_targets(rd, term, qtd, qtd, a_n, double(gamma), {}), tol<T>(), 1e-6);
  }
  SECTION("Q-learning, per-sample discounts (n-step)") {
    q_learning_targets(backend(), rb.cview(), tb.cview(), qtb.cview(), a_n, gamma, out.view(), db.cview());
    check_all_close(out.to_host(), ref_q_targets(rd, term, qtd, qtd, a_n, double(gamma), dd), tol<T>(), 1e-6);
  }
  SECTION("Double DQN, scalar gamma, ties pick the lowest index") {
    double_q_learning_targets(backend(), rb.cview(), tb.cview(), qob.cview(), qtb.cview(), a_n, gamma, out.view());
    const auto got = out.to_host();
    check_all_close(got, ref_q_targets(rd, term, qtd, qod, a_n, double(gamma), {}), tol<T>(), 1e-6);
    CHECK(double(got[2]) == Approx(double(r[2]) + double(gamma) * 0.25).epsilon(1e-6));
  }
  SECTION("Double DQN, per-sample discounts") {
    double_q_learning_targets(backend(), rb.cview(), tb.cview(), qob.cview(), qtb.cview(), a_n, gamma, out.view(),
                              db.cview());
    check_all_close(out.to_host(), ref_q_targets(rd, term, qtd, qod, a_n, double(gamma), dd), tol<T>(), 1e-6);
  }
  SECTION("terminated rows give exactly the reward") {
    q_learning_targets(backend(), rb.cview(), tb.cview(), qtb.cview(), a_n, T(1), out.view());
    const auto got = out.to_host();
    for (std::size_t i = 0; i < b; ++i)
      if (term[i]) CHECK(got[i] == r[i]);
  }
}

// ---------------------------------------------------------------- TD loss

TEMPLATE_TEST_CASE("td_loss matches the reference, with finite-difference gradients", "[losses][dqn]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 gen(23);
  const std::size_t b = 41, a_n = 4;
  auto q = uniform<T>(gen, b * a_n, -3, 3);
  auto y = uniform<T>(gen, b, -3, 3);
  auto w = uniform<T>(gen, b, 0.1, 1.0);
  std::vector<std::int32_t> actions(b);
  for (auto& a : actions) a = std::int32_t(gen() % a_n);
  const T k = GENERATE(T(1), T(1.5));
  // |delta| exactly equal to the Huber delta (all values exact in binary): +k and -k.
  q[0 * a_n + std::size_t(actions[0])] = T(0.5) + k;
  y[0] = T(0.5);
  q[1 * a_n + std::size_t(actions[1])] = T(-0.25) - k;
  y[1] = T(-0.25);

  const bool weighted = GENERATE(false, true);
  const td_loss_kind kind = GENERATE(td_loss_kind::mse, td_loss_kind::huber);
  const bool huber = kind == td_loss_kind::huber;
  INFO("delta " << double(k) << ", weighted " << weighted << ", huber " << huber);
  const auto qb = make(q), yb = make(y), wb = make(w);
  const auto ab = make(actions);
  buf<T> td(backend(), b), grad(backend(), b * a_n);
  const view<const T> weights = weighted ? wb.cview() : view<const T>{};
  td_loss_options<T> options;
  options.kind = kind;
  options.huber_delta = k;
  const td_loss_result res =
      td_loss(backend(), qb.cview(), a_n, ab.cview(), yb.cview(), weights, options, td.view(), grad.view());

  const auto qd = to_double(q), yd = to_double(y);
  const std::vector<double> wd = weighted ? to_double(w) : std::vector<double>{};
  const double want = ref_td_loss(qd, actions, yd, wd, a_n, huber, double(k));
  CHECK(close(res.loss, want, tol<T>()));
  std::vector<double> td_want(b);
  double abs_sum = 0;
  for (std::size_t i = 0; i < b; ++i) {
    td_want[i] = yd[i] - qd[i * a_n + std::size_t(actions[i])];
    abs_sum += std::abs(td_want[i]);
  }
  check_all_close(td.to_host(), td_want, tol<T>(), 1e-6);
  CHECK(close(res.mean_abs_td_error, abs_sum / double(b), tol<T>()));

  const auto g = grad.to_host();
  // Only the taken action's entry is nonzero (well, may be zero where delta is 0).
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t a = 0; a < a_n; ++a)
      if (std::int32_t(a) != actions[i]) CHECK(g[i * a_n + a] == T(0));
  if constexpr (std::is_same_v<T, double>) {
    const auto fd = finite_differences(
        [&](const std::vector<double>& x) { return ref_td_loss(x, actions, yd, wd, a_n, huber, double(k)); }, qd);
    check_gradient(to_double(g), fd);
  } else {
    // Float: the analytic gradient in double from the same float inputs.
    std::vector<double> g_want(b * a_n, 0.0);
    for (std::size_t i = 0; i < b; ++i) {
      const double x = qd[i * a_n + std::size_t(actions[i])] - yd[i];
      const double lp = huber ? std::clamp(x, -double(k), double(k)) : 2 * x;
      g_want[i * a_n + std::size_t(actions[i])] = (weighted ? wd[i] : 1.0) * lp / double(b);
    }
    check_all_close(g, g_want, 1e-5, 1e-7);
  }
  if (huber) {
    // At |delta| = k the slope is exactly +-k (both branches agree).
    const double w0 = weighted ? double(w[0]) : 1.0, w1 = weighted ? double(w[1]) : 1.0;
    CHECK(close(double(g[0 * a_n + std::size_t(actions[0])]), w0 * double(k) / double(b), tol<T>()));
    CHECK(close(double(g[1 * a_n + std::size_t(actions[1])]), -w1 * double(k) / double(b), tol<T>()));
  }
}

TEST_CASE("td_loss skips empty outputs and leaves them alone", "[losses][dqn]") {
  const std::size_t b = 3, a_n = 2;
  const auto q = make(std::vector<double>{1, 2, 3, 4, 5, 6});
  const auto y = make(std::vector<double>{0, 0, 0});
  const auto a = make(std::vector<std::int32_t>{0, 1, 1});
  const td_loss_result r = td_loss(backend(), q.cview(), a_n, a.cview(), y.cview(), view<const double>{},
                                   td_loss_options<double>{td_loss_kind::mse, 1.0});
  CHECK(r.loss == Approx((1.0 + 16.0 + 36.0) / 3.0));
  buf<double> td(backend(), b);
  td_loss(backend(), q.cview(), a_n, a.cview(), y.cview(), view<const double>{},
          td_loss_options<double>{td_loss_kind::huber, 2.0}, td.view());
  CHECK(td.to_host() == std::vector<double>{-1, -4, -6});
}

// ---------------------------------------------------------------- SAC

TEMPLATE_TEST_CASE("sac_critic_targets and td3_critic_targets match the reference", "[losses][sac][td3]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 gen(5);
  const std::size_t b = 33;
  auto r = uniform<T>(gen, b, -1, 1);
  auto term = flags(gen, b);
  auto q1 = uniform<T>(gen, b, -5, 5);
  auto q2 = uniform<T>(gen, b, -5, 5);
  auto logp = uniform<T>(gen, b, -4, 1);
  auto disc = uniform<T>(gen, b, 0, 1);
  q2[1] = q1[1];  // a tie
  const auto rb = make(r), q1b = make(q1), q2b = make(q2), lb = make(logp), db = make(disc);
  const auto tb = make(term);
  buf<T> out(backend(), b);
  const T gamma = T(0.99), alpha = GENERATE(T(0), T(0.2));
  const bool per_sample = GENERATE(false, true);
  const view<const T> discounts = per_sample ? db.cview() : view<const T>{};
  auto reference = [&](bool entropy) {
    std::vector<double> y(b);
    for (std::size_t i = 0; i < b; ++i) {
      double v = std::min(double(q1[i]), double(q2[i]));
      if (entropy) v -= double(alpha) * double(logp[i]);
      const double d = per_sample ? double(disc[i]) : double(gamma);
      y[i] = double(r[i]) + d * (term[i] ? 0.0 : 1.0) * v;
    }
    return y;
  };
  sac_critic_targets(backend(), rb.cview(), tb.cview(), q1b.cview(), q2b.cview(), lb.cview(), gamma, alpha, out.view(),
                     discounts);
  check_all_close(out.to_host(), reference(true), tol<T>(), 1e-6);
  td3_critic_targets(backend(), rb.cview(), tb.cview(), q1b.cview(), q2b.cview(), gamma, out.view(), discounts);
  check_all_close(out.to_host(), reference(false), tol<T>(), 1e-6);
}

TEMPLATE_TEST_CASE("twin_critic_loss matches the reference, with finite-difference gradients", "[losses][sac][td3]",
                   float, double) {
  using T = TestType;
  std::mt19937_64 gen(7);
  const std::size_t b = 29;
  auto q1 = uniform<T>(gen, b, -3, 3), q2 = uniform<T>(gen, b, -3, 3), y = uniform<T>(gen, b, -3, 3);
  const auto q1b = make(q1), q2b = make(q2), yb = make(y);
  buf<T> g1(backend(), b), g2(backend(), b);
  const T scale = GENERATE(T(0.5), T(1));
  const bool via_td3 = GENERATE(false, true);
  const twin_critic_loss_result res =
      via_td3 ? td3_critic_loss(backend(), q1b.cview(), q2b.cview(), yb.cview(), g1.view(), g2.view(), scale)
              : twin_critic_loss(backend(), q1b.cview(), q2b.cview(), yb.cview(), scale, g1.view(), g2.view());
  const auto q1d = to_double(q1), q2d = to_double(q2), yd = to_double(y);
  CHECK(close(res.loss, ref_twin_loss(q1d, q2d, yd, double(scale)), tol<T>()));
  CHECK(close(res.q1_loss, ref_twin_loss(q1d, yd, yd, 1.0), tol<T>()));
  CHECK(close(res.q2_loss, ref_twin_loss(yd, q2d, yd, 1.0), tol<T>()));
  std::vector<double> g_want1(b), g_want2(b);
  for (std::size_t i = 0; i < b; ++i) {
    g_want1[i] = 2 * double(scale) * (q1d[i] - yd[i]) / double(b);
    g_want2[i] = 2 * double(scale) * (q2d[i] - yd[i]) / double(b);
  }
  check_all_close(g1.to_host(), g_want1, tol<T>(), 1e-7);
  check_all_close(g2.to_host(), g_want2, tol<T>(), 1e-7);
  if constexpr (std::is_same_v<T, double>) {
    check_gradient(g1.to_host(),
                   finite_differences([&](const std::vector<double>& x) { return ref_twin_loss(x, q2d, yd, scale); }, q1d));
    check_gradient(g2.to_host(),
                   finite_differences([&](const std::vector<double>& x) { return ref_twin_loss(q1d, x, yd, scale); }, q2d));
  }
}

TEMPLATE_TEST_CASE("sac_actor_loss matches the reference; gradients incl. ties", "[losses][sac]", float, double) {
  using T = TestType;
  std::mt19937_64 gen(9);
  const std::size_t b = 31;
  auto logp = uniform<T>(gen, b, -5, 2), q1 = uniform<T>(gen, b, -3, 3), q2 = uniform<T>(gen, b, -3, 3);
  for (std::size_t i : {std::size_t(0), std::size_t(5), std::size_t(6)}) q2[i] = q1[i];  // ties
  const auto lb = make(logp), q1b = make(q1), q2b = make(q2);
  buf<T> gl(backend(), b), g1(backend(), b), g2(backend(), b);
  const T alpha = GENERATE(T(0), T(0.05), T(1.25));
  const sac_actor_loss_result res =
      sac_actor_loss(backend(), lb.cview(), q1b.cview(), q2b.cview(), alpha, gl.view(), g1.view(), g2.view());
  const auto ld = to_double(logp), q1d = to_double(q1), q2d = to_double(q2);
  const double a = double(alpha);
  CHECK(close(res.loss, ref_sac_actor(ld, q1d, q2d, a), tol<T>(), 1e-12));
  double ent = 0;
  for (double x : ld) ent -= x;
  CHECK(close(res.entropy, ent / double(b), tol<T>()));
  const auto h1 = g1.to_host(), h2 = g2.to_host();
  // Ties split the gradient in halves; otherwise it goes to the smaller critic only.
  for (std::size_t i = 0; i < b; ++i) {
    const double full = -1.0 / double(b);
    const double w1 = q1[i] < q2[i] ? full : (q1[i] == q2[i] ? 0.5 * full : 0.0);
    const double w2 = q2[i] < q1[i] ? full : (q1[i] == q2[i] ? 0.5 * full : 0.0);
    CHECK(close(double(h1[i]), w1, tol<T>()));
    CHECK(close(double(h2[i]), w2, tol<T>()));
  }
  for (T x : gl.to_host()) CHECK(close(double(x), a / double(b), tol<T>()));
  if constexpr (std::is_same_v<T, double>) {
    check_gradient(gl.to_host(), finite_differences(
                                     [&](const std::vector<double>& x) { return ref_sac_actor(x, q1d, q2d, a); }, ld));
    check_gradient(h1, finite_differences([&](const std::vector<double>& x) { return ref_sac_actor(ld, x, q2d, a); },
                                          q1d));
    check_gradient(h2, finite_differences([&](const std::vector<double>& x) { return ref_sac_actor(ld, q1d, x, a); },
                                          q2d));
  }
}

TEMPLATE_TEST_CASE("sac_temperature_loss: both forms, values and finite-difference gradients", "[losses][sac]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 gen(13);
  const std::size_t b = 50;
  auto logp = uniform<T>(gen, b, -4, 2);
  const auto lb = make(logp);
  const double target = sac_target_entropy(3);
  CHECK(target == -3.0);
  double mean = 0;
  for (T x : logp) mean += double(x);
  mean /= double(b);
  const double m = mean + target;
  const double log_alpha = GENERATE(-1.5, 0.0, 0.7);
  auto loss_log_alpha_form = [&](double la) { return -la * m; };
  auto loss_alpha_form = [&](double alpha) { return -alpha * m; };
  const double h = 1e-6;
  {
    const auto r = sac_temperature_loss(backend(), lb.cview(), T(log_alpha), T(target), sac_temperature_form::log_alpha);
    CHECK(close(r.mean_log_prob, mean, tol<T>(), 1e-12));
    CHECK(close(r.loss, loss_log_alpha_form(double(T(log_alpha))), tol<T>(), 1e-6));
    const double la = double(T(log_alpha));
    CHECK(close(r.grad_log_alpha, (loss_log_alpha_form(la + h) - loss_log_alpha_form(la - h)) / (2 * h), 1e-5));
    // As a function of alpha: L = -log(alpha) * m.
    const double alpha = std::exp(la);
    CHECK(close(r.grad_alpha, (-std::log(alpha + h) * m + std::log(alpha - h) * m) / (2 * h), 1e-5));
  }
  {
    const auto r = sac_temperature_loss(backend(), lb.cview(), T(log_alpha), T(target), sac_temperature_form::alpha);
    const double la = double(T(log_alpha)), alpha = std::exp(la);
    CHECK(close(r.loss, loss_alpha_form(alpha), tol<T>(), 1e-6));
    CHECK(close(r.grad_alpha, (loss_alpha_form(alpha + h) - loss_alpha_form(alpha - h)) / (2 * h), 1e-5));
    CHECK(close(r.grad_log_alpha,
                (loss_alpha_form(std::exp(la + h)) - loss_alpha_form(std::exp(la - h))) / (2 * h), 1e-5));
  }
  CHECK_THROWS_AS(sac_target_entropy(0), std::invalid_argument);
}

// ---------------------------------------------------------------- TD3

TEMPLATE_TEST_CASE("td3_smoothed_target_actions: reference, clipping, bounds, determinism", "[losses][td3]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 gen(17);
  const std::size_t b = 512, d = 3, n = b * d;
  auto mu = uniform<T>(gen, n, -1.2, 1.2);
  const auto mb = make(mu);
  buf<T> out(backend(), n), again(backend(), n);
  const std::uint64_t seed = 1234, draw = 7;
  const T low = T(-1), high = T(1);

  SECTION("values against the reference, noise clipped and actions bounded") {
    const T noise_std = GENERATE(T(0.2), T(3));
    const T noise_clip = T(0.5);
    td3_smoothed_target_actions(backend(), mb.cview(), seed, draw, noise_std, noise_clip, low, high, out.view());
    const auto got = out.to_host();
    std::size_t clipped_noise = 0, at_bounds = 0;
    for (std::size_t k = 0; k < n; ++k) {
      // The reference draws the same Philox bits on the host, in double from T's uniforms.
      const double eps = double(td3_smoothing_eps<T>(seed, draw, k));
      const double noise = std::clamp(double(noise_std) * eps, -double(noise_clip), double(noise_clip));
      const double want = std::clamp(double(mu[k]) + noise, double(low), double(high));
      INFO("element " << k);
      CHECK(close(double(got[k]), want, 1e-5, 1e-5));
      CHECK(got[k] >= low);
      CHECK(got[k] <= high);
      CHECK(std::abs(double(got[k]) - std::clamp(double(mu[k]), -1.0, 1.0)) <= double(noise_clip) + 1e-6);
      clipped_noise += std::abs(double(noise_std) * eps) > double(noise_clip);
      at_bounds += got[k] == low || got[k] == high;
    }
    CHECK(clipped_noise > 0);  // the clip was exercised
    CHECK(at_bounds > 0);      // so were the bounds
    if (noise_std == T(3)) CHECK(clipped_noise > n / 2);
  }
  SECTION("deterministic per (seed, draw); new noise for a new draw or seed") {
    td3_smoothed_target_actions(backend(), mb.cview(), seed, draw, T(0.2), T(0.5), low, high, out.view());
    td3_smoothed_target_actions(backend(), mb.cview(), seed, draw, T(0.2), T(0.5), low, high, again.view());
    CHECK(out.to_host() == again.to_host());
    td3_smoothed_target_actions(backend(), mb.cview(), seed, draw + 1, T(0.2), T(0.5), low, high, again.view());
    CHECK(out.to_host() != again.to_host());
    td3_smoothed_target_actions(backend(), mb.cview(), seed + 1, draw, T(0.2), T(0.5), low, high, again.view());
    CHECK(out.to_host() != again.to_host());
  }
  SECTION("noise statistics without clipping") {
    std::vector<T> zeros(n, T(0));
    const auto zb = make(zeros);
    td3_smoothed_target_actions(backend(), zb.cview(), seed, draw, T(0.1), T(100), T(-100), T(100), out.view());
    double s = 0, s2 = 0;
    for (T x : out.to_host()) {
      s += double(x);
      s2 += double(x) * double(x);
    }
    const double mean = s / double(n), sd = std::sqrt(s2 / double(n) - mean * mean);
    CHECK(std::abs(mean) < 0.01);      // 4 standard errors of 0.1 / sqrt(1536)
    CHECK(std::abs(sd - 0.1) < 0.01);
  }
  SECTION("zero noise gives clip(mu, low, high)") {
    td3_smoothed_target_actions(backend(), mb.cview(), seed, draw, T(0), T(0.5), low, high, out.view());
    const auto got = out.to_host();
    for (std::size_t k = 0; k < n; ++k) CHECK(got[k] == std::clamp(mu[k], low, high));
  }
}

TEMPLATE_TEST_CASE("td3_actor_loss and the delayed-update rule", "[losses][td3]", float, double) {
  using T = TestType;
  std::mt19937_64 gen(19);
  const std::size_t b = 27;
  auto q1 = uniform<T>(gen, b, -4, 4);
  const auto qb = make(q1);
  buf<T> g(backend(), b);
  const double loss = td3_actor_loss(backend(), qb.cview(), g.view());
  const auto qd = to_double(q1);
  auto reference = [&](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += v;
    return -s / double(x.size());
  };
  CHECK(close(loss, reference(qd), tol<T>(), 1e-12));
  if constexpr (std::is_same_v<T, double>) {
    check_gradient(g.to_host(), finite_differences(reference, qd));
  } else {
    for (T x : g.to_host()) CHECK(close(double(x), -1.0 / double(b), tol<T>()));
  }
  std::vector<int> updates;
  for (std::uint64_t u = 1; u <= 7; ++u)
    if (td3_should_update_actor(u, 2)) updates.push_back(int(u));
  CHECK(updates == std::vector<int>{2, 4, 6});
  CHECK(td3_should_update_actor(5, 1));
  CHECK(td3_should_update_actor(3, 3));
  CHECK_FALSE(td3_should_update_actor(4, 3));
  CHECK_THROWS_AS(td3_should_update_actor(3, 0), std::invalid_argument);
  CHECK_THROWS_AS(td3_should_update_actor(0, 2), std::invalid_argument);
}

// ---------------------------------------------------------------- validation

TEST_CASE("value-based losses reject bad input before writing anything", "[losses][validation]") {
  using T = double;
  const std::size_t b = 4, a_n = 3;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto r = make(std::vector<T>{1, 2, 3, 4});
  const auto term = make(std::vector<std::uint8_t>{0, 1, 0, 0});
  const auto q = make(std::vector<T>(b * a_n, 0.5));
  const auto q_short = make(std::vector<T>(b * a_n - 1, 0.5));
  const auto vb = make(std::vector<T>(b, 0.5));
  const auto short_b = make(std::vector<T>(b - 1, 0.5));
  const auto actions = make(std::vector<std::int32_t>{0, 2, 1, 0});
  const auto bad_actions = make(std::vector<std::int32_t>{0, 2, 3, 0});
  const auto neg_actions = make(std::vector<std::int32_t>{0, -1, 1, 0});
  const view<const T> null_b(nullptr, b);
  buf<T> out(backend(), b), grad(backend(), b * a_n), out_short(backend(), b - 1);
  const std::vector<T> sentinel(b, T(-7));
  const std::vector<T> sentinel_grad(b * a_n, T(-7));
  out.assign(sentinel);
  grad.assign(sentinel_grad);
  const auto be = backend();
  using IA = std::invalid_argument;

  // DQN targets
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(1.5), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(-0.1), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(nan), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q_short.cview(), a_n, T(0.9), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), 0, T(0.9), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(0.9), out_short.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(0.9), out.view(), short_b.cview()),
                  IA);
  CHECK_THROWS_AS(q_learning_targets(be, null_b, term.cview(), q.cview(), a_n, T(0.9), out.view()), IA);
  CHECK_THROWS_AS(q_learning_targets(be, view<const T>{}, view<const std::uint8_t>{}, view<const T>{}, a_n, T(0.9),
                                     view<T>{}),
                  IA);
  CHECK_THROWS_AS(double_q_learning_targets(be, r.cview(), term.cview(), q_short.cview(), q.cview(), a_n, T(0.9),
                                            out.view()),
                  IA);
  CHECK_THROWS_WITH(q_learning_targets(be, r.cview(), term.cview(), q.cview(), a_n, T(1.5), out.view()),
                    Catch::Contains("gamma") && Catch::Contains("1.5"));

  // TD loss
  const td_loss_options<T> huber{td_loss_kind::huber, 1.0};
  auto td = [&](view<const std::int32_t> a, view<const T> w, td_loss_options<T> o, view<T> td_out, view<T> g) {
    return td_loss(be, q.cview(), a_n, a, vb.cview(), w, o, td_out, g);
  };
  CHECK_THROWS_WITH(td(bad_actions.cview(), {}, huber, out.view(), grad.view()),
                    Catch::Contains("actions[2] = 3") && Catch::Contains("[0, 3)"));
  CHECK_THROWS_WITH(td(neg_actions.cview(), {}, huber, out.view(), grad.view()), Catch::Contains("actions[1] = -1"));
  CHECK_THROWS_AS(td(actions.cview(), {}, td_loss_options<T>{td_loss_kind::huber, 0.0}, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), {}, td_loss_options<T>{td_loss_kind::huber, -1.0}, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), {}, td_loss_options<T>{td_loss_kind::huber, nan}, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), {}, td_loss_options<T>{td_loss_kind(7), 1.0}, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), short_b.cview(), huber, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), null_b, huber, out.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), {}, huber, out_short.view(), grad.view()), IA);
  CHECK_THROWS_AS(td(actions.cview(), {}, huber, out.view(), view<T>(grad.data(), b)), IA);
  CHECK_THROWS_AS(td_loss(be, q.cview(), 0, actions.cview(), vb.cview(), {}, huber), IA);
  CHECK_THROWS_AS(td_loss(be, q_short.cview(), a_n, actions.cview(), vb.cview(), {}, huber), IA);
  // mse ignores huber_delta
  CHECK_NOTHROW(td_loss(be, q.cview(), a_n, actions.cview(), vb.cview(), {}, td_loss_options<T>{td_loss_kind::mse, 0.0}));

  // SAC / TD3
  CHECK_THROWS_AS(sac_critic_targets(be, r.cview(), term.cview(), vb.cview(), vb.cview(), vb.cview(), T(0.99), T(-0.1),
                                     out.view()),
                  IA);
  CHECK_THROWS_AS(sac_critic_targets(be, r.cview(), term.cview(), vb.cview(), vb.cview(), vb.cview(), T(0.99), T(nan),
                                     out.view()),
                  IA);
  CHECK_THROWS_AS(sac_critic_targets(be, r.cview(), term.cview(), vb.cview(), vb.cview(), short_b.cview(), T(0.99),
                                     T(0.1), out.view()),
                  IA);
  CHECK_THROWS_AS(sac_critic_targets(be, r.cview(), term.cview(), vb.cview(), null_b, vb.cview(), T(0.99), T(0.1),
                                     out.view()),
                  IA);
  CHECK_THROWS_AS(sac_critic_targets(be, r.cview(), term.cview(), vb.cview(), vb.cview(), vb.cview(), T(1.01), T(0.1),
                                     out.view()),
                  IA);
  CHECK_THROWS_AS(td3_critic_targets(be, r.cview(), term.cview(), vb.cview(), short_b.cview(), T(0.99), out.view()),
                  IA);
  CHECK_THROWS_AS(td3_critic_targets(be, r.cview(), term.cview(), vb.cview(), vb.cview(), T(nan), out.view()), IA);
  CHECK_THROWS_AS(twin_critic_loss(be, vb.cview(), vb.cview(), vb.cview(), T(0), out.view()), IA);
  CHECK_THROWS_AS(twin_critic_loss(be, vb.cview(), vb.cview(), vb.cview(), T(nan), out.view()), IA);
  CHECK_THROWS_AS(twin_critic_loss(be, vb.cview(), short_b.cview(), vb.cview(), T(1), out.view()), IA);
  CHECK_THROWS_AS(twin_critic_loss(be, vb.cview(), vb.cview(), vb.cview(), T(1), out_short.view()), IA);
  CHECK_THROWS_AS(sac_actor_loss(be, vb.cview(), vb.cview(), vb.cview(), T(-1), out.view()), IA);
  CHECK_THROWS_AS(sac_actor_loss(be, vb.cview(), vb.cview(), vb.cview(), T(nan), out.view()), IA);
  CHECK_THROWS_AS(sac_actor_loss(be, vb.cview(), null_b, vb.cview(), T(1), out.view()), IA);
  CHECK_THROWS_AS(sac_actor_loss(be, view<const T>{}, view<const T>{}, view<const T>{}, T(1)), IA);
  CHECK_THROWS_AS(sac_temperature_loss(be, vb.cview(), T(nan), T(-1)), IA);
  CHECK_THROWS_AS(sac_temperature_loss(be, vb.cview(), T(0), T(nan)), IA);
  CHECK_THROWS_AS(sac_temperature_loss(be, null_b, T(0), T(-1)), IA);
  CHECK_THROWS_AS(sac_temperature_loss(be, vb.cview(), T(0), T(-1), sac_temperature_form(9)), IA);
  CHECK_THROWS_AS(td3_actor_loss(be, vb.cview(), out_short.view()), IA);
  CHECK_THROWS_AS(td3_actor_loss(be, view<const T>{}), IA);
  auto smooth = [&](T std_, T clip, T lo, T hi, view<T> o) {
    td3_smoothed_target_actions(be, vb.cview(), 1, 2, std_, clip, lo, hi, o);
  };
  CHECK_THROWS_AS(smooth(T(-0.1), T(0.5), T(-1), T(1), out.view()), IA);
  CHECK_THROWS_AS(smooth(T(nan), T(0.5), T(-1), T(1), out.view()), IA);
  CHECK_THROWS_AS(smooth(T(0.1), T(-0.5), T(-1), T(1), out.view()), IA);
  CHECK_THROWS_AS(smooth(T(0.1), T(0.5), T(1), T(-1), out.view()), IA);
  CHECK_THROWS_AS(smooth(T(0.1), T(0.5), T(nan), T(1), out.view()), IA);
  CHECK_THROWS_AS(smooth(T(0.1), T(0.5), T(-1), T(1), out_short.view()), IA);

  // Nothing was written by any rejected call.
  CHECK(out.to_host() == sentinel);
  CHECK(grad.to_host() == sentinel_grad);
}

// ---- Device forms: statistics in backend memory, actions checked through a device flag ----

namespace {
template <class S>
bool same_bits(const S& a, const S& b) {
  return std::memcmp(&a, &b, sizeof(S)) == 0;
}
}  // namespace

TEMPLATE_TEST_CASE("device forms of td_loss, the twin-critic, SAC and TD3 losses write the host forms' bits, no host wait",
                   "[losses][device_form]", float, double) {
  using T = TestType;
  REQUIRE(host_sync_counting_enabled);
  const auto be = backend();
  for (const std::size_t b : {std::size_t(3), std::size_t(9000)}) {  // 9000: several reduction chunks
    INFO("B " << b);
    std::mt19937_64 gen(b);
    const std::size_t a_n = 4;
    const auto q = make(uniform<T>(gen, b * a_n, -3, 3));
    const auto y = make(uniform<T>(gen, b, -3, 3));
    const auto w = make(uniform<T>(gen, b, 0.1, 1));
    const auto q1 = make(uniform<T>(gen, b, -2, 2)), q2 = make(uniform<T>(gen, b, -2, 2));
    const auto lp = make(uniform<T>(gen, b, -3, 1));
    std::vector<std::int32_t> a_h(b);
    for (auto& a : a_h) a = std::int32_t(gen() % a_n);
    const auto actions = make(a_h);
    buf<T> td_h(be, b), td_d(be, b), g_h(be, b * a_n), g_d(be, b * a_n);
    for (auto kind : {td_loss_kind::mse, td_loss_kind::huber}) {
      for (bool weighted : {false, true}) {
        const td_loss_options<T> o{kind, T(1)};
        const view<const T> wv = weighted ? w.cview() : view<const T>();
        const td_loss_result host = td_loss(be, q.cview(), a_n, actions.cview(), y.cview(), wv, o, td_h.view(), g_h.view());
        buf<td_loss_result> out(be, 1);
        buf<action_range_flag> flag(be, 1);
        reset_host_sync_counts();
        td_loss(be, out.view(), q.cview(), a_n, actions.cview(), y.cview(), wv, o, td_d.view(), g_d.view(), flag.view());
        CHECK(host_sync_counts().total() == 0);
        CHECK(same_bits(out.get(0), host));
        CHECK(td_d.to_host() == td_h.to_host());
        CHECK(g_d.to_host() == g_h.to_host());
        CHECK(flag.get(0).bad == 0);
        CHECK_NOTHROW(check_action_range(be, flag.view()));
        if constexpr (!rlk_test::on_cuda) {  // today's computation: the sums reduced to the host
          const auto sums = detail::vb_reduce(be, b,
                                              detail::td_loss_term<T>{q.data(), actions.data(), y.data(), wv.data(), a_n,
                                                                      kind == td_loss_kind::huber, T(1)});
          CHECK(same_bits(host, td_loss_result{sums.first / double(b), sums.second / double(b)}));
        }
      }
    }
    // twin critic and TD3's critic
    buf<T> g1h(be, b), g2h(be, b), g1d(be, b), g2d(be, b);
    buf<twin_critic_loss_result> tout(be, 1);
    const auto th = twin_critic_loss(be, q1.cview(), q2.cview(), y.cview(), T(0.5), g1h.view(), g2h.view());
    reset_host_sync_counts();
    twin_critic_loss(be, tout.view(), q1.cview(), q2.cview(), y.cview(), T(0.5), g1d.view(), g2d.view());
    CHECK(host_sync_counts().total() == 0);
    CHECK(same_bits(tout.get(0), th));
    CHECK(g1d.to_host() == g1h.to_host());
    CHECK(g2d.to_host() == g2h.to_host());
    if constexpr (!rlk_test::on_cuda) {
      const auto sums = detail::vb_reduce(be, b, detail::twin_critic_term<T>{q1.data(), q2.data(), y.data()});
      twin_critic_loss_result want;
      want.q1_loss = sums.first / double(b);
      want.q2_loss = sums.second / double(b);
      want.loss = 0.5 * (want.q1_loss + want.q2_loss);
      CHECK(same_bits(th, want));
    }
    const auto t3h = td3_critic_loss(be, q1.cview(), q2.cview(), y.cview());
    reset_host_sync_counts();
    td3_critic_loss(be, tout.view(), q1.cview(), q2.cview(), y.cview());
    CHECK(host_sync_counts().total() == 0);
    CHECK(same_bits(tout.get(0), t3h));
    // SAC actor
    buf<T> glh(be, b), gld(be, b);
    buf<sac_actor_loss_result> aout(be, 1);
    const auto ah = sac_actor_loss(be, lp.cview(), q1.cview(), q2.cview(), T(0.2), glh.view(), g1h.view(), g2h.view());
    reset_host_sync_counts();
    sac_actor_loss(be, aout.view(), lp.cview(), q1.cview(), q2.cview(), T(0.2), gld.view(), g1d.view(), g2d.view());
    CHECK(host_sync_counts().total() == 0);
    CHECK(same_bits(aout.get(0), ah));
    CHECK(gld.to_host() == glh.to_host());
    CHECK(g1d.to_host() == g1h.to_host());
    if constexpr (!rlk_test::on_cuda) {
      const auto sums = detail::vb_reduce(be, b, detail::sac_actor_term<T>{lp.data(), q1.data(), q2.data(), T(0.2)});
      CHECK(same_bits(ah, sac_actor_loss_result{sums.first / double(b), -sums.second / double(b)}));
    }
    // SAC temperature, both forms, log_alpha on the host and in backend memory
    for (auto form : {sac_temperature_form::log_alpha, sac_temperature_form::alpha}) {
      INFO("form " << int(form));
      const T la = T(-0.7);
      buf<sac_temperature_loss_result> out(be, 1);
      const auto h = sac_temperature_loss(be, lp.cview(), la, T(-2), form);
      reset_host_sync_counts();
      sac_temperature_loss(be, out.view(), lp.cview(), la, T(-2), form);
      CHECK(host_sync_counts().total() == 0);
      CHECK(same_bits(out.get(0), h));
      if constexpr (!rlk_test::on_cuda) {
        const double m = detail::vb_reduce(be, b, detail::sum_log_probs_term<T>{lp.data()}).first / double(b);
        const double mm = m + double(T(-2)), alpha = std::exp(double(la));
        CHECK(h.mean_log_prob == m);
        if (form == sac_temperature_form::log_alpha) {
          CHECK(h.loss == -double(la) * mm);
          CHECK(h.grad_alpha == -mm / alpha);
        } else {
          CHECK(h.loss == -alpha * mm);
          CHECK(h.grad_log_alpha == -alpha * mm);
        }
      }
      const auto la_dev = make(std::vector<T>{la});
      reset_host_sync_counts();
      sac_temperature_loss(be, out.view(), lp.cview(), la_dev.cview(), T(-2), form);
      CHECK(host_sync_counts().total() == 0);
      const auto d = out.get(0);
      if constexpr (!rlk_test::on_cuda) {
        CHECK(same_bits(d, h));
      } else {
        CHECK(d.loss == Approx(h.loss).epsilon(1e-15));  // exp on the device may differ in the last bit
      }
    }
    // TD3 actor
    buf<double> lout(be, 1);
    const double l = td3_actor_loss(be, q1.cview(), g1h.view());
    reset_host_sync_counts();
    td3_actor_loss(be, lout.view(), q1.cview(), g1d.view());
    CHECK(host_sync_counts().total() == 0);
    CHECK(same_bits(lout.get(0), l));
    CHECK(g1d.to_host() == g1h.to_host());
    if constexpr (!rlk_test::on_cuda) {
      CHECK(same_bits(l, -detail::vb_reduce(be, b, detail::td3_actor_term<T>{q1.data()}).first / double(b)));
    }
  }
}

TEST_CASE("td_loss device form: out-of-range actions are left out and recorded in the flag", "[losses][dqn][device_form]") {
  using T = float;
  const auto be = backend();
  const std::size_t b = 5000, a_n = 3;  // 5000: more than one warp and block on CUDA
  std::mt19937_64 gen(4);
  const auto q = make(uniform<T>(gen, b * a_n, -3, 3));
  const auto y = make(uniform<T>(gen, b, -3, 3));
  std::vector<std::int32_t> a_h(b);
  for (auto& a : a_h) a = std::int32_t(gen() % a_n);
  std::vector<std::int32_t> bad_h = a_h;
  bad_h[4321] = 7;
  bad_h[1234] = -2;  // the first bad one
  bad_h[4999] = 3;
  const auto actions = make(a_h), bad = make(bad_h);
  const td_loss_options<T> o{td_loss_kind::huber, T(1)};
  buf<td_loss_result> out(be, 1);
  buf<action_range_flag> flag(be, 1);
  buf<T> td(be, b), g(be, b * a_n);
  td.assign(std::vector<T>(b, T(9)));
  reset_host_sync_counts();
  td_loss(be, out.view(), q.cview(), a_n, bad.cview(), y.cview(), {}, o, td.view(), g.view(), flag.view());
  CHECK(host_sync_counts().total() == 0);
  const action_range_flag f = flag.get(0);
  CHECK(f.bad == 1235);
  CHECK(f.value == -2);
  CHECK(f.num_actions == a_n);
  // The bad samples count as zero: the sums equal those of the good samples alone.
  const auto td_host = td.to_host(), g_host = g.to_host();
  CHECK(td_host[1234] == 0);
  CHECK(td_host[4321] == 0);
  CHECK(g_host[4999 * a_n + 2] == 0);
  std::vector<T> w_h(b, T(1));
  for (std::size_t i : {std::size_t(1234), std::size_t(4321), std::size_t(4999)}) w_h[i] = T(0);
  std::vector<std::int32_t> fixed = bad_h;
  for (std::size_t i : {std::size_t(1234), std::size_t(4321), std::size_t(4999)}) fixed[i] = 0;
  const auto w = make(w_h);
  const auto fixed_actions = make(fixed);
  const td_loss_result want = td_loss(be, q.cview(), a_n, fixed_actions.cview(), y.cview(), w.cview(), o);
  CHECK(out.get(0).loss == Approx(want.loss).epsilon(1e-12));
  // A second failing call keeps the first record; check_action_range reports it once, with the host form's message.
  td_loss(be, out.view(), q.cview().subview(4000 * a_n, 1000 * a_n), a_n, bad.cview().subview(4000, 1000), y.cview().subview(4000, 1000), {}, o,
          view<T>(), view<T>(), flag.view());
  CHECK(flag.get(0).bad == 1235);
  CHECK_THROWS_WITH(check_action_range(be, flag.view()),
                    Catch::Contains("rlkernels::td_loss: actions[1234] = -2 is out of range [0, 3)"));
  CHECK(flag.get(0).bad == 0);
  CHECK_NOTHROW(check_action_range(be, flag.view()));
  CHECK_THROWS_WITH(td_loss(be, q.cview(), a_n, bad.cview(), y.cview(), {}, o),
                    Catch::Contains("rlkernels::td_loss: actions[1234] = -2 is out of range [0, 3)"));
  // Good actions: the flag stays clear.
  td_loss(be, out.view(), q.cview(), a_n, actions.cview(), y.cview(), {}, o, view<T>(), view<T>(), flag.view());
  CHECK(flag.get(0).bad == 0);
  CHECK_THROWS_AS(td_loss(be, view<td_loss_result>(), q.cview(), a_n, actions.cview(), y.cview(), {}, o),
                  std::invalid_argument);
  buf<action_range_flag> two(be, 2);
  CHECK_THROWS_AS(td_loss(be, out.view(), q.cview(), a_n, actions.cview(), y.cview(), {}, o, view<T>(), view<T>(), two.view()),
                  std::invalid_argument);
}
