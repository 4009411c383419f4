// Tests of rlkernels/losses/ppo.hpp and polyak.hpp: values and statistics against float64 reference
// loops, every gradient against central finite differences in double, the clip-boundary convention
// (ratio exactly 1 +/- eps, both advantage signs), value-clip boundaries, validation, Polyak averaging.
#include "../test_backend.hpp"

#include <rlkernels/losses/polyak.hpp>
#include <rlkernels/losses/ppo.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace {
using rlkernels::buffer;
using B = rlk_test::backend_t;

using rlk_test::make;
using rlk_test::zeros;
inline double fd(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x, std::size_t k) {
  const double h = 1e-6 * std::max(1.0, std::fabs(x[k]));
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
template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

struct ref_ppo {
  double loss, clip_fraction, k1, k3;
};
ref_ppo reference_ppo(const std::vector<double>& lp, const std::vector<double>& old, const std::vector<double>& adv,
                      double eps, bool normalize) {
  const std::size_t n = lp.size();
  std::vector<double> a = adv;
  if (normalize) {
    double m = 0, v = 0;
    for (double x : adv) m += x;
    m /= n;
    for (double x : adv) v += (x - m) * (x - m);
    const double sd = std::sqrt(v / (n - 1));
    for (auto& x : a) x = (x - m) / (sd + 1e-8);
  }
  ref_ppo r{0, 0, 0, 0};
  for (std::size_t i = 0; i < n; ++i) {
    const double ratio = std::exp(lp[i] - old[i]);
    const double c = std::min(std::max(ratio, 1 - eps), 1 + eps);
    r.loss -= std::min(ratio * a[i], c * a[i]) / n;
    r.clip_fraction += (std::fabs(ratio - 1) > eps ? 1.0 : 0.0) / n;
    r.k1 += (old[i] - lp[i]) / n;
    r.k3 += ((ratio - 1) - (lp[i] - old[i])) / n;
  }
  return r;
}
double reference_value(const std::vector<double>& v, const std::vector<double>& R, const std::vector<double>& old,
                       rlkernels::value_loss_form form, double c) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double u = (v[i] - R[i]) * (v[i] - R[i]);
    if (form == rlkernels::value_loss_form::plain) {
      s += 0.5 * u;
      continue;
    }
    const double vc = old[i] + std::min(std::max(v[i] - old[i], -c), c);
    const double cl = (vc - R[i]) * (vc - R[i]);
    s += 0.5 * (form == rlkernels::value_loss_form::clipped_max ? std::max(u, cl) : cl);
  }
  return s / v.size();
}
}  // namespace

TEMPLATE_TEST_CASE("ppo_policy_loss: values, statistics and gradients on random inputs", "[ppo]", float, double) {
  using T = TestType;
  const std::size_t n = 257;
  std::mt19937 gen(3);
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> lp_h(n), old_h(n), adv_h(n);
  for (std::size_t i = 0; i < n; ++i) {
    old_h[i] = T(-1 + 0.5 * nd(gen));
    lp_h[i] = T(old_h[i] + 0.3 * nd(gen));  // ratios both inside and outside [0.8, 1.2]
    adv_h[i] = T(2 + 3 * nd(gen));
  }
  auto lp = make(lp_h), old = make(old_h), adv = make(adv_h);
  auto grad = zeros<T>(n);
  const T eps = T(0.2);
  for (bool normalize : {false, true}) {
    INFO("normalize " << normalize);
    const auto st = rlkernels::ppo_policy_loss(rlk_test::backend(), lp.cview(), old.cview(), adv.cview(), eps, normalize,
                                               grad.view());
    const auto lpd = to_double(lp_h), oldd = to_double(old_h), advd = to_double(adv_h);
    const ref_ppo want = reference_ppo(lpd, oldd, advd, double(eps), normalize);
    CHECK(close(st.loss, want.loss, val_tol<T>()));
    CHECK(close(st.approx_kl_k1, want.k1, val_tol<T>()));
    CHECK(close(st.approx_kl_k3, want.k3, val_tol<T>()));
    CHECK(st.clip_fraction == Approx(want.clip_fraction).margin(1.5 / n));  // float may flip one borderline sample
    CHECK(st.clip_fraction > 0.1);
    CHECK(st.clip_fraction < 0.9);
    const auto g = grad.to_host();
    std::size_t zero = 0;
    for (std::size_t i = 0; i < n; ++i) {
      INFO("i " << i);
      const double want_g =
          fd([&](const std::vector<double>& x) { return reference_ppo(x, oldd, advd, double(eps), normalize).loss; }, lpd, i);
      CHECK(close(g[i], want_g, grad_tol<T>()));
      zero += g[i] == T(0);
    }
    CHECK(zero > 0);  // some samples sit on the clipped, flat side
    // the loss without a gradient view gives the same statistics
    const auto st2 = rlkernels::ppo_policy_loss(rlk_test::backend(), lp.cview(), old.cview(), adv.cview(), eps, normalize);
    CHECK(st2.loss == st.loss);
    CHECK(st2.approx_kl_k3 == st.approx_kl_k3);
  }
}

