// Tests of rlkernels/losses/distributions.hpp: values against float64 reference loops, every gradient
// against central finite differences in double, masking/clamp/|u| > 10 edges, sampling statistics,
// determinism per seed, and argument validation.
#include "../test_backend.hpp"

#include <rlkernels/losses/distributions.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace {
using rlkernels::buffer;
using rlkernels::view;
using B = rlk_test::backend_t;

using rlk_test::make;
using rlk_test::zeros;

/// Central finite difference of f at x[k] in double (step 1e-6 relative).
/// `abs_step` > 0 forces an absolute step (logits: the softmax depends on differences, so a step
/// relative to |logit| = 1e4 would be far too coarse).
inline double fd(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x, std::size_t k,
                 double abs_step = 0) {
  const double h = abs_step > 0 ? abs_step : 1e-6 * std::max(1.0, std::fabs(x[k]));
  const double x0 = x[k];
  x[k] = x0 + h;
  const double fp = f(x);
  x[k] = x0 - h;
  const double fm = f(x);
  return (fp - fm) / (2 * h);
}

template <class T>
double val_tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}
template <class T>
double grad_tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-6;
}
inline bool close(double got, double want, double tol) { return std::fabs(got - want) <= tol * (1 + std::fabs(want)); }

// ---- float64 references ----
// log p(a) over legal entries of a row; all-masked: 0; masked action: -inf.
double ref_log_prob(const std::vector<double>& z, const std::vector<std::uint8_t>& m, int a) {
  double mx = -INFINITY;
  bool any = false;
  for (std::size_t j = 0; j < z.size(); ++j)
    if (m.empty() || m[j]) mx = any ? std::max(mx, z[j]) : z[j], any = true;
  if (!any) return 0;
  if (!m.empty() && !m[a]) return -INFINITY;
  double s = 0;
  for (std::size_t j = 0; j < z.size(); ++j)
    if (m.empty() || m[j]) s += std::exp(z[j] - mx);
  return z[a] - mx - std::log(s);
}
double ref_entropy(const std::vector<double>& z, const std::vector<std::uint8_t>& m) {
  double h = 0;
  bool any = false;
  for (std::size_t j = 0; j < z.size(); ++j) {
    if (!m.empty() && !m[j]) continue;
    any = true;
    const double lp = ref_log_prob(z, m, int(j));
    h -= std::exp(lp) * lp;
  }
  return any ? h : 0;
}
double clampd(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }
double ref_gauss_row(const std::vector<double>& a, const std::vector<double>& mu, const std::vector<double>& ls) {
  double s = 0;
  for (std::size_t d = 0; d < a.size(); ++d) {
    const double l = clampd(ls[d], -20, 2), sd = std::exp(l);
    s += -0.5 * (a[d] - mu[d]) * (a[d] - mu[d]) / (sd * sd) - l - 0.5 * std::log(2 * M_PI);
  }
  return s;
}
// log-density of a = c + h tanh(u), u = mu + std eps, written directly (no stable rewrite).
double ref_tanh_row(const std::vector<double>& mu, const std::vector<double>& ls, const std::vector<double>& eps,
                    const std::vector<double>& half) {
  double s = 0;
  for (std::size_t d = 0; d < mu.size(); ++d) {
    const double l = clampd(ls[d], -20, 2), sd = std::exp(l);
    const double u = mu[d] + sd * eps[d];
    const double sech2 = 4.0 / std::pow(std::exp(u) + std::exp(-u), 2.0);
    // (u - mu) / sd is eps: the density of u under the reparameterisation
    s += -0.5 * eps[d] * eps[d] - l - 0.5 * std::log(2 * M_PI) - std::log(half[d] * sech2);
  }
  return s;
}
}  // namespace

