// Return estimators (gae, lambda_returns, n_step_returns, vtrace) and normalisers
// (normalize_advantages, running_mean_std) against float64 reference loops written plainly here,
// on random [T, N] rollouts with random episode ends, in float and double, on the backend of this
// build variant.
#include "../test_backend.hpp"

#include <rlkernels/core/memory.hpp>
#include <rlkernels/estimators/gae.hpp>
#include <rlkernels/estimators/normalization.hpp>
#include <rlkernels/estimators/returns.hpp>
#include <rlkernels/estimators/vtrace.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

namespace rlk = rlkernels;
using backend_t = rlk_test::backend_t;
template <class T>
using dbuf = rlk::buffer<T, backend_t>;

// ---- data -----------------------------------------------------------------------------------------

/// A rollout on the host in double; every value is representable in the T under test, so the
/// reference loops see exactly the kernel's inputs.
struct host_rollout {
  std::size_t T = 0, N = 0;
  std::vector<double> rewards, values, boot, last;  // [T, N] x 3, [N]
  std::vector<std::uint8_t> term, trunc;            // [T, N]
  std::size_t k(std::size_t t, std::size_t i) const { return t * N + i; }
  bool done(std::size_t t, std::size_t i) const { return term[k(t, i)] || trunc[k(t, i)]; }
};

template <class T>
double round_to(double x) { return double(T(x)); }

/// Random rewards, values and flags; env 0 terminates at t = 0, env 1 is truncated at t = T - 1,
/// env 2 has both flags at t = T / 2, env 3 terminates at T - 1, env 4 is truncated at t = 0 and
/// env 5 never ends (where N is large enough).
template <class T>
host_rollout make_rollout(std::size_t steps, std::size_t envs, std::uint64_t seed, double p_term = 0.08,
                          double p_trunc = 0.06) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
  host_rollout h;
  h.T = steps;
  h.N = envs;
  h.rewards.resize(steps * envs);
  h.values.resize(steps * envs);
  h.boot.resize(steps * envs);
  h.last.resize(envs);
  h.term.resize(steps * envs);
  h.trunc.resize(steps * envs);
  for (std::size_t k = 0; k < steps * envs; ++k) {
    h.rewards[k] = round_to<T>(u(gen));
    h.values[k] = round_to<T>(2.0 * u(gen));
    h.boot[k] = round_to<T>(2.0 * u(gen));
    h.term[k] = p(gen) < p_term;
    h.trunc[k] = p(gen) < p_trunc;
  }
  for (auto& v : h.last) v = round_to<T>(2.0 * u(gen));
  const auto set = [&](std::size_t i, std::size_t t, bool te, bool tr) {
    if (i >= envs) return;
    h.term[h.k(t, i)] = te;
    h.trunc[h.k(t, i)] = tr;
  };
  set(0, 0, true, false);
  set(1, steps - 1, false, true);
  set(2, steps / 2, true, true);
  set(3, steps - 1, true, false);
  set(4, 0, false, true);
  if (envs > 5)
    for (std::size_t t = 0; t < steps; ++t) set(5, t, false, false);
  return h;
}

template <class T>
std::vector<T> to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// The rollout in backend memory.
template <class T>
struct device_rollout {
  std::size_t steps, envs;
  dbuf<T> rewards, values, boot, last;
  dbuf<std::uint8_t> term, trunc;
  explicit device_rollout(const host_rollout& h)
      : steps(h.T), envs(h.N), rewards(rlk_test::backend(), to<T>(h.rewards)), values(rlk_test::backend(), to<T>(h.values)),
        boot(rlk_test::backend(), to<T>(h.boot)), last(rlk_test::backend(), to<T>(h.last)),
        term(rlk_test::backend(), h.term), trunc(rlk_test::backend(), h.trunc) {}
  rlk::rollout_view<T> view() const {
    rlk::rollout_view<T> r;
    r.num_steps = steps;
    r.num_envs = envs;
    r.rewards = rewards.cview();
    r.values = values.cview();
    r.bootstrap_values = boot.cview();
    r.last_values = last.cview();
    r.terminated = term.cview();
    r.truncated = trunc.cview();
    return r;
  }
};

template <class T>
double tolerance() { return std::is_same_v<T, float> ? 1e-4 : 1e-11; }

/// Every element within tol * (1 + |reference|); reports the first one that is not.
template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, double tol, const char* what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const bool ok = std::abs(double(got[k]) - want[k]) <= tol * (1.0 + std::abs(want[k]));
    if (!ok && bad++ == 0) first = k;
  }
  INFO(what << ": " << bad << " of " << got.size() << " elements differ; first at " << first << ": got "
            << (bad ? double(got[first]) : 0.0) << ", want " << (bad ? want[first] : 0.0));
  CHECK(bad == 0);
}

// ---- float64 references ------------------------------------------------------------------------------

/// V(s') of step t as a learner would have it: V(final observation) where truncated, otherwise
/// the value of the next observation (V[t + 1] or last_values). Termination is applied by the mask.
double v_next(const host_rollout& h, std::size_t t, std::size_t i) {
  if (h.trunc[h.k(t, i)]) return h.boot[h.k(t, i)];
  return t + 1 < h.T ? h.values[h.k(t + 1, i)] : h.last[i];
}

/// The textbook GAE loop, env by env, with explicit masks (docs/episode-end-contract.md).
std::vector<double> gae_reference(const host_rollout& h, double gamma, double lambda) {
  std::vector<double> adv(h.T * h.N);
  for (std::size_t i = 0; i < h.N; ++i) {
    double a = 0.0;
    for (std::size_t t = h.T; t-- > 0;) {
      const std::size_t k = h.k(t, i);
      const double not_terminal = h.term[k] ? 0.0 : 1.0;
      const double not_done = h.done(t, i) ? 0.0 : 1.0;
      const double delta = h.rewards[k] + gamma * not_terminal * v_next(h, t, i) - h.values[k];
      a = delta + gamma * lambda * not_done * a;
      adv[k] = a;
    }
  }
  return adv;
}