TEMPLATE_TEST_CASE("ppo_policy_loss: ratio exactly at 1 +/- eps passes the gradient (closed interval)", "[ppo][edges]",
                   float, double) {
  using T = TestType;
  // The ratio the kernel computes is exp(lp - old) in T; eps is set from it so that 1 +/- eps equals
  // that ratio exactly (Sterbenz: r - 1 and 1 - r are exact for r in [0.5, 2]).
  for (int side : {+1, -1}) {
    const T lp0 = T(side * 0.18), r = std::exp(lp0 - T(0));
    const T eps = side > 0 ? r - T(1) : T(1) - r;
    REQUIRE((side > 0 ? T(1) + eps : T(1) - eps) == r);
    // samples: at the boundary with A > 0 and A < 0, and just outside with both signs
    const T outside = std::exp(T(side * 0.3));
    const std::vector<T> lp_h = {lp0, lp0, T(side * 0.3), T(side * 0.3)};
    const std::vector<T> old_h(4, T(0));
    const std::vector<T> adv_h = {T(1.5), T(-2), T(1.5), T(-2)};
    auto lp = make(lp_h), old = make(old_h), adv = make(adv_h);
    auto grad = zeros<T>(4);
    const auto st =
        rlkernels::ppo_policy_loss(rlk_test::backend(), lp.cview(), old.cview(), adv.cview(), eps, false, grad.view());
    const auto g = grad.to_host();
    INFO("side " << side);
    CHECK(g[0] == -adv_h[0] * r / T(4));  // both branches agree at the boundary: -A r / B
    CHECK(g[1] == -adv_h[1] * r / T(4));
    // one-sided differences from inside the interval agree with it (double reference)
    for (int i = 0; i < 2; ++i) {
      // x0 = log of the kernel's ratio in double, so the reference sits on the boundary too
      const double h = 1e-7 * -side, x0 = std::log(double(r));
      auto f = [&](double x) { return -std::min(std::exp(x) * double(adv_h[i]), std::min(std::max(std::exp(x), 1 - double(eps)), 1 + double(eps)) * double(adv_h[i])) / 4; };
      CHECK(close(g[i], (f(x0) - f(x0 + h)) / -h, grad_tol<T>()));
    }
    // outside: clipped (flat) branch where r A would exceed the clipped term, unclipped otherwise
    const bool pos_clipped = side > 0;  // r > 1 + eps with A > 0 -> min picks the clipped term
    CHECK(g[2] == (pos_clipped ? T(0) : -adv_h[2] * outside / T(4)));
    CHECK(g[3] == (pos_clipped ? -adv_h[3] * outside / T(4) : T(0)));
    CHECK(st.clip_fraction == 0.5);  // the boundary samples do not count as clipped
  }
}