TEMPLATE_TEST_CASE("categorical log_prob and entropy: values and gradients", "[distributions][categorical]", float,
                   double) {
  using T = TestType;
  const std::size_t A = 5;
  std::mt19937 gen(7);
  std::normal_distribution<double> nd(0, 2);
  // rows 0-3 random (row 1 with a mask), row 4 all masked, rows 5-6 logits of magnitude 1e4,
  // row 7 extreme and masked around the max.
  std::vector<std::vector<double>> rows;
  for (int r = 0; r < 8; ++r) {
    std::vector<double> z(A);
    for (auto& x : z) x = nd(gen);
    if (r == 5) z = {1e4, -1e4, 9999.5, 0.0, 1e4 - 3};
    if (r == 6) z = {-1e4, -1e4 + 1, -1e4 + 0.25, -9998.0, -1e4};
    if (r == 7) z = {1e4, 2.0, -1e4, 5.0, 3.0};
    rows.push_back(z);
  }
  std::vector<std::vector<std::uint8_t>> masks(8, std::vector<std::uint8_t>(A, 1));
  masks[1] = {1, 0, 1, 1, 0};
  masks[4] = {0, 0, 0, 0, 0};
  masks[7] = {0, 1, 1, 1, 1};
  const std::vector<std::int32_t> acts = {0, 2, 4, 1, 3, 2, 3, 4};
  const std::size_t Bn = rows.size();
  std::vector<T> logits_h;
  std::vector<std::uint8_t> mask_h;
  for (std::size_t r = 0; r < Bn; ++r)
    for (std::size_t j = 0; j < A; ++j) logits_h.push_back(T(rows[r][j])), mask_h.push_back(masks[r][j]);
  // the kernel sees T-rounded logits; the reference uses the same values in double
  for (std::size_t r = 0; r < Bn; ++r)
    for (std::size_t j = 0; j < A; ++j) rows[r][j] = double(logits_h[r * A + j]);
  std::vector<T> cot_h(Bn);
  for (auto& c : cot_h) c = T(nd(gen));

  auto logits = make(logits_h);
  auto mask = make(mask_h);
  auto actions = make(acts);
  auto lp = zeros<T>(Bn), ent = zeros<T>(Bn), g = zeros<T>(Bn * A), ge = zeros<T>(Bn * A);
  auto cot = make(cot_h);
  const rlkernels::categorical_view<T> dist{A, logits.cview(), mask.cview()};
  rlkernels::categorical_log_prob(rlk_test::backend(), dist, actions.cview(), lp.view(), g.view(), cot.cview());
  rlkernels::categorical_entropy(rlk_test::backend(), dist, ent.view(), ge.view(), cot.cview());
  const auto lp_h = lp.to_host(), ent_h = ent.to_host(), g_h = g.to_host(), ge_h = ge.to_host();
  for (std::size_t r = 0; r < Bn; ++r) {
    const double scale = 1 + std::fabs(*std::max_element(rows[r].begin(), rows[r].end(),
                                                         [](double a, double b) { return std::fabs(a) < std::fabs(b); }));
    INFO("row " << r);
    CHECK(close(lp_h[r], ref_log_prob(rows[r], masks[r], acts[r]), val_tol<T>() * scale));
    CHECK(close(ent_h[r], ref_entropy(rows[r], masks[r]), val_tol<T>() * scale));
    for (std::size_t j = 0; j < A; ++j) {
      INFO("j " << j);
      const double c = double(cot_h[r]);
      const double want = c * fd([&](const std::vector<double>& z) { return ref_log_prob(z, masks[r], acts[r]); }, rows[r], j, 1e-5);
      CHECK(close(g_h[r * A + j], want, grad_tol<T>()));
      const double want_e = c * fd([&](const std::vector<double>& z) { return ref_entropy(z, masks[r]); }, rows[r], j, 1e-5);
      CHECK(close(ge_h[r * A + j], want_e, grad_tol<T>()));
      if (!masks[r][j]) CHECK(g_h[r * A + j] == T(0));
    }
  }
  // all-masked row: log p = 0, entropy 0, zero gradient (documented convention)
  CHECK(lp_h[4] == T(0));
  CHECK(ent_h[4] == T(0));
  for (std::size_t j = 0; j < A; ++j) CHECK((g_h[4 * A + j] == T(0) && ge_h[4 * A + j] == T(0)));

  SECTION("no mask, no cotangent, no gradient view") {
    const rlkernels::categorical_view<T> nomask{A, logits.cview(), {}};
    rlkernels::categorical_log_prob(rlk_test::backend(), nomask, actions.cview(), lp.view());
    const auto h = lp.to_host();
    for (std::size_t r = 0; r < Bn; ++r) CHECK(close(h[r], ref_log_prob(rows[r], {}, acts[r]), val_tol<T>() * 2e4));
  }
  SECTION("masked action gives -inf, out-of-range action gives NaN") {
    auto bad = make(std::vector<std::int32_t>{1, 1, 0, -1, 0, 5, 0, 0});  // row 1: action 1 is masked
    rlkernels::categorical_log_prob(rlk_test::backend(), dist, bad.cview(), lp.view(), g.view());
    const auto h = lp.to_host(), gh = g.to_host();
    CHECK(h[1] == -std::numeric_limits<T>::infinity());
    for (std::size_t j = 0; j < A; ++j) CHECK(gh[1 * A + j] == T(0));
    CHECK(std::isnan(h[3]));
    CHECK(std::isnan(h[5]));
    CHECK(std::isnan(gh[3 * A]));
    CHECK(h[4] == T(0));  // all masked wins over nothing: action 0 is in range
  }
}

