// Golden values for the loss kernels from an established implementation: DeepMind's rlax and
// distrax run once in float64 (tests/reference/losses_rlax.py -> tests/reference/losses_rlax.txt,
// "name index value" lines; values are Python repr() of float64 and round-trip exactly through
// strtod). Every comparison is in double, relative to max(|reference|, 1), at 1e-12 unless a
// comment says otherwise. Convention differences between rlax and rlkernels are mapped explicitly:
//   * td_loss_kind::mse is delta^2; rlax.l2_loss is 0.5 delta^2 (ours = 2 x rlax, value and gradient).
//   * td_loss's td_errors are y - Q(s, a), rlax's sign; its gradient is wrt Q (the targets fixed, as
//     rlax's stop_target_gradients). Huber is rlax.huber_loss exactly.
//   * ppo_policy_loss's loss is rlax.clipped_surrogate_pg_loss(exp(logp - logp_old), A, eps) (both
//     -mean(min(...))). Gradient at r exactly 1 +/- eps: JAX gives half of the per-sample gradient
//     there (jnp.fmin takes its second argument on a tie and jnp.clip splits the gradient 0.5/0.5 at
//     its bounds); rlkernels passes the full gradient (closed interval, like torch.clamp), so on
//     those rows ours = 2 x JAX's d loss / d ratio x ratio.
//   * Masked categoricals: distrax with logits = -inf where masked (rlkernels takes a uint8 mask).
//   * tanh_gaussian_log_prob takes the noise eps (u = mean + std eps) and returns total derivatives
//     through u with eps fixed; the reference differentiates the same composition with jax.grad.
//   * value_loss plain = mean(rlax.l2_loss(v, R)) (both carry the 0.5).
#include "../test_backend.hpp"
#include "../reference_dir.hpp"

#include <rlkernels/losses/distributions.hpp>
#include <rlkernels/losses/dqn.hpp>
#include <rlkernels/losses/ppo.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rlk = rlkernels;
using rlk_test::backend;
using rlk_test::backend_t;

namespace {

using golden_map = std::map<std::string, std::vector<double>>;

golden_map load_golden() {
  const std::string path = rlk_test::reference_dir() + "/losses_rlax.txt";
  std::ifstream in(path);
  REQUIRE(in.good());
  golden_map out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name, value;
    std::size_t index = 0;
    ss >> name >> index >> value;
    REQUIRE(!ss.fail());
    std::vector<double>& v = out[name];
    REQUIRE(index == v.size());  // indices are consecutive from 0
    char* end = nullptr;
    v.push_back(std::strtod(value.c_str(), &end));
    REQUIRE(*end == '\0');
  }
  return out;
}

const std::vector<double>& g(const std::string& name) {
  static const golden_map data = load_golden();
  const auto it = data.find(name);
  INFO("golden array " << name);
  REQUIRE(it != data.end());
  return it->second;
}

std::size_t gsize(const std::string& name) { return std::size_t(g(name).at(0)); }

std::vector<std::int32_t> gint(const std::string& name) {
  std::vector<std::int32_t> out;
  for (double x : g(name)) out.push_back(std::int32_t(x));
  return out;
}

std::vector<std::uint8_t> gflags(const std::string& name) {
  std::vector<std::uint8_t> out;
  for (double x : g(name)) out.push_back(std::uint8_t(x));
  return out;
}

std::vector<double> scaled(std::vector<double> v, double s) {
  for (double& x : v) x *= s;
  return v;
}

using dbuf = rlk::buffer<double, backend_t>;

void check_close(const std::vector<double>& ours, const std::vector<double>& ref, const std::string& what,
                 double rtol = 1e-12) {
  REQUIRE(ours.size() == ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    INFO(what << "[" << i << "]: ours " << ours[i] << ", reference " << ref[i]);
    CHECK(std::fabs(ours[i] - ref[i]) <= rtol * std::max(1.0, std::fabs(ref[i])));
  }
}

void check_close(double ours, double ref, const std::string& what, double rtol = 1e-12) {
  check_close(std::vector<double>{ours}, std::vector<double>{ref}, what, rtol);
}

}  // namespace