TEMPLATE_TEST_CASE("ppo_policy_loss rejects bad arguments", "[ppo][validation]", float, double) {
  using T = TestType;
  auto a = zeros<T>(3), b = zeros<T>(3), c = zeros<T>(2), one = zeros<T>(1);
  const auto be = rlk_test::backend();
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, a.cview(), b.cview(), c.cview(), T(0.2), false), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, a.cview(), b.cview(), a.cview(), T(0), false), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, a.cview(), b.cview(), a.cview(), T(1), false), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, a.cview(), b.cview(), a.cview(), std::numeric_limits<T>::quiet_NaN(), false),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, one.cview(), one.cview(), one.cview(), T(0.2), true), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, a.cview(), b.cview(), a.cview(), T(0.2), false, c.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, rlkernels::view<const T>(), b.cview(), a.cview(), T(0.2), false),
                  std::invalid_argument);
  CHECK_NOTHROW(rlkernels::ppo_policy_loss(be, one.cview(), one.cview(), one.cview(), T(0.2), false));
}

TEMPLATE_TEST_CASE("value_loss: plain, clipped_max and clipped_only", "[ppo][value]", float, double) {
  using T = TestType;
  const std::size_t n = 200;
  std::mt19937 gen(9);
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> v_h(n), r_h(n), o_h(n);
  for (std::size_t i = 0; i < n; ++i) {
    o_h[i] = T(nd(gen));
    v_h[i] = T(o_h[i] + 0.4 * nd(gen));
    r_h[i] = T(o_h[i] + nd(gen));
  }
  const T c = T(0.25);
  // exact clip boundaries (all values exactly representable): v - old = +c and -c
  o_h[0] = T(0.5), v_h[0] = T(0.75), r_h[0] = T(2);
  o_h[1] = T(0.5), v_h[1] = T(0.25), r_h[1] = T(-1);
  auto v = make(v_h), r = make(r_h), o = make(o_h), g = zeros<T>(n);
  const auto vd = to_double(v_h), rd = to_double(r_h), od = to_double(o_h);
  using F = rlkernels::value_loss_form;
  for (F form : {F::plain, F::clipped_max, F::clipped_only}) {
    INFO("form " << int(form));
    const auto st = rlkernels::value_loss(rlk_test::backend(), v.cview(), r.cview(), o.cview(), form, c, g.view());
    CHECK(close(st.loss, reference_value(vd, rd, od, form, double(c)), val_tol<T>()));
    double cf = 0;
    for (std::size_t i = 0; i < n; ++i) cf += (form != F::plain && std::fabs(vd[i] - od[i]) > double(c)) ? 1.0 / n : 0.0;
    CHECK(st.clip_fraction == Approx(cf).margin(1e-12));
    const auto gh = g.to_host();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("i " << i);
      if (i < 2 && form != F::plain) {
        // at |v - old| = c the clip passes the gradient: d/dv 0.5 (v - R)^2 / B
        CHECK(close(gh[i], (vd[i] - rd[i]) / n, grad_tol<T>()));
        continue;
      }
      CHECK(close(gh[i], fd([&](const std::vector<double>& x) { return reference_value(x, rd, od, form, double(c)); }, vd, i),
                  grad_tol<T>()));
    }
  }
  SECTION("plain needs no old values; validation") {
    const auto st = rlkernels::value_loss(rlk_test::backend(), v.cview(), r.cview(), {}, F::plain, T(0));
    CHECK(close(st.loss, reference_value(vd, rd, od, F::plain, 0), val_tol<T>()));
    CHECK_THROWS_AS(rlkernels::value_loss(rlk_test::backend(), v.cview(), r.cview(), {}, F::clipped_max, c),
                    std::invalid_argument);
    CHECK_THROWS_AS(rlkernels::value_loss(rlk_test::backend(), v.cview(), r.cview(), o.cview(), F::clipped_only, T(-1)),
                    std::invalid_argument);
    CHECK_THROWS_AS(rlkernels::value_loss(rlk_test::backend(), v.cview(), o.cview().subview(0, 5), o.cview(), F::plain, c),
                    std::invalid_argument);
    CHECK_THROWS_AS(rlkernels::value_loss(rlk_test::backend(), v.cview(), r.cview(), o.cview(), F(7), c),
                    std::invalid_argument);
  }
}