TEMPLATE_TEST_CASE("categorical sample: frequencies, masks, determinism", "[distributions][categorical][sample]", float,
                   double) {
  using T = TestType;
  const std::size_t A = 4, Bn = 20000;
  const std::vector<double> z = {0.5, -1.0, 2.0, 0.0};
  const std::vector<std::uint8_t> m = {1, 1, 0, 1};  // the most likely action is masked
  std::vector<T> logits_h;
  std::vector<std::uint8_t> mask_h;
  for (std::size_t i = 0; i < Bn; ++i)
    for (std::size_t j = 0; j < A; ++j) logits_h.push_back(T(z[j])), mask_h.push_back(m[j]);
  mask_h[(Bn - 1) * A + 0] = mask_h[(Bn - 1) * A + 1] = mask_h[(Bn - 1) * A + 3] = 0;  // last row all masked
  auto logits = make(logits_h);
  auto mask = make(mask_h);
  auto acts = zeros<std::int32_t>(Bn);
  const rlkernels::categorical_view<T> dist{A, logits.cview(), mask.cview()};
  rlkernels::categorical_sample(rlk_test::backend(), dist, 1234, 0, acts.view());
  const auto a = acts.to_host();
  CHECK(a[Bn - 1] == -1);
  std::vector<double> count(A, 0);
  for (std::size_t i = 0; i + 1 < Bn; ++i) {
    REQUIRE(a[i] >= 0);
    REQUIRE(a[i] < std::int32_t(A));
    count[a[i]] += 1;
  }
  CHECK(count[2] == 0);
  double chi2 = 0;
  for (std::size_t j = 0; j < A; ++j) {
    if (!m[j]) continue;
    const double expect = double(Bn - 1) * std::exp(ref_log_prob(z, m, int(j)));
    chi2 += (count[j] - expect) * (count[j] - expect) / expect;
  }
  CHECK(chi2 < 13.8);  // chi-square with 2 degrees of freedom, p = 0.001

  // determinism: same (seed, draw) gives the same actions; rows do not depend on the batch size
  auto again = zeros<std::int32_t>(Bn);
  rlkernels::categorical_sample(rlk_test::backend(), dist, 1234, 0, again.view());
  CHECK(again.to_host() == a);
  const rlkernels::categorical_view<T> head{A, logits.cview().subview(0, 10 * A), mask.cview().subview(0, 10 * A)};
  auto small = zeros<std::int32_t>(10);
  rlkernels::categorical_sample(rlk_test::backend(), head, 1234, 0, small.view());
  CHECK(small.to_host() == std::vector<std::int32_t>(a.begin(), a.begin() + 10));
  rlkernels::categorical_sample(rlk_test::backend(), dist, 1234, 1, again.view());
  CHECK(again.to_host() != a);

  // extreme logits: the 1e4 entry always wins, no NaN
  auto ext = make(std::vector<T>{T(1e4), T(-1e4), T(0), T(9990)});
  auto one = zeros<std::int32_t>(1);
  rlkernels::categorical_sample(rlk_test::backend(), rlkernels::categorical_view<T>{A, ext.cview(), {}}, 9, 3, one.view());
  CHECK(one.get(0) == 0);
}