/// Lambda-returns by their own recursive definition.
std::vector<double> lambda_returns_reference(const host_rollout& h, double gamma, double lambda) {
  std::vector<double> g(h.T * h.N);
  for (std::size_t i = 0; i < h.N; ++i) {
    for (std::size_t t = h.T; t-- > 0;) {
      const std::size_t k = h.k(t, i);
      double next = v_next(h, t, i);
      if (!h.done(t, i) && t + 1 < h.T) next = (1.0 - lambda) * h.values[h.k(t + 1, i)] + lambda * g[h.k(t + 1, i)];
      g[k] = h.rewards[k] + gamma * (h.term[k] ? 0.0 : 1.0) * next;
    }
  }
  return g;
}

/// n-step returns and bootstrap discounts, each window summed forward with explicit powers.
void n_step_reference(const host_rollout& h, double gamma, int n, std::vector<double>& ret, std::vector<double>& disc) {
  ret.assign(h.T * h.N, 0.0);
  disc.assign(h.T * h.N, 0.0);
  for (std::size_t t = 0; t < h.T; ++t) {
    for (std::size_t i = 0; i < h.N; ++i) {
      int m = 0;
      double sum = 0.0;
      while (m < n && t + std::size_t(m) < h.T) {
        sum += std::pow(gamma, m) * h.rewards[h.k(t + m, i)];
        ++m;
        if (h.done(t + m - 1, i)) break;
      }
      const std::size_t last = t + std::size_t(m) - 1;
      const double keep = h.term[h.k(last, i)] ? 0.0 : 1.0;
      ret[h.k(t, i)] = sum + std::pow(gamma, m) * keep * v_next(h, last, i);
      disc[h.k(t, i)] = std::pow(gamma, m) * keep;
    }
  }
}

struct vtrace_reference_out {
  std::vector<double> vs, pg;
};

/// V-trace by the paper's explicit sum: vs[t] = V[t] + sum_{s=t}^{e} gamma^{s-t} (prod_{j<s} c_j)
/// delta_s, where e is the first episode end at or after t (or T - 1).
vtrace_reference_out vtrace_reference(const host_rollout& h, const std::vector<double>& log_rhos, double gamma,
                                      double lambda, double rho_bar, double c_bar, double pg_rho_bar) {
  vtrace_reference_out out;
  out.vs.assign(h.T * h.N, 0.0);
  out.pg.assign(h.T * h.N, 0.0);
  const auto delta = [&](std::size_t s, std::size_t i) {
    const std::size_t k = h.k(s, i);
    const double rho = std::min(rho_bar, std::exp(log_rhos[k]));
    return rho * (h.rewards[k] + gamma * (h.term[k] ? 0.0 : 1.0) * v_next(h, s, i) - h.values[k]);
  };
  for (std::size_t i = 0; i < h.N; ++i) {
    for (std::size_t t = 0; t < h.T; ++t) {
      double sum = 0.0, coef = 1.0;
      for (std::size_t s = t; s < h.T; ++s) {
        sum += coef * delta(s, i);
        if (h.done(s, i)) break;
        coef *= gamma * lambda * std::min(c_bar, std::exp(log_rhos[h.k(s, i)]));
      }
      out.vs[h.k(t, i)] = h.values[h.k(t, i)] + sum;
    }
    for (std::size_t t = 0; t < h.T; ++t) {
      const std::size_t k = h.k(t, i);
      double next_vs = v_next(h, t, i);
      if (!h.done(t, i) && t + 1 < h.T) next_vs = out.vs[h.k(t + 1, i)];
      const double pg_rho = std::min(pg_rho_bar, std::exp(log_rhos[k]));
      out.pg[k] = pg_rho * (h.rewards[k] + gamma * (h.term[k] ? 0.0 : 1.0) * next_vs - h.values[k]);
    }
  }
  return out;
}

template <class T>
std::vector<double> random_log_rhos(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 0.6);
  std::vector<double> out(n);
  for (auto& x : out) x = round_to<T>(u(gen));
  return out;
}

// ---- runners ----------------------------------------------------------------------------------------

template <class T>
std::vector<T> run_gae(const host_rollout& h, double gamma, double lambda, std::vector<T>* returns = nullptr) {
  device_rollout<T> d(h);
  dbuf<T> adv(rlk_test::backend(), h.T * h.N), ret(rlk_test::backend(), h.T * h.N);
  rlk::gae(rlk_test::backend(), d.view(), T(gamma), T(lambda), adv.view(), ret.view());
  if (returns) *returns = ret.to_host();
  return adv.to_host();
}

template <class T>
std::vector<T> run_lambda_returns(const host_rollout& h, double gamma, double lambda) {
  device_rollout<T> d(h);
  dbuf<T> ret(rlk_test::backend(), h.T * h.N);
  rlk::lambda_returns(rlk_test::backend(), d.view(), T(gamma), T(lambda), ret.view());
  return ret.to_host();
}

template <class T>
std::vector<T> run_n_step(const host_rollout& h, double gamma, int n, std::vector<T>* discounts = nullptr) {
  device_rollout<T> d(h);
  dbuf<T> ret(rlk_test::backend(), h.T * h.N), disc(rlk_test::backend(), h.T * h.N);
  rlk::n_step_returns(rlk_test::backend(), d.view(), T(gamma), n, ret.view(), disc.view());
  if (discounts) *discounts = disc.to_host();
  return ret.to_host();
}

template <class T>
std::vector<T> run_vtrace(const host_rollout& h, const std::vector<double>& log_rhos, const rlk::vtrace_params<T>& p,
                          std::vector<T>* pg = nullptr) {
  device_rollout<T> d(h);
  dbuf<T> lr(rlk_test::backend(), to<T>(log_rhos));
  dbuf<T> vs(rlk_test::backend(), h.T * h.N), pga(rlk_test::backend(), h.T * h.N);
  rlk::vtrace(rlk_test::backend(), d.view(), lr.cview(), p, vs.view(), pga.view());
  if (pg) *pg = pga.to_host();
  return vs.to_host();
}

struct shape {
  std::size_t T, N;
};
// Small, and wide enough for the OpenMP backend to run in parallel (N >= 1024).
constexpr shape shapes[] = {{23, 37}, {9, 1500}};
struct discount_setting {
  double gamma, lambda;
};
// lambda = 1 (Monte-Carlo), lambda = 0 (TD(0)), gamma = 1 and gamma = 0 included.
constexpr discount_setting settings[] = {{0.99, 0.95}, {0.9, 1.0}, {0.97, 0.0}, {1.0, 1.0}, {0.0, 0.5}, {0.8, 0.7}};

}  // namespace