TEMPLATE_TEST_CASE("entropy bonus helpers: mean entropy and its gradient", "[ppo][entropy]", float, double) {
  using T = TestType;
  const std::size_t A = 4, n = 5;
  std::mt19937 gen(1);
  std::normal_distribution<double> nd(0, 1.5);
  std::vector<T> z_h(n * A);
  for (auto& x : z_h) x = T(nd(gen));
  std::vector<std::uint8_t> m_h(n * A, 1);
  m_h[2] = 0;
  for (std::size_t j = 0; j < A; ++j) m_h[3 * A + j] = 0;  // all masked: H = 0, counted in the mean
  auto z = make(z_h);
  auto m = make(m_h);
  auto ent = zeros<T>(n), g = zeros<T>(n * A);
  const double h = rlkernels::categorical_mean_entropy(rlk_test::backend(), rlkernels::categorical_view<T>{A, z.cview(), m.cview()},
                                                       ent.view(), g.view());
  auto mean_entropy = [&](const std::vector<double>& x) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double mx = -INFINITY, sum = 0, hi = 0;
      for (std::size_t j = 0; j < A; ++j)
        if (m_h[i * A + j]) mx = std::max(mx, x[i * A + j]);
      if (mx == -INFINITY) continue;
      for (std::size_t j = 0; j < A; ++j)
        if (m_h[i * A + j]) sum += std::exp(x[i * A + j] - mx);
      for (std::size_t j = 0; j < A; ++j)
        if (m_h[i * A + j]) {
          const double lp = x[i * A + j] - mx - std::log(sum);
          hi -= std::exp(lp) * lp;
        }
      s += hi;
    }
    return s / n;
  };
  const auto zd = to_double(z_h);
  CHECK(close(h, mean_entropy(zd), val_tol<T>()));
  const auto gh = g.to_host();
  for (std::size_t k = 0; k < n * A; ++k) CHECK(close(gh[k], fd(mean_entropy, zd, k), grad_tol<T>()));

  std::vector<T> mu_h = {T(0.1), T(0.2), T(0.3), T(0.4)}, ls_h = {T(-0.5), T(3), T(-21), T(1)};
  auto mu = make(mu_h), ls = make(ls_h);
  auto ent2 = zeros<T>(2), gl = zeros<T>(4);
  const double hg = rlkernels::gaussian_mean_entropy(rlk_test::backend(), rlkernels::gaussian_view<T>{2, mu.cview(), ls.cview()},
                                                     ent2.view(), gl.view());
  const double c = 0.5 + 0.5 * std::log(2 * M_PI);
  CHECK(close(hg, (4 * c + double(T(-0.5)) + 2 - 20 + 1) / 2, val_tol<T>()));
  CHECK(gl.to_host() == std::vector<T>{T(0.5), T(0), T(0), T(0.5)});
}

TEMPLATE_TEST_CASE("polyak_update", "[polyak]", float, double) {
  using T = TestType;
  const std::size_t n = 3000;  // above openmp's serial_below
  std::mt19937 gen(2);
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> s_h(n), t_h(n);
  for (std::size_t i = 0; i < n; ++i) s_h[i] = T(nd(gen)), t_h[i] = T(nd(gen));
  auto s = make(s_h), t = make(t_h);
  const T tau = T(0.005);
  rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), tau);
  auto got = t.to_host();
  for (std::size_t i = 0; i < n; ++i) REQUIRE(close(got[i], double(tau) * s_h[i] + (1 - double(tau)) * t_h[i], val_tol<T>()));
  t.assign(t_h);
  rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), T(0));
  CHECK(t.to_host() == t_h);
  rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), T(1));
  CHECK(t.to_host() == s_h);
  auto short_t = zeros<T>(5);
  CHECK_THROWS_AS(rlkernels::polyak_update(rlk_test::backend(), s.cview(), short_t.view(), tau), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), T(1.5)), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), T(-0.1)), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::polyak_update(rlk_test::backend(), s.cview(), t.view(), std::numeric_limits<T>::quiet_NaN()),
                  std::invalid_argument);
  CHECK(t.to_host() == s_h);  // rejected calls changed nothing
}

// ---- Device forms: the statistics stay in backend memory ----

namespace {
template <class S>
bool same_bits(const S& a, const S& b) {
  return std::memcmp(&a, &b, sizeof(S)) == 0;
}
}  // namespace