TEMPLATE_TEST_CASE("gaussian log_prob and entropy: values, gradients, clamp", "[distributions][gaussian]", float, double) {
  using T = TestType;
  const std::size_t D = 3, Bn = 6;
  std::mt19937 gen(11);
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> mu_h(Bn * D), ls_h(Bn * D), a_h(Bn * D), cot_h(Bn);
  for (std::size_t k = 0; k < Bn * D; ++k) {
    mu_h[k] = T(nd(gen));
    ls_h[k] = T(0.5 * nd(gen));
    a_h[k] = T(nd(gen));
  }
  for (auto& c : cot_h) c = T(nd(gen));
  // clamp edges: exactly at the bounds and beyond them
  ls_h[3] = T(-20);
  ls_h[4] = T(2);
  ls_h[5] = T(-25);
  ls_h[6] = T(3.5);
  ls_h[7] = T(1.99);
  a_h[3] = mu_h[3] + T(1e-9);  // std = e^-20: |z| of order 1
  a_h[5] = mu_h[5] - T(2e-9);
  auto mu = make(mu_h), ls = make(ls_h), a = make(a_h), cot = make(cot_h);
  auto lp = zeros<T>(Bn), ent = zeros<T>(Bn), gm = zeros<T>(Bn * D), gl = zeros<T>(Bn * D), gle = zeros<T>(Bn * D);
  const rlkernels::gaussian_view<T> dist{D, mu.cview(), ls.cview()};
  rlkernels::gaussian_log_prob(rlk_test::backend(), dist, a.cview(), lp.view(), gm.view(), gl.view(), cot.cview());
  rlkernels::gaussian_entropy(rlk_test::backend(), dist, ent.view(), gle.view(), cot.cview());
  const auto lp_h = lp.to_host(), ent_h = ent.to_host(), gm_h = gm.to_host(), gl_h = gl.to_host(), gle_h = gle.to_host();
  for (std::size_t i = 0; i < Bn; ++i) {
    INFO("row " << i);
    std::vector<double> av(D), mv(D), lv(D);
    for (std::size_t d = 0; d < D; ++d) av[d] = a_h[i * D + d], mv[d] = mu_h[i * D + d], lv[d] = ls_h[i * D + d];
    const double want = ref_gauss_row(av, mv, lv);
    CHECK(close(lp_h[i], want, val_tol<T>() * 10));
    double h = 0;
    for (std::size_t d = 0; d < D; ++d) h += 0.5 + 0.5 * std::log(2 * M_PI) + clampd(lv[d], -20, 2);
    CHECK(close(ent_h[i], h, val_tol<T>()));
    const double c = cot_h[i];
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t k = i * D + d;
      INFO("k " << k);
      const double dm = c * fd([&](const std::vector<double>& x) { return ref_gauss_row(av, x, lv); }, mv, d);
      CHECK(close(gm_h[k], dm, grad_tol<T>()));
      const bool at_bound = lv[d] == -20 || lv[d] == 2;
      if (at_bound) {
        // closed interval: the gradient is the inside one (one-sided difference from inside), z^2 - 1
        const double z = (av[d] - mv[d]) / std::exp(lv[d]);
        CHECK(close(gl_h[k], c * (z * z - 1), grad_tol<T>()));
        CHECK(gle_h[k] == T(cot_h[i]));
      } else {
        const double dl = c * fd([&](const std::vector<double>& x) { return ref_gauss_row(av, mv, x); }, lv, d);
        CHECK(close(gl_h[k], dl, grad_tol<T>()));
        double he = 0;
        auto ent_row = [&](const std::vector<double>& x) {
          he = 0;
          for (double v : x) he += clampd(v, -20, 2);
          return he;
        };
        CHECK(close(gle_h[k], c * fd(ent_row, lv, d), grad_tol<T>()));
      }
    }
  }
  CHECK(gl_h[5] == T(0));  // beyond the clamp: zero
  CHECK(gl_h[6] == T(0));
  CHECK(gle_h[5] == T(0));
}