// ---- GAE and lambda-returns ---------------------------------------------------------------------------

TEMPLATE_TEST_CASE("gae and lambda_returns match the float64 reference loops", "[estimators][gae]", float, double) {
  using T = TestType;
  for (const shape s : shapes) {
    const host_rollout h = make_rollout<T>(s.T, s.N, 1000 + s.N);
    for (const discount_setting g : settings) {
      INFO("T " << s.T << " N " << s.N << " gamma " << g.gamma << " lambda " << g.lambda);
      std::vector<T> returns;
      const std::vector<T> adv = run_gae<T>(h, g.gamma, g.lambda, &returns);
      const std::vector<double> ref = gae_reference(h, g.gamma, g.lambda);
      check_close(adv, ref, tolerance<T>(), "gae advantages");
      std::vector<double> ref_returns(ref.size());
      for (std::size_t k = 0; k < ref.size(); ++k) ref_returns[k] = ref[k] + h.values[k];
      check_close(returns, ref_returns, tolerance<T>(), "gae returns");

      const std::vector<T> lr = run_lambda_returns<T>(h, g.gamma, g.lambda);
      check_close(lr, lambda_returns_reference(h, g.gamma, g.lambda), tolerance<T>(), "lambda_returns");
      check_close(lr, ref_returns, tolerance<T>(), "lambda_returns vs GAE + V");
    }
  }
}

TEMPLATE_TEST_CASE("gae: lambda = 0 is the one-step TD error, returns may be skipped", "[estimators][gae]", float,
                   double) {
  using T = TestType;
  const host_rollout h = make_rollout<T>(11, 13, 7);
  device_rollout<T> d(h);
  dbuf<T> adv(rlk_test::backend(), h.T * h.N);
  rlk::gae(rlk_test::backend(), d.view(), T(0.9), T(0), adv.view());  // no returns view
  std::vector<double> td(h.T * h.N);
  for (std::size_t t = 0; t < h.T; ++t)
    for (std::size_t i = 0; i < h.N; ++i) {
      const std::size_t k = h.k(t, i);
      td[k] = h.rewards[k] + 0.9 * (h.term[k] ? 0.0 : v_next(h, t, i)) - h.values[k];
    }
  check_close(adv.to_host(), td, tolerance<T>(), "TD(0) error");
}

TEST_CASE("gae: hand-checked example with a termination and a truncation", "[estimators][gae]") {
  // 1 env x 4 steps: step 1 terminates, step 2 is truncated (bootstrap 10), gamma 0.5, lambda 1.
  host_rollout h;
  h.T = 4;
  h.N = 1;
  h.rewards = {1, 2, 3, 4};
  h.values = {0.5, 0.25, 1, 2};
  h.boot = {100, 100, 10, 100};
  h.last = {8};
  h.term = {0, 1, 0, 0};
  h.trunc = {0, 0, 1, 0};
  const std::vector<double> adv = run_gae<double>(h, 0.5, 1.0);
  // returns: G3 = 4 + 0.5 * 8 = 8; G2 = 3 + 0.5 * 10 = 8; G1 = 2; G0 = 1 + 0.5 * 2 = 2.
  CHECK(adv[3] == 8 - 2);
  CHECK(adv[2] == 8 - 1);
  CHECK(adv[1] == 2 - 0.25);
  CHECK(adv[0] == 2 - 0.5);
  const std::vector<double> lr = run_lambda_returns<double>(h, 0.5, 1.0);
  CHECK(lr == std::vector<double>{2, 2, 8, 8});
}

// ---- n-step returns ---------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("n_step_returns match the float64 reference", "[estimators][n_step]", float, double) {
  using T = TestType;
  for (const shape s : shapes) {
    const host_rollout h = make_rollout<T>(s.T, s.N, 2000 + s.N);
    for (const double gamma : {0.99, 0.9, 1.0, 0.0}) {
      for (const int n : {1, 2, 3, 5, int(s.T), int(s.T) + 7}) {
        INFO("T " << s.T << " N " << s.N << " gamma " << gamma << " n " << n);
        std::vector<T> disc;
        const std::vector<T> ret = run_n_step<T>(h, gamma, n, &disc);
        std::vector<double> ref_ret, ref_disc;
        n_step_reference(h, gamma, n, ref_ret, ref_disc);
        check_close(ret, ref_ret, tolerance<T>(), "n-step returns");
        check_close(disc, ref_disc, tolerance<T>(), "n-step discounts");
      }
    }
  }
}

TEMPLATE_TEST_CASE("n_step_returns: n = 1 is the one-step TD target, n >= T the Monte-Carlo return",
                   "[estimators][n_step]", float, double) {
  using T = TestType;
  const host_rollout h = make_rollout<T>(17, 29, 31);
  const double gamma = 0.95;
  std::vector<T> disc;
  const std::vector<T> one = run_n_step<T>(h, gamma, 1, &disc);
  std::vector<double> td(h.T * h.N), td_disc(h.T * h.N);
  for (std::size_t t = 0; t < h.T; ++t)
    for (std::size_t i = 0; i < h.N; ++i) {
      const std::size_t k = h.k(t, i);
      td[k] = h.rewards[k] + gamma * (h.term[k] ? 0.0 : 1.0) * v_next(h, t, i);
      td_disc[k] = h.term[k] ? 0.0 : round_to<T>(gamma);
    }
  check_close(one, td, tolerance<T>(), "n = 1 vs r + gamma * next value");
  check_close(disc, td_disc, 0.0, "n = 1 discounts");

  const std::vector<T> at_t = run_n_step<T>(h, gamma, int(h.T));
  const std::vector<T> beyond = run_n_step<T>(h, gamma, 1000);
  CHECK(at_t == beyond);
  check_close(at_t, to_double(run_lambda_returns<T>(h, gamma, 1.0)), tolerance<T>(), "n >= T vs lambda-returns(1)");
}