TEMPLATE_TEST_CASE("device forms of the PPO losses write the host forms' bits, with no host wait", "[ppo][device_form]",
                   float, double) {
  using T = TestType;
  REQUIRE(rlkernels::host_sync_counting_enabled);
  const auto be = rlk_test::backend();
  for (std::size_t n : {std::size_t(2), std::size_t(37), std::size_t(9000)}) {  // 9000: several reduction chunks
    INFO("n " << n);
    std::mt19937 gen{static_cast<unsigned>(n)};
    std::normal_distribution<double> nd(0, 1);
    std::vector<T> lp_h(n), old_h(n), adv_h(n), ret_h(n);
    for (std::size_t i = 0; i < n; ++i) {
      old_h[i] = T(-1 + 0.5 * nd(gen));
      lp_h[i] = T(old_h[i] + 0.3 * nd(gen));
      adv_h[i] = T(2 + 3 * nd(gen));
      ret_h[i] = T(nd(gen));
    }
    auto lp = make(lp_h), old = make(old_h), adv = make(adv_h), ret = make(ret_h);
    auto g_host = zeros<T>(n), g_dev = zeros<T>(n);
    auto out = zeros<rlkernels::ppo_policy_stats>(1);
    for (bool normalize : {false, true}) {
      for (bool with_grad : {false, true}) {
        INFO("normalize " << normalize << " grad " << with_grad);
        g_dev.zero();
        const auto host = rlkernels::ppo_policy_loss(be, lp.cview(), old.cview(), adv.cview(), T(0.2), normalize,
                                                     with_grad ? g_host.view() : rlkernels::view<T>());
        rlkernels::reset_host_sync_counts();
        rlkernels::ppo_policy_loss(be, out.view(), lp.cview(), old.cview(), adv.cview(), T(0.2), normalize,
                                   with_grad ? g_dev.view() : rlkernels::view<T>());
        CHECK(rlkernels::host_sync_counts().total() == 0);
        CHECK(same_bits(out.get(0), host));
        if (with_grad) CHECK(g_dev.to_host() == g_host.to_host());
        if constexpr (!rlk_test::on_cuda) {
          // The host form is today's computation, bit for bit: the moments reduced to the host and
          // the normalisation passed by value.
          T norm[2] = {T(0), T(1)};
          if (normalize) {
            namespace d = rlkernels::detail;
            const double m = d::reduce_sum4(be, n, d::load_sum<T>{adv.data()}).a / double(n);
            const double ss = d::reduce_sum4(be, n, d::load_squared_deviation<T>{adv.data(), &m}).a;
            norm[0] = T(m);
            norm[1] = T(1.0 / (std::sqrt(ss / double(n - 1)) + 1e-8));
          }
          const rlkernels::detail::ppo_sample<T> s{lp.data(), old.data(), adv.data(), norm, T(0.2)};
          const auto sums = rlkernels::detail::reduce_sum4(be, n, rlkernels::detail::ppo_stats_kernel<T>{s});
          const double dn = double(n);
          CHECK(same_bits(host, rlkernels::ppo_policy_stats{sums.a / dn, sums.b / dn, sums.c / dn, sums.d / dn}));
        }
      }
    }
    // value loss, every form
    auto vout = zeros<rlkernels::value_loss_stats>(1);
    for (auto form : {rlkernels::value_loss_form::plain, rlkernels::value_loss_form::clipped_max,
                      rlkernels::value_loss_form::clipped_only}) {
      INFO("form " << int(form));
      const auto host = rlkernels::value_loss(be, lp.cview(), ret.cview(), old.cview(), form, T(0.2), g_host.view());
      rlkernels::reset_host_sync_counts();
      rlkernels::value_loss(be, vout.view(), lp.cview(), ret.cview(), old.cview(), form, T(0.2), g_dev.view());
      CHECK(rlkernels::host_sync_counts().total() == 0);
      CHECK(same_bits(vout.get(0), host));
      CHECK(g_dev.to_host() == g_host.to_host());
      if constexpr (!rlk_test::on_cuda) {
        const rlkernels::detail::value_sample<T> s{lp.data(), ret.data(), old.data(), T(0.2), form};
        const auto sums = rlkernels::detail::reduce_sum4(be, n, rlkernels::detail::value_stats_kernel<T>{s});
        CHECK(same_bits(host, rlkernels::value_loss_stats{sums.a / double(n), sums.b / double(n)}));
      }
    }
    // mean entropies (logits [n/2?]: use A = 3 over n rows; Gaussian D = 2)
    const std::size_t A = 3;
    std::vector<T> z_h(n * A), ls_h(n * 2), mu_h(n * 2);
    for (auto& x : z_h) x = T(nd(gen));
    for (auto& x : mu_h) x = T(nd(gen));
    for (auto& x : ls_h) x = T(0.5 * nd(gen));
    auto z = make(z_h), mu = make(mu_h), ls = make(ls_h);
    auto ent = zeros<T>(n), gz_host = zeros<T>(n * A), gz_dev = zeros<T>(n * A);
    auto hout = zeros<double>(1);
    const rlkernels::categorical_view<T> cat{A, z.cview(), {}};
    const double hc = rlkernels::categorical_mean_entropy(be, cat, ent.view(), gz_host.view());
    rlkernels::reset_host_sync_counts();
    rlkernels::categorical_mean_entropy(be, hout.view(), cat, ent.view(), gz_dev.view());
    CHECK(rlkernels::host_sync_counts().total() == 0);
    CHECK(same_bits(hout.get(0), hc));
    CHECK(gz_dev.to_host() == gz_host.to_host());
    const rlkernels::gaussian_view<T> gauss{2, mu.cview(), ls.cview()};
    auto gl_host = zeros<T>(n * 2), gl_dev = zeros<T>(n * 2);
    const double hg = rlkernels::gaussian_mean_entropy(be, gauss, ent.view(), gl_host.view());
    rlkernels::reset_host_sync_counts();
    rlkernels::gaussian_mean_entropy(be, hout.view(), gauss, ent.view(), gl_dev.view());
    CHECK(rlkernels::host_sync_counts().total() == 0);
    CHECK(same_bits(hout.get(0), hg));
    CHECK(gl_dev.to_host() == gl_host.to_host());
    if constexpr (!rlk_test::on_cuda) {
      const auto sums = rlkernels::detail::reduce_sum4(be, n, rlkernels::detail::load_entropy<T>{ent.data()});
      CHECK(same_bits(hg, sums.a / double(n)));
    }
  }
}