TEMPLATE_TEST_CASE("gaussian and tanh-gaussian sampling", "[distributions][gaussian][sample]", float, double) {
  using T = TestType;
  const std::size_t D = 2, Bn = 20000;
  std::vector<T> mu_h(Bn * D), ls_h(Bn * D);
  for (std::size_t i = 0; i < Bn; ++i) mu_h[i * D] = T(1.5), mu_h[i * D + 1] = T(-0.5), ls_h[i * D] = T(std::log(0.5)),
                                        ls_h[i * D + 1] = T(5);  // clamped to 2
  auto mu = make(mu_h), ls = make(ls_h);
  const rlkernels::gaussian_view<T> dist{D, mu.cview(), ls.cview()};
  auto a = zeros<T>(Bn * D), eps = zeros<T>(Bn * D);
  rlkernels::gaussian_sample(rlk_test::backend(), dist, 42, 0, a.view(), eps.view());
  const auto ah = a.to_host(), eh = eps.to_host();
  const double want_std[2] = {0.5, std::exp(2.0)}, want_mean[2] = {1.5, -0.5};
  for (std::size_t d = 0; d < D; ++d) {
    double s = 0, s2 = 0;
    for (std::size_t i = 0; i < Bn; ++i) s += ah[i * D + d];
    const double m = s / Bn;
    for (std::size_t i = 0; i < Bn; ++i) s2 += (ah[i * D + d] - m) * (ah[i * D + d] - m);
    const double sd = std::sqrt(s2 / (Bn - 1));
    CHECK(std::fabs(m - want_mean[d]) < 4 * want_std[d] / std::sqrt(double(Bn)));
    CHECK(std::fabs(sd / want_std[d] - 1) < 0.03);
  }
  for (std::size_t k = 0; k < Bn * D; ++k) {
    const double sd = want_std[k % D];
    REQUIRE(close(ah[k], double(mu_h[k]) + sd * double(eh[k]), val_tol<T>() * 10));
  }
  // determinism and the same noise for the tanh variant
  auto a2 = zeros<T>(Bn * D), e2 = zeros<T>(Bn * D);
  rlkernels::gaussian_sample(rlk_test::backend(), dist, 42, 0, a2.view(), e2.view());
  CHECK(a2.to_host() == ah);
  rlkernels::gaussian_sample(rlk_test::backend(), dist, 42, 1, a2.view());
  CHECK(a2.to_host() != ah);
  auto lo = make(std::vector<T>{T(-2), T(0)}), hi = make(std::vector<T>{T(2), T(1)});
  const rlkernels::action_bounds<T> bounds{lo.cview(), hi.cview()};
  rlkernels::tanh_gaussian_sample(rlk_test::backend(), dist, bounds, 42, 0, a2.view(), e2.view());
  CHECK(e2.to_host() == eh);
  const auto th = a2.to_host();
  for (std::size_t k = 0; k < Bn * D; ++k) {
    const double u = double(mu_h[k]) + want_std[k % D] * double(eh[k]);
    const double l = k % D == 0 ? -2 : 0, h = k % D == 0 ? 2 : 1;
    REQUIRE(th[k] >= T(l));
    REQUIRE(th[k] <= T(h));
    REQUIRE(close(th[k], (h + l) / 2 + (h - l) / 2 * std::tanh(u), val_tol<T>() * 10));
  }
}