TEST_CASE("golden: categorical log-prob and entropy match distrax (incl. logits ~1e3)", "[losses][golden]") {
  const std::size_t B = gsize("cat.B"), A = gsize("cat.A");
  dbuf logits(backend(), g("cat.logits"));
  rlk::buffer<std::int32_t, backend_t> actions(backend(), gint("cat.actions"));
  dbuf logp(backend(), B), grad(backend(), B * A), ent(backend(), B), grad_ent(backend(), B * A);
  const rlk::categorical_view<double> dist{A, logits.cview(), {}};
  rlk::categorical_log_prob(backend(), dist, actions.cview(), logp.view(), grad.view());
  rlk::categorical_entropy(backend(), dist, ent.view(), grad_ent.view());
  check_close(logp.to_host(), g("cat.log_prob"), "log_prob");
  check_close(grad.to_host(), g("cat.dlog_prob_dlogits"), "dlog_prob/dlogits");
  check_close(ent.to_host(), g("cat.entropy"), "entropy");
  check_close(grad_ent.to_host(), g("cat.dentropy_dlogits"), "dentropy/dlogits");

  // The entropy bonus: mean over rows, gradient / B.
  dbuf scratch(backend(), B), grad_mean(backend(), B * A);
  const double mean_h = rlk::categorical_mean_entropy(backend(), dist, scratch.view(), grad_mean.view());
  double ref_mean = 0;
  for (double h : g("cat.entropy")) ref_mean += h;
  check_close(mean_h, ref_mean / double(B), "mean entropy");
  check_close(grad_mean.to_host(), scaled(g("cat.dentropy_dlogits"), 1.0 / double(B)), "d mean entropy / dlogits");
}

TEST_CASE("golden: masked categorical matches distrax with -inf logits", "[losses][golden]") {
  const std::size_t B = gsize("cat.B"), A = gsize("cat.A");
  dbuf logits(backend(), g("cat.logits"));
  rlk::buffer<std::uint8_t, backend_t> mask(backend(), gflags("catm.mask"));
  rlk::buffer<std::int32_t, backend_t> actions(backend(), gint("cat.actions"));
  dbuf logp(backend(), B), grad(backend(), B * A), ent(backend(), B), grad_ent(backend(), B * A);
  const rlk::categorical_view<double> dist{A, logits.cview(), mask.cview()};
  rlk::categorical_log_prob(backend(), dist, actions.cview(), logp.view(), grad.view());
  rlk::categorical_entropy(backend(), dist, ent.view(), grad_ent.view());
  check_close(logp.to_host(), g("catm.log_prob"), "masked log_prob");
  check_close(grad.to_host(), g("catm.dlog_prob_dlogits"), "masked dlog_prob/dlogits");
  check_close(ent.to_host(), g("catm.entropy"), "masked entropy");
  check_close(grad_ent.to_host(), g("catm.dentropy_dlogits"), "masked dentropy/dlogits");
}

TEST_CASE("golden: diagonal Gaussian log-prob and entropy match distrax.MultivariateNormalDiag",
          "[losses][golden]") {
  const std::size_t B = gsize("gauss.B"), D = gsize("gauss.D");
  dbuf mean(backend(), g("gauss.mean")), log_std(backend(), g("gauss.log_std")), x(backend(), g("gauss.x"));
  dbuf logp(backend(), B), gm(backend(), B * D), gs(backend(), B * D), ent(backend(), B), ge(backend(), B * D);
  rlk::gaussian_view<double> dist;  // default clamp [-20, 2]: every input log-std lies inside
  dist.dim = D;
  dist.mean = mean.cview();
  dist.log_std = log_std.cview();
  rlk::gaussian_log_prob(backend(), dist, x.cview(), logp.view(), gm.view(), gs.view());
  rlk::gaussian_entropy(backend(), dist, ent.view(), ge.view());
  check_close(logp.to_host(), g("gauss.log_prob"), "log_prob");
  check_close(gm.to_host(), g("gauss.dlog_prob_dmean"), "dlog_prob/dmean");
  check_close(gs.to_host(), g("gauss.dlog_prob_dlog_std"), "dlog_prob/dlog_std");
  check_close(ent.to_host(), g("gauss.entropy"), "entropy");
  check_close(ge.to_host(), g("gauss.dentropy_dlog_std"), "dentropy/dlog_std");
}