TEMPLATE_TEST_CASE("device forms of the PPO losses check their arguments as the host forms do", "[ppo][device_form][validation]",
                   float, double) {
  using T = TestType;
  const auto be = rlk_test::backend();
  auto a = zeros<T>(4), b = zeros<T>(4), c = zeros<T>(3);
  auto out = zeros<rlkernels::ppo_policy_stats>(2);
  auto vout = zeros<rlkernels::value_loss_stats>(1);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, out.view(), a.cview(), b.cview(), a.cview(), T(0.2), false),
                  std::invalid_argument);  // out has 2 elements
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, rlkernels::view<rlkernels::ppo_policy_stats>(), a.cview(), b.cview(),
                                             a.cview(), T(0.2), false),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, out.view().subview(0, 1), a.cview(), b.cview(), c.cview(), T(0.2), false),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::ppo_policy_loss(be, out.view().subview(0, 1), a.cview(), b.cview(), a.cview(), T(1), false),
                  std::invalid_argument);
  CHECK(out.to_host()[0].loss == 0);  // rejected calls wrote nothing
  CHECK_THROWS_AS(rlkernels::value_loss(be, vout.view(), a.cview(), c.cview(), {}, rlkernels::value_loss_form::plain, T(0)),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::value_loss(be, rlkernels::view<rlkernels::value_loss_stats>(), a.cview(), b.cview(), {},
                                        rlkernels::value_loss_form::plain, T(0)),
                  std::invalid_argument);
  auto hout = zeros<double>(1);
  auto ent = zeros<T>(2);
  auto z = zeros<T>(6);
  CHECK_THROWS_AS(rlkernels::categorical_mean_entropy(be, hout.view(), rlkernels::categorical_view<T>{3, z.cview(), {}},
                                                      ent.view().subview(0, 1)),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::categorical_mean_entropy(be, rlkernels::view<double>(),
                                                      rlkernels::categorical_view<T>{3, z.cview(), {}}, ent.view()),
                  std::invalid_argument);
}