TEST_CASE("n_step_returns: hand-checked windows stopped by episode ends", "[estimators][n_step]") {
  // 1 env x 5 steps, step 1 truncated (bootstrap 10), step 3 terminated; gamma 0.5, n = 3.
  host_rollout h;
  h.T = 5;
  h.N = 1;
  h.rewards = {1, 2, 3, 4, 5};
  h.values = {0, 20, 30, 40, 50};
  h.boot = {0, 10, 0, 0, 0};
  h.last = {6};
  h.term = {0, 0, 0, 1, 0};
  h.trunc = {0, 1, 0, 0, 0};
  std::vector<double> disc;
  const std::vector<double> ret = run_n_step<double>(h, 0.5, 3, &disc);
  CHECK(ret[0] == 1 + 0.5 * 2 + 0.25 * 10);  // stopped by the truncation at step 1
  CHECK(disc[0] == 0.25);
  CHECK(ret[1] == 2 + 0.5 * 10);
  CHECK(disc[1] == 0.5);
  CHECK(ret[2] == 3 + 0.5 * 4);  // stopped by the termination at step 3: no bootstrap
  CHECK(disc[2] == 0);
  CHECK(ret[3] == 4);
  CHECK(disc[3] == 0);
  CHECK(ret[4] == 5 + 0.5 * 6);  // the end of the rollout: last_values
  CHECK(disc[4] == 0.5);
}

// ---- V-trace ----------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("vtrace matches the float64 reference (the paper's explicit sum)", "[estimators][vtrace]", float,
                   double) {
  using T = TestType;
  struct clips {
    double gamma, lambda, rho_bar, c_bar, pg_rho_bar;
  };
  constexpr clips cases[] = {{0.99, 1.0, 1.0, 1.0, 1.0},
                             {0.9, 0.95, 1.0, 0.9, 1.5},
                             {0.95, 1.0, 0.5, 0.5, 2.0},
                             {1.0, 0.8, 2.0, 1.2, 1.0},
                             {0.0, 1.0, 1.0, 1.0, 1.0}};
  for (const shape s : shapes) {
    const host_rollout h = make_rollout<T>(s.T, s.N, 3000 + s.N);
    const std::vector<double> log_rhos = random_log_rhos<T>(s.T * s.N, 44 + s.N);
    for (const clips c : cases) {
      INFO("T " << s.T << " N " << s.N << " gamma " << c.gamma << " lambda " << c.lambda << " rho_bar " << c.rho_bar
                << " c_bar " << c.c_bar << " pg_rho_bar " << c.pg_rho_bar);
      rlk::vtrace_params<T> p;
      p.gamma = T(c.gamma);
      p.lambda = T(c.lambda);
      p.rho_bar = T(c.rho_bar);
      p.c_bar = T(c.c_bar);
      p.pg_rho_bar = T(c.pg_rho_bar);
      std::vector<T> pg;
      const std::vector<T> vs = run_vtrace<T>(h, log_rhos, p, &pg);
      const vtrace_reference_out ref =
          vtrace_reference(h, log_rhos, double(p.gamma), double(p.lambda), c.rho_bar, c.c_bar, c.pg_rho_bar);
      check_close(vs, ref.vs, tolerance<T>(), "vs");
      check_close(pg, ref.pg, tolerance<T>(), "pg_advantages");
    }
  }
}

TEMPLATE_TEST_CASE("vtrace on-policy (rho = 1) equals lambda-returns", "[estimators][vtrace]", float, double) {
  using T = TestType;
  const host_rollout h = make_rollout<T>(19, 41, 5);
  const std::vector<double> zeros(h.T * h.N, 0.0);
  for (const discount_setting g : settings) {
    INFO("gamma " << g.gamma << " lambda " << g.lambda);
    rlk::vtrace_params<T> p;
    p.gamma = T(g.gamma);
    p.lambda = T(g.lambda);
    p.c_bar = T(1.5);  // clips >= 1 do not bind at rho = 1
    std::vector<T> pg;
    const std::vector<T> vs = run_vtrace<T>(h, zeros, p, &pg);
    const std::vector<double> g_ref = lambda_returns_reference(h, g.gamma, g.lambda);
    check_close(vs, g_ref, tolerance<T>(), "vs vs lambda-returns");
    check_close(vs, to_double(run_lambda_returns<T>(h, g.gamma, g.lambda)), tolerance<T>(), "vs vs lambda_returns()");
    // With lambda = 1 the policy-gradient advantage is the one-step target on vs minus V.
    std::vector<double> pg_ref(h.T * h.N);
    for (std::size_t t = 0; t < h.T; ++t)
      for (std::size_t i = 0; i < h.N; ++i) {
        const std::size_t k = h.k(t, i);
        const double next = (!h.done(t, i) && t + 1 < h.T) ? g_ref[h.k(t + 1, i)] : v_next(h, t, i);
        pg_ref[k] = h.rewards[k] + g.gamma * (h.term[k] ? 0.0 : 1.0) * next - h.values[k];
      }
    check_close(pg, pg_ref, tolerance<T>(), "pg_advantages on-policy");
  }
}

// ---- no leakage across episode ends ------------------------------------------------------------------