TEMPLATE_TEST_CASE("tanh-gaussian log_prob and action backward: values, gradients, |u| > 10",
                   "[distributions][tanh_gaussian]", float, double) {
  using T = TestType;
  const std::size_t D = 2, Bn = 7;
  std::mt19937 gen(5);
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> mu_h(Bn * D), ls_h(Bn * D), eps_h(Bn * D), cot_h(Bn), ga_h(Bn * D);
  for (std::size_t k = 0; k < Bn * D; ++k) mu_h[k] = T(nd(gen)), ls_h[k] = T(0.3 * nd(gen)), eps_h[k] = T(nd(gen)),
                                           ga_h[k] = T(nd(gen));
  for (auto& c : cot_h) c = T(nd(gen));
  mu_h[2] = T(12);    // |u| > 10
  mu_h[3] = T(-15);
  mu_h[4] = T(30);    // tanh(u) == 1 in both precisions
  mu_h[5] = T(-40);
  ls_h[6] = T(2);     // at the upper clamp
  ls_h[7] = T(-21);   // beyond the lower clamp
  ls_h[8] = T(4);     // beyond the upper clamp
  auto mu = make(mu_h), ls = make(ls_h), eps = make(eps_h), cot = make(cot_h), ga = make(ga_h);
  auto lo = make(std::vector<T>{T(-2), T(0)}), hi = make(std::vector<T>{T(2), T(1)});
  const std::vector<double> half = {2.0, 0.5};
  const rlkernels::gaussian_view<T> dist{D, mu.cview(), ls.cview()};
  const rlkernels::action_bounds<T> bounds{lo.cview(), hi.cview()};
  auto lp = zeros<T>(Bn), gm = zeros<T>(Bn * D), gl = zeros<T>(Bn * D), bm = zeros<T>(Bn * D), bl = zeros<T>(Bn * D);
  rlkernels::tanh_gaussian_log_prob(rlk_test::backend(), dist, bounds, eps.cview(), lp.view(), gm.view(), gl.view(),
                                    cot.cview());
  rlkernels::tanh_gaussian_action_backward(rlk_test::backend(), dist, bounds, eps.cview(), ga.cview(), bm.view(), bl.view());
  const auto lp_h = lp.to_host(), gm_h = gm.to_host(), gl_h = gl.to_host(), bm_h = bm.to_host(), bl_h = bl.to_host();
  for (std::size_t i = 0; i < Bn; ++i) {
    INFO("row " << i);
    std::vector<double> mv(D), lv(D), ev(D);
    for (std::size_t d = 0; d < D; ++d) mv[d] = mu_h[i * D + d], lv[d] = ls_h[i * D + d], ev[d] = eps_h[i * D + d];
    const double want = ref_tanh_row(mv, lv, ev, half);
    REQUIRE(std::isfinite(lp_h[i]));
    CHECK(close(lp_h[i], want, val_tol<T>() * 10));
    const double c = cot_h[i];
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t k = i * D + d;
      INFO("k " << k);
      CHECK(close(gm_h[k], c * fd([&](const std::vector<double>& x) { return ref_tanh_row(x, lv, ev, half); }, mv, d),
                  grad_tol<T>()));
      // action a(mean, log_std) with eps fixed, for the backward pass
      auto act = [&](const std::vector<double>& m, const std::vector<double>& l) {
        const double u = m[d] + std::exp(clampd(l[d], -20, 2)) * ev[d];
        return (d == 0 ? 0.0 : 0.5) + half[d] * std::tanh(u);
      };
      CHECK(close(bm_h[k], ga_h[k] * fd([&](const std::vector<double>& x) { return act(x, lv); }, mv, d), grad_tol<T>()));
      if (lv[d] == 2) {
        const double u = mv[d] + std::exp(2.0) * ev[d];
        CHECK(close(gl_h[k], c * (-1 + 2 * std::tanh(u) * std::exp(2.0) * ev[d]), grad_tol<T>()));
      } else {
        CHECK(close(gl_h[k], c * fd([&](const std::vector<double>& x) { return ref_tanh_row(mv, x, ev, half); }, lv, d),
                    grad_tol<T>()));
        CHECK(close(bl_h[k], ga_h[k] * fd([&](const std::vector<double>& x) { return act(mv, x); }, lv, d), grad_tol<T>()));
      }
    }
  }
  CHECK(gl_h[7] == T(0));
  CHECK(gl_h[8] == T(0));
  CHECK(bl_h[7] == T(0));

  SECTION("accumulate adds onto the existing gradient; default bounds are [-1, 1]") {
    rlkernels::tanh_gaussian_action_backward(rlk_test::backend(), dist, bounds, eps.cview(), ga.cview(), bm.view(),
                                             bl.view(), true);
    const auto twice = bm.to_host();
    for (std::size_t k = 0; k < Bn * D; ++k) CHECK(twice[k] == bm_h[k] + bm_h[k]);
    rlkernels::tanh_gaussian_log_prob(rlk_test::backend(), dist, {}, eps.cview(), lp.view());
    const auto unscaled = lp.to_host();
    for (std::size_t i = 0; i < Bn; ++i)
      CHECK(close(unscaled[i], lp_h[i] + std::log(2.0) + std::log(0.5), val_tol<T>() * 10));
  }
}