TEST_CASE("golden: tanh-Gaussian log-prob matches distrax's Tanh bijector (incl. |u| > 10)", "[losses][golden]") {
  const std::size_t B = gsize("tanh.B"), D = gsize("tanh.D");
  dbuf mean(backend(), g("tanh.mean")), log_std(backend(), g("tanh.log_std")), eps(backend(), g("tanh.noise"));
  dbuf logp(backend(), B), gm(backend(), B * D), gs(backend(), B * D);
  rlk::gaussian_view<double> dist;
  dist.dim = D;
  dist.mean = mean.cview();
  dist.log_std = log_std.cview();
  rlk::tanh_gaussian_log_prob(backend(), dist, rlk::action_bounds<double>{}, eps.cview(), logp.view(), gm.view(),
                              gs.view());
  // u = mean + exp(log_std) * eps is recomputed here (an ulp apart from numpy's at most), so the
  // comparisons allow a few ulps of u times |d log pi / du| <= 2|u|-ish: 1e-12 still holds.
  check_close(logp.to_host(), g("tanh.log_prob"), "log_prob");
  check_close(gm.to_host(), g("tanh.dlog_prob_dmean_reparam"), "dlog_prob/dmean (reparameterised)");
  check_close(gs.to_host(), g("tanh.dlog_prob_dlog_std_reparam"), "dlog_prob/dlog_std (reparameterised)");
}

TEST_CASE("golden: PPO loss matches rlax.clipped_surrogate_pg_loss; boundary gradients as documented",
          "[losses][golden][ppo]") {
  const std::size_t B = gsize("ppo.B");
  const double eps = g("ppo.epsilon")[0];
  const std::vector<double>& logp_h = g("ppo.logp");
  const std::vector<double>& old_h = g("ppo.logp_old");
  const std::vector<double>& ratio = g("ppo.ratio");
  const std::vector<double>& at_boundary = g("ppo.at_boundary");
  dbuf logp(backend(), logp_h), old_logp(backend(), old_h), adv(backend(), g("ppo.adv")), grad(backend(), B);
  const rlk::ppo_policy_stats st =
      rlk::ppo_policy_loss(backend(), logp.cview(), old_logp.cview(), adv.cview(), eps, false, grad.view());
  check_close(st.loss, g("ppo.loss")[0], "loss");
  const std::vector<double> ours = grad.to_host();
  const std::vector<double>& jax_dlogp = g("ppo.dloss_dlogp");
  const std::vector<double>& jax_dratio = g("ppo.dloss_dratio");
  std::size_t boundary_rows = 0;
  for (std::size_t i = 0; i < B; ++i) {
    if (at_boundary[i] == 0.0) {
      check_close(ours[i], jax_dlogp[i], "dloss/dlogp[" + std::to_string(i) + "]");
      check_close(ours[i], jax_dratio[i] * ratio[i], "dloss/dratio * ratio[" + std::to_string(i) + "]");
    } else if (!rlk_test::on_cuda) {
      // Host exp is the C library's, the one the script used to put these ratios exactly on 1 +/- eps.
      ++boundary_rows;
      REQUIRE((std::exp(logp_h[i] - old_h[i]) == 1.0 + eps || std::exp(logp_h[i] - old_h[i]) == 1.0 - eps));
      check_close(ours[i], 2.0 * jax_dratio[i] * ratio[i], "boundary dloss/dlogp[" + std::to_string(i) + "]");
    }
  }
  if (!rlk_test::on_cuda) CHECK(boundary_rows == 4);
}

TEST_CASE("golden: Huber and MSE via td_loss match rlax.huber_loss / rlax.l2_loss", "[losses][golden][dqn]") {
  // A = 1, actions 0, targets 0: the TD error q - y is x itself.
  const std::vector<double>& x = g("huber.x");
  const std::size_t B = x.size();
  dbuf q(backend(), x), targets(backend(), B), weights(backend(), g("huber.weights"));
  dbuf td(backend(), B), grad(backend(), B);
  rlk::buffer<std::int32_t, backend_t> actions(backend(), B);
  for (const char* tag : {"huber_d1", "huber_d2"}) {
    const std::string t = tag;
    rlk::td_loss_options<double> opt;
    opt.kind = rlk::td_loss_kind::huber;
    opt.huber_delta = g(t + ".delta")[0];
    rlk::td_loss_result r =
        rlk::td_loss(backend(), q.cview(), 1, actions.cview(), targets.cview(), {}, opt, td.view(), grad.view());
    check_close(r.loss, g(t + ".loss")[0], t + " loss");
    check_close(grad.to_host(), g(t + ".dloss_dx"), t + " dloss/dx");
    check_close(td.to_host(), scaled(x, -1.0), t + " td_errors = y - q");
    r = rlk::td_loss(backend(), q.cview(), 1, actions.cview(), targets.cview(), weights.cview(), opt, td.view(),
                     grad.view());
    check_close(r.loss, g(t + ".weighted_loss")[0], t + " weighted loss");
    check_close(grad.to_host(), g(t + ".weighted_dloss_dx"), t + " weighted dloss/dx");
  }
  rlk::td_loss_options<double> mse;
  mse.kind = rlk::td_loss_kind::mse;
  const rlk::td_loss_result r =
      rlk::td_loss(backend(), q.cview(), 1, actions.cview(), targets.cview(), {}, mse, td.view(), grad.view());
  check_close(r.loss, 2.0 * g("l2.loss")[0], "mse = 2 x rlax l2 loss");
  check_close(grad.to_host(), scaled(g("l2.dloss_dx"), 2.0), "mse gradient = 2 x rlax's");
}