TEMPLATE_TEST_CASE("estimators read nothing after an episode end for the steps before it", "[estimators][leakage]",
                   float, double) {
  using T = TestType;
  const host_rollout a = make_rollout<T>(21, 33, 77, 0.1, 0.1);
  host_rollout b = a;
  std::vector<double> log_a = random_log_rhos<T>(a.T * a.N, 8), log_b = log_a;
  // For each env, change everything after its first episode end (rewards, values, bootstrap
  // values, log-rhos; flags too). Nothing up to that end may change, in that env or any other.
  std::vector<std::size_t> first_end(a.N, a.T);
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<double> u(-50.0, 50.0);
  for (std::size_t i = 0; i < a.N; ++i) {
    for (std::size_t t = 0; t < a.T; ++t)
      if (a.done(t, i)) {
        first_end[i] = t;
        break;
      }
    for (std::size_t t = first_end[i] + 1; t < a.T; ++t) {
      const std::size_t k = a.k(t, i);
      b.rewards[k] = round_to<T>(u(gen));
      b.values[k] = round_to<T>(u(gen));
      b.boot[k] = round_to<T>(u(gen));
      log_b[k] = round_to<T>(u(gen) / 50.0);
      b.term[k] = gen() % 5 == 0;
      b.trunc[k] = gen() % 5 == 0;
    }
    if (first_end[i] + 1 < a.T) b.last[i] = round_to<T>(u(gen));
  }
  const auto same_before_end = [&](const std::vector<T>& x, const std::vector<T>& y, const char* what) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < a.N; ++i)
      for (std::size_t t = 0; t <= first_end[i] && t < a.T; ++t) bad += x[a.k(t, i)] != y[a.k(t, i)];
    INFO(what);
    CHECK(bad == 0);
  };
  std::size_t ended = 0;
  for (std::size_t i = 0; i < a.N; ++i) ended += first_end[i] + 1 < a.T;
  REQUIRE(ended > a.N / 2);  // the test changes something in most envs

  same_before_end(run_gae<T>(a, 0.99, 0.95), run_gae<T>(b, 0.99, 0.95), "gae");
  same_before_end(run_lambda_returns<T>(a, 0.99, 0.9), run_lambda_returns<T>(b, 0.99, 0.9), "lambda_returns");
  for (const int n : {1, 3, 100}) {
    std::vector<T> da, db;
    const std::vector<T> ra = run_n_step<T>(a, 0.99, n, &da), rb = run_n_step<T>(b, 0.99, n, &db);
    same_before_end(ra, rb, "n_step_returns");
    same_before_end(da, db, "n_step discounts");
  }
  rlk::vtrace_params<T> p;
  p.lambda = T(0.9);
  p.c_bar = T(2);
  p.rho_bar = T(1.5);
  std::vector<T> pga, pgb;
  same_before_end(run_vtrace<T>(a, log_a, p, &pga), run_vtrace<T>(b, log_b, p, &pgb), "vtrace vs");
  same_before_end(pga, pgb, "vtrace pg_advantages");
}

// ---- input validation -------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("estimators reject bad input and leave their outputs untouched", "[estimators][validation]", float,
                   double) {
  using T = TestType;
  const host_rollout h = make_rollout<T>(6, 5, 1);
  device_rollout<T> d(h);
  const std::size_t tn = h.T * h.N;
  const std::vector<T> sentinel(tn, T(42));
  dbuf<T> out1(rlk_test::backend(), sentinel), out2(rlk_test::backend(), sentinel);
  dbuf<T> log_rhos(rlk_test::backend(), tn);
  const auto bk = rlk_test::backend();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const rlk::rollout_view<T> good = d.view();

  std::vector<rlk::rollout_view<T>> bad_rollouts;
  {
    auto r = good;
    r.rewards = r.rewards.subview(0, tn - 1);
    bad_rollouts.push_back(r);
    r = good;
    r.last_values = {};
    bad_rollouts.push_back(r);
    r = good;
    r.terminated = {};
    bad_rollouts.push_back(r);
    r = good;
    r.truncated = r.truncated.subview(0, 3);
    bad_rollouts.push_back(r);
    r = good;
    r.num_steps = 0;
    bad_rollouts.push_back(r);
    r = good;
    r.num_envs = h.N + 1;
    bad_rollouts.push_back(r);
    r = good;
    r.bootstrap_values = rlk::view<const T>(nullptr, tn);
    bad_rollouts.push_back(r);
  }
  for (const auto& r : bad_rollouts) {
    CHECK_THROWS_AS(rlk::gae(bk, r, T(0.9), T(0.9), out1.view(), out2.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::lambda_returns(bk, r, T(0.9), T(0.9), out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::n_step_returns(bk, r, T(0.9), 3, out1.view(), out2.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::vtrace(bk, r, log_rhos.cview(), rlk::vtrace_params<T>{}, out1.view(), out2.view()),
                    std::invalid_argument);
  }
  for (const T gamma : {T(-0.1), T(1.01), nan}) {
    CHECK_THROWS_AS(rlk::gae(bk, good, gamma, T(0.9), out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::gae(bk, good, T(0.9), gamma, out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::lambda_returns(bk, good, gamma, T(0.9), out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::lambda_returns(bk, good, T(0.9), gamma, out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::n_step_returns(bk, good, gamma, 2, out1.view()), std::invalid_argument);
    rlk::vtrace_params<T> p;
    p.gamma = gamma;
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), p, out1.view(), out2.view()), std::invalid_argument);
    p = {};
    p.lambda = gamma;
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), p, out1.view(), out2.view()), std::invalid_argument);
  }
  for (const T bar : {T(0), T(-1), nan}) {
    rlk::vtrace_params<T> p;
    p.rho_bar = bar;
    CHECK_THROWS_AS(p.validate(), std::invalid_argument);
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), p, out1.view(), out2.view()), std::invalid_argument);
    p = {};
    p.c_bar = bar;
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), p, out1.view(), out2.view()), std::invalid_argument);
    p = {};
    p.pg_rho_bar = bar;
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), p, out1.view(), out2.view()), std::invalid_argument);
  }
  rlk::vtrace_params<T> no_clip;
  no_clip.rho_bar = no_clip.c_bar = no_clip.pg_rho_bar = std::numeric_limits<T>::infinity();
  CHECK_NOTHROW(no_clip.validate());
  for (const int n : {0, -1}) CHECK_THROWS_AS(rlk::n_step_returns(bk, good, T(0.9), n, out1.view()), std::invalid_argument);
  // Outputs of the wrong size or null (the first output valid, so a partial write would show).
  const rlk::view<T> short_out = out2.view().subview(0, tn - 1), null_out(nullptr, tn);
  for (const rlk::view<T> bad : {short_out, null_out}) {
    CHECK_THROWS_AS(rlk::gae(bk, good, T(0.9), T(0.9), out1.view(), bad), std::invalid_argument);
    CHECK_THROWS_AS(rlk::gae(bk, good, T(0.9), T(0.9), bad, out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::lambda_returns(bk, good, T(0.9), T(0.9), bad), std::invalid_argument);
    CHECK_THROWS_AS(rlk::n_step_returns(bk, good, T(0.9), 2, out1.view(), bad), std::invalid_argument);
    CHECK_THROWS_AS(rlk::n_step_returns(bk, good, T(0.9), 2, bad, out1.view()), std::invalid_argument);
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), rlk::vtrace_params<T>{}, out1.view(), bad),
                    std::invalid_argument);
    CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview(), rlk::vtrace_params<T>{}, bad, out1.view()),
                    std::invalid_argument);
  }
  CHECK_THROWS_AS(rlk::vtrace(bk, good, log_rhos.cview().subview(0, 2), rlk::vtrace_params<T>{}, out1.view(),
                              out2.view()),
                  std::invalid_argument);
  CHECK_THROWS_AS(rlk::vtrace(bk, good, rlk::view<const T>{}, rlk::vtrace_params<T>{}, out1.view(), out2.view()),
                  std::invalid_argument);
  CHECK(out1.to_host() == sentinel);
  CHECK(out2.to_host() == sentinel);
  // And the good call writes (so the sentinel checks above mean something).
  CHECK_NOTHROW(rlk::n_step_returns(bk, good, T(0.9), 2, out1.view()));
  CHECK(out1.to_host() != sentinel);
  CHECK(out2.to_host() == sentinel);  // the skipped discounts
}