TEMPLATE_TEST_CASE("distributions reject bad arguments", "[distributions][validation]", float, double) {
  using T = TestType;
  auto logits = zeros<T>(6), out = zeros<T>(2), out3 = zeros<T>(3), g5 = zeros<T>(5);
  auto acts = zeros<std::int32_t>(2), acts3 = zeros<std::int32_t>(3);
  auto mask5 = zeros<std::uint8_t>(5);
  const auto be = rlk_test::backend();
  const rlkernels::categorical_view<T> c{3, logits.cview(), {}};
  CHECK_THROWS_AS(rlkernels::categorical_log_prob(be, c, acts3.cview(), out.view()), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_log_prob(be, c, acts.cview(), out3.view()), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_log_prob(be, c, acts.cview(), out.view(), g5.view()), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_log_prob(be, rlkernels::categorical_view<T>{4, logits.cview(), {}}, acts.cview(),
                                                  out.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_entropy(be, rlkernels::categorical_view<T>{3, logits.cview(), mask5.cview()},
                                                 out.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_sample(be, rlkernels::categorical_view<T>{0, logits.cview(), {}}, 1, 0, acts.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_sample(be, c, 1, 0, view<std::int32_t>()), std::invalid_argument);
  const rlkernels::gaussian_view<T> g{3, logits.cview(), logits.cview()};
  CHECK_THROWS_AS(rlkernels::gaussian_log_prob(be, g, out3.cview(), out.view()), std::invalid_argument);
  rlkernels::gaussian_view<T> bad = g;
  bad.log_std_min = T(3);
  CHECK_THROWS_AS(rlkernels::gaussian_entropy(be, bad, out.view()), std::invalid_argument);
  bad = g;
  bad.log_std_max = std::numeric_limits<T>::quiet_NaN();
  CHECK_THROWS_AS(rlkernels::gaussian_entropy(be, bad, out.view()), std::invalid_argument);
  bad = g;
  bad.log_std = out.cview();
  CHECK_THROWS_AS(rlkernels::gaussian_sample(be, bad, 1, 0, logits.view()), std::invalid_argument);
  auto b3 = zeros<T>(3);
  CHECK_THROWS_AS(rlkernels::tanh_gaussian_sample(be, g, rlkernels::action_bounds<T>{b3.cview(), {}}, 1, 0, logits.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::tanh_gaussian_log_prob(be, g, {}, out.cview(), out.view()), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::tanh_gaussian_action_backward(be, g, {}, logits.cview(), out.cview(), logits.view(), {}),
                  std::invalid_argument);
  // a rejected call writes nothing
  auto keep = make(std::vector<T>{T(7), T(8)});
  CHECK_THROWS_AS(rlkernels::categorical_log_prob(be, c, acts.cview(), keep.view(), g5.view()), std::invalid_argument);
  CHECK(keep.to_host() == std::vector<T>{T(7), T(8)});
}