TEST_CASE("golden: plain value loss matches mean(rlax.l2_loss)", "[losses][golden][ppo]") {
  const std::vector<double>& v = g("value.values");
  dbuf values(backend(), v), returns(backend(), g("value.returns")), grad(backend(), v.size());
  const rlk::value_loss_stats st =
      rlk::value_loss(backend(), values.cview(), returns.cview(), {}, rlk::value_loss_form::plain, 0.0, grad.view());
  check_close(st.loss, g("value.plain_loss")[0], "plain value loss");
  check_close(grad.to_host(), g("value.plain_dloss_dvalues"), "plain value loss gradient");
}

TEST_CASE("golden: Q-learning and Double-DQN TD errors and losses match rlax", "[losses][golden][dqn]") {
  const std::size_t B = gsize("q.B"), A = gsize("q.A");
  const double gamma = g("q.gamma")[0];
  dbuf rewards(backend(), g("q.rewards")), q_tm1(backend(), g("q.q_tm1"));
  dbuf q_target(backend(), g("q.q_t_target")), q_online(backend(), g("q.q_t_online"));
  dbuf discounts(backend(), std::vector<double>(B, gamma)), weights(backend(), g("q.weights"));
  rlk::buffer<std::uint8_t, backend_t> terminated(backend(), gflags("q.terminated"));
  rlk::buffer<std::int32_t, backend_t> actions(backend(), gint("q.actions"));
  dbuf targets(backend(), B), td(backend(), B), grad(backend(), B * A);

  for (const char* tag : {"q", "dq"}) {
    const std::string t = tag;
    for (int with_discounts = 0; with_discounts < 2; ++with_discounts) {
      const rlk::view<const double> disc = with_discounts ? discounts.cview() : rlk::view<const double>{};
      if (t == "q")
        rlk::q_learning_targets(backend(), rewards.cview(), terminated.cview(), q_target.cview(), A, gamma,
                                targets.view(), disc);
      else
        rlk::double_q_learning_targets(backend(), rewards.cview(), terminated.cview(), q_online.cview(),
                                       q_target.cview(), A, gamma, targets.view(), disc);
      rlk::td_loss_options<double> opt;
      opt.kind = rlk::td_loss_kind::mse;
      rlk::td_loss_result r = rlk::td_loss(backend(), q_tm1.cview(), A, actions.cview(), targets.cview(), {}, opt,
                                           td.view(), grad.view());
      check_close(td.to_host(), g(t + ".td_error"), t + " td_error");
      check_close(r.loss, 2.0 * g(t + ".mse_loss")[0], t + " mse loss = 2 x rlax l2");
      check_close(grad.to_host(), scaled(g(t + ".mse_dloss_dq_tm1"), 2.0), t + " mse gradient = 2 x rlax's");
      opt.kind = rlk::td_loss_kind::huber;
      opt.huber_delta = 1.0;
      r = rlk::td_loss(backend(), q_tm1.cview(), A, actions.cview(), targets.cview(), {}, opt, td.view(),
                       grad.view());
      check_close(r.loss, g(t + ".huber_loss")[0], t + " huber loss");
      check_close(grad.to_host(), g(t + ".huber_dloss_dq_tm1"), t + " huber gradient");
      r = rlk::td_loss(backend(), q_tm1.cview(), A, actions.cview(), targets.cview(), weights.cview(), opt,
                       td.view(), grad.view());
      check_close(r.loss, g(t + ".whuber_loss")[0], t + " weighted huber loss");
      check_close(grad.to_host(), g(t + ".whuber_dloss_dq_tm1"), t + " weighted huber gradient");
    }
  }
}