// ---- normalize_advantages ------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("normalize_advantages matches a double loop with ddof 0 and 1", "[estimators][normalize]", float,
                   double) {
  using T = TestType;
  for (const std::size_t n : {std::size_t(2), std::size_t(100), std::size_t(3001)}) {
    std::mt19937_64 gen(n);
    std::normal_distribution<double> dist(3.0, 2.5);
    std::vector<T> host(n);
    for (auto& x : host) x = T(dist(gen));
    for (const int ddof : {0, 1}) {
      for (const double eps : {1e-8, 0.5}) {
        INFO("n " << n << " ddof " << ddof << " epsilon " << eps);
        double mean = 0.0;
        for (const T x : host) mean += double(x);
        mean /= double(n);
        double ss = 0.0;
        for (const T x : host) ss += (double(x) - mean) * (double(x) - mean);
        const double sd = std::sqrt(ss / double(n - std::size_t(ddof)));
        std::vector<double> ref(n);
        for (std::size_t k = 0; k < n; ++k) ref[k] = (double(host[k]) - mean) / (sd + eps);
        dbuf<T> a(rlk_test::backend(), host);
        rlk::normalize_advantages(rlk_test::backend(), a.view(), T(eps), ddof);
        check_close(a.to_host(), ref, std::is_same_v<T, float> ? 2e-7 : 1e-13, "normalized advantages");
      }
    }
  }
}

TEMPLATE_TEST_CASE("normalize_advantages rejects bad input and leaves the data untouched", "[estimators][normalize]",
                   float, double) {
  using T = TestType;
  const auto bk = rlk_test::backend();
  const std::vector<T> host = {T(1), T(2), T(4)};
  dbuf<T> a(bk, host);
  dbuf<T> one(bk, std::vector<T>{T(5)});
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, one.view()), std::invalid_argument);  // size 1, ddof 1
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, a.view(), T(1e-8), 3), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, a.view(), T(1e-8), -1), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, a.view(), T(-1)), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, a.view(), std::numeric_limits<T>::quiet_NaN()), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, rlk::view<T>(nullptr, 3)), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, rlk::view<T>{}), std::invalid_argument);
  CHECK(a.to_host() == host);
  CHECK(one.to_host() == std::vector<T>{T(5)});
  dbuf<T> with_nan(bk, std::vector<T>{T(1), std::numeric_limits<T>::quiet_NaN(), T(3)});
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, with_nan.view()), std::invalid_argument);
  CHECK(with_nan.get(0) == T(1));
  CHECK(with_nan.get(2) == T(3));
  // ddof 0 on one element: std 0, so the result is 0.
  rlk::normalize_advantages(bk, one.view(), T(1e-8), 0);
  CHECK(one.get(0) == T(0));
}

// ---- running_mean_std ------------------------------------------------------------------------------------

namespace {

/// [rows, dim] data with a different offset and scale per dimension.
template <class T>
std::vector<T> random_rows(std::size_t rows, std::size_t dim, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<T> out(rows * dim);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t d = 0; d < dim; ++d) out[r * dim + d] = T(1000.0 * double(d) - 5.0 + (1.0 + 30.0 * double(d)) * dist(gen));
  return out;
}

/// SB3's RunningMeanStd in double: per-batch np.mean / np.var (ddof 0), update_from_moments.
struct sb3_rms {
  std::vector<double> mean, var;
  double count;
  sb3_rms(std::size_t dim, double epsilon) : mean(dim, 0.0), var(dim, 1.0), count(epsilon) {}
  template <class T>
  void update(const std::vector<T>& batch) {
    const std::size_t dim = mean.size(), rows = batch.size() / dim;
    for (std::size_t d = 0; d < dim; ++d) {
      double bm = 0.0;
      for (std::size_t r = 0; r < rows; ++r) bm += double(batch[r * dim + d]);
      bm /= double(rows);
      double bv = 0.0;
      for (std::size_t r = 0; r < rows; ++r) bv += (double(batch[r * dim + d]) - bm) * (double(batch[r * dim + d]) - bm);
      bv /= double(rows);
      const double delta = bm - mean[d], tot = count + double(rows);
      const double m2 = var[d] * count + bv * double(rows) + delta * delta * count * double(rows) / tot;
      mean[d] += delta * double(rows) / tot;
      var[d] = m2 / tot;
    }
    count += double(rows);
  }
};

template <class T>
std::vector<T> slice_rows(const std::vector<T>& data, std::size_t dim, std::size_t first, std::size_t rows) {
  return std::vector<T>(data.begin() + std::ptrdiff_t(first * dim), data.begin() + std::ptrdiff_t((first + rows) * dim));
}

}  // namespace

TEMPLATE_TEST_CASE("running_mean_std: merged batches equal the statistics of all the data", "[estimators][rms]", float,
                   double) {
  using T = TestType;
  const auto bk = rlk_test::backend();
  constexpr std::size_t dim = 3;
  const std::size_t sizes[] = {1, 7, 300, 992, 513};
  std::size_t total = 0;
  for (const std::size_t s : sizes) total += s;
  const std::vector<T> data = random_rows<T>(total, dim, 12);

  rlk::running_mean_std<T, backend_t> pieces(bk, dim, 0.0), whole(bk, dim, 0.0), sb3_like(bk, dim);
  sb3_rms ref_sb3(dim, 1e-4);
  std::size_t first = 0;
  for (const std::size_t s : sizes) {
    const std::vector<T> batch = slice_rows(data, dim, first, s);
    dbuf<T> b(bk, batch);
    pieces.update(b.cview());
    sb3_like.update(b.cview());
    ref_sb3.update(batch);
    first += s;
  }
  dbuf<T> all(bk, data);
  whole.update(all.cview());

  // The plain two-pass statistics of all the data.
  std::vector<double> mean(dim, 0.0), var(dim, 0.0);
  for (std::size_t r = 0; r < total; ++r)
    for (std::size_t d = 0; d < dim; ++d) mean[d] += double(data[r * dim + d]);
  for (auto& m : mean) m /= double(total);
  for (std::size_t r = 0; r < total; ++r)
    for (std::size_t d = 0; d < dim; ++d) var[d] += (double(data[r * dim + d]) - mean[d]) * (double(data[r * dim + d]) - mean[d]);
  for (auto& v : var) v /= double(total);

  CHECK(pieces.count() == double(total));
  CHECK(whole.count() == double(total));
  CHECK(sb3_like.count() == 1e-4 + double(total));
  check_close(pieces.mean(), mean, 1e-12, "mean, batch by batch");
  check_close(pieces.var(), var, 1e-12, "var, batch by batch");
  check_close(whole.mean(), mean, 1e-12, "mean, all at once");
  check_close(whole.var(), var, 1e-12, "var, all at once");
  check_close(sb3_like.mean(), ref_sb3.mean, 1e-12, "mean vs SB3 (epsilon count 1e-4)");
  check_close(sb3_like.var(), ref_sb3.var, 1e-12, "var vs SB3 (epsilon count 1e-4)");

  // A fresh one starts as SB3's: mean 0, var 1.
  rlk::running_mean_std<T, backend_t> fresh(bk, dim);
  CHECK(fresh.mean() == std::vector<double>(dim, 0.0));
  CHECK(fresh.var() == std::vector<double>(dim, 1.0));
  CHECK(fresh.count() == 1e-4);
}

TEMPLATE_TEST_CASE("running_mean_std: normalize, save and restore", "[estimators][rms]", float, double) {
  using T = TestType;
  const auto bk = rlk_test::backend();
  constexpr std::size_t dim = 4;
  const std::vector<T> data = random_rows<T>(700, dim, 3);
  rlk::running_mean_std<T, backend_t> rms(bk, dim);
  dbuf<T> b(bk, data);
  rms.update(b.cview());

  const std::vector<T> x = random_rows<T>(300, dim, 4);
  dbuf<T> in(bk, x), out(bk, x.size());
  const T clip = T(1.5), eps = T(1e-8);
  rms.normalize(in.cview(), out.view(), clip, eps);
  const std::vector<double> m = rms.mean(), v = rms.var();
  std::vector<double> ref(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double z = (double(x[k]) - m[k % dim]) / std::sqrt(v[k % dim] + double(eps));
    ref[k] = double(T(std::min(double(clip), std::max(-double(clip), z))));
  }
  check_close(out.to_host(), ref, 1e-15, "normalize");
  std::size_t clipped = 0;
  for (const double r : ref) clipped += std::abs(r) == double(clip);
  CHECK(clipped > 0);
  CHECK(clipped < ref.size());
  rms.normalize(in.cview(), in.view(), clip, eps);  // in place
  CHECK(in.to_host() == out.to_host());

  const rlk::running_mean_std_state saved = rms.state();
  rlk::running_mean_std<T, backend_t> restored(bk, dim);
  restored.set_state(saved);
  CHECK(restored.mean() == rms.mean());
  CHECK(restored.var() == rms.var());
  CHECK(restored.count() == rms.count());
  dbuf<T> more(bk, random_rows<T>(100, dim, 5));
  rms.update(more.cview());
  restored.update(more.cview());
  CHECK(restored.mean() == rms.mean());
  CHECK(restored.var() == rms.var());
  CHECK(restored.count() == rms.count());
}

TEMPLATE_TEST_CASE("running_mean_std rejects bad input and keeps its state", "[estimators][rms][validation]", float,
                   double) {
  using T = TestType;
  const auto bk = rlk_test::backend();
  constexpr std::size_t dim = 2;
  using rms_t = rlk::running_mean_std<T, backend_t>;
  CHECK_THROWS_AS(rms_t(bk, 0), std::invalid_argument);
  CHECK_THROWS_AS(rms_t(bk, dim, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(rms_t(bk, dim, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  rms_t rms(bk, dim);
  dbuf<T> b(bk, random_rows<T>(10, dim, 1));
  rms.update(b.cview());
  const rlk::running_mean_std_state before = rms.state();
  const auto unchanged = [&] {
    CHECK(rms.mean() == before.mean);
    CHECK(rms.var() == before.var);
    CHECK(rms.count() == before.count);
  };
  CHECK_THROWS_AS(rms.update(b.cview().subview(0, 3)), std::invalid_argument);
  CHECK_THROWS_AS(rms.update(rlk::view<const T>{}), std::invalid_argument);
  CHECK_THROWS_AS(rms.update(rlk::view<const T>(nullptr, 4)), std::invalid_argument);
  for (const T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()}) {
    std::vector<T> host = random_rows<T>(600, dim, 2);
    host[777] = bad;
    dbuf<T> with_bad(bk, host);
    CHECK_THROWS_AS(rms.update(with_bad.cview()), std::invalid_argument);
  }
  unchanged();

  const std::vector<T> sentinel(4, T(42));
  dbuf<T> out(bk, sentinel);
  CHECK_THROWS_AS(rms.normalize(b.cview().subview(0, 3), out.view().subview(0, 3)), std::invalid_argument);
  CHECK_THROWS_AS(rms.normalize(b.cview().subview(0, 4), out.view().subview(0, 2)), std::invalid_argument);
  CHECK_THROWS_AS(rms.normalize(b.cview().subview(0, 4), rlk::view<T>(nullptr, 4)), std::invalid_argument);
  CHECK_THROWS_AS(rms.normalize(b.cview().subview(0, 4), out.view(), T(-1)), std::invalid_argument);
  CHECK_THROWS_AS(rms.normalize(b.cview().subview(0, 4), out.view(), T(10), std::numeric_limits<T>::quiet_NaN()),
                  std::invalid_argument);
  CHECK(out.to_host() == sentinel);

  rlk::running_mean_std_state s = before;
  s.mean.push_back(0.0);
  CHECK_THROWS_AS(rms.set_state(s), std::invalid_argument);
  s = before;
  s.var[1] = -1.0;
  CHECK_THROWS_AS(rms.set_state(s), std::invalid_argument);
  s = before;
  s.count = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(rms.set_state(s), std::invalid_argument);
  s = before;
  s.mean[0] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(rms.set_state(s), std::invalid_argument);
  unchanged();
}

// ---- Device forms: normalize_advantages and running_mean_std::update_unchecked ------------------------

TEMPLATE_TEST_CASE("normalize_advantages device form: the host form's bits, the moments in backend memory, no host wait",
                   "[estimators][normalize][device_form]", float, double) {
  using T = TestType;
  REQUIRE(rlk::host_sync_counting_enabled);
  const auto bk = rlk_test::backend();
  for (const std::size_t n : {std::size_t(2), std::size_t(100), std::size_t(9001)}) {  // 9001: several chunks
    std::mt19937_64 gen(n + 5);
    std::normal_distribution<double> dist(3.0, 2.5);
    std::vector<T> host(n);
    for (auto& x : host) x = T(dist(gen));
    for (const int ddof : {0, 1}) {
      INFO("n " << n << " ddof " << ddof);
      dbuf<T> a(bk, host), b(bk, host);
      dbuf<rlk::advantage_moments> m(bk, 1);
      rlk::normalize_advantages(bk, a.view(), T(1e-8), ddof);
      rlk::reset_host_sync_counts();
      rlk::normalize_advantages(bk, m.view(), b.view(), T(1e-8), ddof);
      CHECK(rlk::host_sync_counts().total() == 0);
      CHECK(a.to_host() == b.to_host());
      const rlk::advantage_moments got = m.get(0);
      if constexpr (!rlk_test::on_cuda) {
        // today's host computation: the moments reduced to the host, the scale passed by value
        namespace d = rlk::detail;
        const double mean =
            d::deterministic_sum(bk, n, d::element_term<T, d::to_double<T>>{host.data(), {}}, 0.0, d::add_doubles{}) /
            double(n);
        const double var = d::deterministic_sum(bk, n, d::squared_deviation_at<T>{host.data(), &mean}, 0.0,
                                                d::add_doubles{}) /
                           double(n - std::size_t(ddof));
        CHECK(got.mean == mean);
        CHECK(got.var == var);
        const double scale = 1.0 / (std::sqrt(var) + double(T(1e-8)));
        CHECK(got.scale == scale);
        std::vector<T> want(n);
        for (std::size_t k = 0; k < n; ++k) want[k] = T((double(host[k]) - mean) * scale);
        CHECK(b.to_host() == want);
      }
    }
  }
  // A NaN: the device form leaves the data alone and shows it in the moments; the host form throws.
  const std::vector<T> with_nan = {T(1), std::numeric_limits<T>::quiet_NaN(), T(3)};
  dbuf<T> a(bk, with_nan);
  dbuf<rlk::advantage_moments> m(bk, 1);
  rlk::normalize_advantages(bk, m.view(), a.view());
  CHECK(std::isnan(m.get(0).mean));
  CHECK(a.get(0) == T(1));
  CHECK(a.get(2) == T(3));
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, rlk::view<rlk::advantage_moments>(), a.view()), std::invalid_argument);
  CHECK_THROWS_AS(rlk::normalize_advantages(bk, m.view(), a.view(), T(-1)), std::invalid_argument);
}

TEMPLATE_TEST_CASE("running_mean_std::update_unchecked: update's bits without a host wait; check() reports a rejected batch",
                   "[estimators][rms][device_form]", float, double) {
  using T = TestType;
  REQUIRE(rlk::host_sync_counting_enabled);
  const auto bk = rlk_test::backend();
  constexpr std::size_t dim = 3;
  rlk::running_mean_std<T, backend_t> checked(bk, dim), unchecked(bk, dim);
  const std::vector<std::size_t> sizes = {1, 7, 256, 600};
  std::vector<dbuf<T>> batches;
  for (std::size_t k = 0; k < sizes.size(); ++k) batches.emplace_back(bk, random_rows<T>(sizes[k], dim, 10 + k));
  for (const auto& b : batches) checked.update(b.cview());
  rlk::reset_host_sync_counts();
  for (const auto& b : batches) unchecked.update_unchecked(b.cview());
  CHECK(rlk::host_sync_counts().total() == 0);
  unchecked.check();
  CHECK(rlk::host_sync_counts().reads == 1);
  CHECK(unchecked.mean() == checked.mean());
  CHECK(unchecked.var() == checked.var());
  CHECK(unchecked.count() == checked.count());

  // A bad batch, then a good one, without a check: both are left out; check() throws and restores
  // the count, and the object goes on from the last merged batch.
  const rlk::running_mean_std_state before = unchecked.state();
  std::vector<T> bad_host = random_rows<T>(300, dim, 99);
  bad_host[5] = std::numeric_limits<T>::infinity();
  dbuf<T> bad(bk, bad_host);
  unchecked.update_unchecked(bad.cview());
  unchecked.update_unchecked(batches[1].cview());
  CHECK(unchecked.mean() == before.mean);
  CHECK(unchecked.var() == before.var);
  CHECK_THROWS_WITH(unchecked.check(), Catch::Contains("NaN or infinity"));
  CHECK(unchecked.count() == before.count);
  CHECK(unchecked.mean() == before.mean);
  CHECK_NOTHROW(unchecked.check());  // reported once
  unchecked.update_unchecked(batches[2].cview());
  checked.update(batches[2].cview());
  unchecked.check();
  CHECK(unchecked.mean() == checked.mean());
  CHECK(unchecked.var() == checked.var());
  CHECK(unchecked.count() == checked.count());
  // The host form reports its own batch, as before.
  CHECK_THROWS_WITH(checked.update(bad.cview()), Catch::Contains("rlkernels::running_mean_std::update"));
  CHECK(checked.mean() == unchecked.mean());
  CHECK(checked.count() == unchecked.count());
  CHECK_THROWS_AS(unchecked.update_unchecked(rlk::view<const T>(nullptr, 3)), std::invalid_argument);
}
