// SAC and TD3 trainers: their critic and actor losses against a float64 reference written here
// from the papers' formulas (plain-loop networks), the assembled gradients against finite
// differences, reproducibility (repeat runs, serial and OpenMP with 1-3 threads), checkpoint resume
// bit for bit, the act/evaluate contract, config validation, and learning on Pendulum-v1.
#include "../test_backend.hpp"
#include "../test_files.hpp"
#include "failing_env.hpp"

#include <rlkernels/algorithms/policy_file.hpp>
#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/envs/pendulum.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using rlk_test::backend_t;
using namespace rlkernels;
using Catch::Matchers::Contains;

/// y = f_L(... f_1(x W_1^T + b_1) ...) with the MLP's flat PyTorch layout, in double.
std::vector<double> ref_mlp(const std::vector<double>& p, const std::vector<int>& sizes, activation hidden,
                            activation out, std::vector<double> x) {
  std::size_t off = 0;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    const int in = sizes[l], o = sizes[l + 1];
    std::vector<double> y(static_cast<std::size_t>(o));
    for (int j = 0; j < o; ++j) {
      double z = p[off + std::size_t(o * in) + std::size_t(j)];
      for (int i = 0; i < in; ++i) z += p[off + std::size_t(j * in + i)] * x[std::size_t(i)];
      const activation a = l + 2 == sizes.size() ? out : hidden;
      y[std::size_t(j)] = a == activation::relu ? std::max(z, 0.0) : a == activation::tanh ? std::tanh(z) : z;
    }
    off += std::size_t(o * in + o);
    x = y;
  }
  return x;
}

std::vector<double> row(const std::vector<double>& v, std::size_t i, std::size_t w) {
  return std::vector<double>(v.begin() + std::ptrdiff_t(i * w), v.begin() + std::ptrdiff_t((i + 1) * w));
}
std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The standard normals eps that tanh_gaussian_sample(seed, draw) uses for a [rows, dim] batch:
/// with mean 0 and log-std 0, the sample's eps output is the noise itself.
std::vector<double> tanh_gaussian_noise(std::size_t rows, std::size_t dim, std::uint64_t seed, std::uint64_t draw) {
  auto zero = rlk_test::zeros<double>(rows * dim);
  auto actions = rlk_test::zeros<double>(rows * dim);
  auto eps = rlk_test::zeros<double>(rows * dim);
  tanh_gaussian_sample(rlk_test::backend(), gaussian_view<double>{dim, zero.cview(), zero.cview()},
                       action_bounds<double>{}, seed, draw, actions.view(), eps.view());
  return eps.to_host();
}

sac_config small_sac() {
  sac_config c;
  c.hidden_sizes = {8, 8};
  c.batch_size = 16;
  c.buffer_size = 500;
  c.learning_starts = 64;
  c.total_timesteps = 400;
  c.policy_frequency = 2;
  c.q_lr = c.policy_lr = c.alpha_lr = 1e-3;
  c.seed = 5;
  return c;
}
td3_config small_td3() {
  td3_config c;
  c.hidden_sizes = {8, 8};
  c.batch_size = 16;
  c.buffer_size = 500;
  c.learning_starts = 64;
  c.total_timesteps = 400;
  c.q_lr = c.policy_lr = 1e-3;
  c.seed = 5;
  return c;
}

template <class Agent>
void warm_up(Agent& agent, std::size_t iterations) {
  for (std::size_t i = 0; i < iterations; ++i) agent.iterate();
}

/// Central differences of `loss()` for a spread of parameters of `net`, against `analytic`.
template <class Net, class Loss>
void check_fd(Net& net, const std::vector<double>& analytic, Loss loss, const char* what) {
  std::vector<double> params = net.parameters_to_host();
  const double h = 1e-6;
  const std::size_t stride = params.size() > 40 ? params.size() / 37 : 1;
  for (std::size_t k = 0; k < params.size(); k += stride) {
    const double original = params[k];
    params[k] = original + h;
    net.set_parameters(params);
    const double up = loss();
    params[k] = original - h;
    net.set_parameters(params);
    const double down = loss();
    params[k] = original;
    net.set_parameters(params);
    const double fd = (up - down) / (2 * h);
    INFO(what << " parameter " << k << ": analytic " << analytic[k] << ", finite difference " << fd);
    CHECK(std::abs(analytic[k] - fd) <= 1e-6 + 1e-5 * std::abs(fd));
  }
}

struct host_batch {
  std::vector<double> obs, actions, rewards, next_obs;
  std::vector<std::uint8_t> terminated;
};
template <class B>
host_batch to_host(const B& b) {
  return {b.observations.to_host(), b.actions.to_host(), b.rewards.to_host(), b.next_observations.to_host(),
          b.terminated.to_host()};
}

template <class Agent>
std::vector<std::vector<typename Agent::scalar_type>> all_parameters(Agent& a) {
  return {a.actor().parameters_to_host(), a.critic1().parameters_to_host(), a.critic2().parameters_to_host(),
          a.critic1_target().parameters_to_host(), a.critic2_target().parameters_to_host(),
          a.envs().observations().to_host()};
}

}  // namespace

TEST_CASE("sac: critic loss equals a float64 reference of the soft double-Q target, gradients match finite differences") {
  using Agent = sac<pendulum<double>, backend_t>;
  sac_config c = small_sac();
  c.gamma = 0.9;
  c.alpha = 0.3;
  c.autotune = false;
  c.critic_loss_scale = 0.5;
  Agent agent(rlk_test::backend(), c);
  warm_up(agent, 40);
  typename Agent::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(99, 1, batch);
  const host_batch hb = to_host(batch);
  const std::uint64_t seed = 1234, draw = 7;
  const twin_critic_loss_result got = agent.critic_loss_and_gradients(batch, seed, draw);

  const std::vector<int> actor_sizes{3, 8, 8, 2}, q_sizes{4, 8, 8, 1};
  const auto pa = agent.actor().parameters_to_host(), p1 = agent.critic1().parameters_to_host(),
             p2 = agent.critic2().parameters_to_host(), t1 = agent.critic1_target().parameters_to_host(),
             t2 = agent.critic2_target().parameters_to_host();
  const std::vector<double> eps = tanh_gaussian_noise(c.batch_size, 1, seed, draw);
  double mse1 = 0, mse2 = 0;
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    const auto s2 = row(hb.next_obs, i, 3);
    const auto head = ref_mlp(pa, actor_sizes, activation::relu, activation::identity, s2);
    const double log_std = std::min(std::max(head[1], c.log_std_min), c.log_std_max);
    const double u = head[0] + std::exp(log_std) * eps[i];
    const double a2 = std::tanh(u);
    const double log_pi = -0.5 * eps[i] * eps[i] - log_std - half_log_2pi - std::log(1 - a2 * a2);
    const double q1t = ref_mlp(t1, q_sizes, activation::relu, activation::identity, concat(s2, {a2}))[0];
    const double q2t = ref_mlp(t2, q_sizes, activation::relu, activation::identity, concat(s2, {a2}))[0];
    const double y = hb.rewards[i] + c.gamma * (hb.terminated[i] ? 0.0 : 1.0) * (std::min(q1t, q2t) - c.alpha * log_pi);
    const auto sa = concat(row(hb.obs, i, 3), {hb.actions[i]});
    mse1 += std::pow(ref_mlp(p1, q_sizes, activation::relu, activation::identity, sa)[0] - y, 2);
    mse2 += std::pow(ref_mlp(p2, q_sizes, activation::relu, activation::identity, sa)[0] - y, 2);
  }
  mse1 /= double(c.batch_size);
  mse2 /= double(c.batch_size);
  CHECK(got.q1_loss == Approx(mse1).epsilon(1e-9));
  CHECK(got.q2_loss == Approx(mse2).epsilon(1e-9));
  CHECK(got.loss == Approx(0.5 * (mse1 + mse2)).epsilon(1e-9));

  const std::vector<double> g1 = agent.critic1().gradients_to_host(), g2 = agent.critic2().gradients_to_host();
  auto loss = [&] { return agent.critic_loss_and_gradients(batch, seed, draw).loss; };
  check_fd(agent.critic1(), g1, loss, "Q1");
  check_fd(agent.critic2(), g2, loss, "Q2");
}

TEST_CASE("sac: actor loss equals a float64 reference, its reparameterised gradient matches finite differences") {
  using Agent = sac<pendulum<double>, backend_t>;
  sac_config c = small_sac();
  c.alpha = 0.7;
  c.autotune = false;
  Agent agent(rlk_test::backend(), c);
  warm_up(agent, 40);
  typename Agent::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(3, 4, batch);
  const host_batch hb = to_host(batch);
  const std::uint64_t seed = 77, draw = 2;
  const sac_actor_loss_result got = agent.actor_loss_and_gradients(batch, seed, draw);

  const std::vector<int> actor_sizes{3, 8, 8, 2}, q_sizes{4, 8, 8, 1};
  const auto pa = agent.actor().parameters_to_host(), p1 = agent.critic1().parameters_to_host(),
             p2 = agent.critic2().parameters_to_host();
  const std::vector<double> eps = tanh_gaussian_noise(c.batch_size, 1, seed, draw);
  double loss = 0, entropy = 0;
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    const auto s = row(hb.obs, i, 3);
    const auto head = ref_mlp(pa, actor_sizes, activation::relu, activation::identity, s);
    const double log_std = std::min(std::max(head[1], c.log_std_min), c.log_std_max);
    const double u = head[0] + std::exp(log_std) * eps[i];
    const double a = std::tanh(u);
    const double log_pi = -0.5 * eps[i] * eps[i] - log_std - 0.5 * std::log(2 * M_PI) - std::log(1 - a * a);
    const double q1 = ref_mlp(p1, q_sizes, activation::relu, activation::identity, concat(s, {a}))[0];
    const double q2 = ref_mlp(p2, q_sizes, activation::relu, activation::identity, concat(s, {a}))[0];
    loss += c.alpha * log_pi - std::min(q1, q2);
    entropy -= log_pi;
  }
  CHECK(got.loss == Approx(loss / double(c.batch_size)).epsilon(1e-9));
  CHECK(got.entropy == Approx(entropy / double(c.batch_size)).epsilon(1e-9));

  const std::vector<double> g = agent.actor().gradients_to_host();
  check_fd(agent.actor(), g, [&] { return agent.actor_loss_and_gradients(batch, seed, draw).loss; }, "actor");
}

TEST_CASE("td3: critic loss equals a float64 reference with target policy smoothing, gradients match finite differences") {
  using Agent = td3<pendulum<double>, backend_t>;
  td3_config c = small_td3();
  c.gamma = 0.95;
  c.policy_noise = 0.4;
  c.noise_clip = 0.3;
  Agent agent(rlk_test::backend(), c);
  warm_up(agent, 40);
  // Move the targets away from the online networks so that the test tells them apart.
  agent.critic1_target().initialize(31);
  agent.critic2_target().initialize(32);
  agent.actor_target().initialize(33);
  typename Agent::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(11, 2, batch);
  const host_batch hb = to_host(batch);
  const std::uint64_t seed = 555, draw = 9;
  const twin_critic_loss_result got = agent.critic_loss_and_gradients(batch, seed, draw);

  // The clipped smoothing noise: td3_smoothed_target_actions on zero actions with wide bounds.
  auto zero = rlk_test::zeros<double>(c.batch_size);
  auto noise_d = rlk_test::zeros<double>(c.batch_size);
  td3_smoothed_target_actions(rlk_test::backend(), zero.cview(), seed, draw, c.policy_noise, c.noise_clip, -10.0, 10.0,
                              noise_d.view());
  const std::vector<double> noise = noise_d.to_host();
  const std::vector<int> actor_sizes{3, 8, 8, 1}, q_sizes{4, 8, 8, 1};
  const auto pt = agent.actor_target().parameters_to_host(), p1 = agent.critic1().parameters_to_host(),
             p2 = agent.critic2().parameters_to_host(), t1 = agent.critic1_target().parameters_to_host(),
             t2 = agent.critic2_target().parameters_to_host();
  double mse1 = 0, mse2 = 0;
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    CHECK(std::abs(noise[i]) <= c.noise_clip);
    const auto s2 = row(hb.next_obs, i, 3);
    const double mu = ref_mlp(pt, actor_sizes, activation::relu, activation::tanh, s2)[0];
    const double a2 = std::min(std::max(mu + noise[i], -1.0), 1.0);
    const double q1t = ref_mlp(t1, q_sizes, activation::relu, activation::identity, concat(s2, {a2}))[0];
    const double q2t = ref_mlp(t2, q_sizes, activation::relu, activation::identity, concat(s2, {a2}))[0];
    const double y = hb.rewards[i] + c.gamma * (hb.terminated[i] ? 0.0 : 1.0) * std::min(q1t, q2t);
    const auto sa = concat(row(hb.obs, i, 3), {hb.actions[i]});
    mse1 += std::pow(ref_mlp(p1, q_sizes, activation::relu, activation::identity, sa)[0] - y, 2);
    mse2 += std::pow(ref_mlp(p2, q_sizes, activation::relu, activation::identity, sa)[0] - y, 2);
  }
  CHECK(got.q1_loss == Approx(mse1 / double(c.batch_size)).epsilon(1e-9));
  CHECK(got.q2_loss == Approx(mse2 / double(c.batch_size)).epsilon(1e-9));
  CHECK(got.loss == Approx((mse1 + mse2) / double(c.batch_size)).epsilon(1e-9));

  const std::vector<double> g1 = agent.critic1().gradients_to_host(), g2 = agent.critic2().gradients_to_host();
  auto loss = [&] { return agent.critic_loss_and_gradients(batch, seed, draw).loss; };
  check_fd(agent.critic1(), g1, loss, "Q1");
  check_fd(agent.critic2(), g2, loss, "Q2");
}

TEST_CASE("td3: actor loss is -mean Q1(s, mu(s)) and its gradient matches finite differences") {
  using Agent = td3<pendulum<double>, backend_t>;
  td3_config c = small_td3();
  Agent agent(rlk_test::backend(), c);
  warm_up(agent, 40);
  typename Agent::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(8, 8, batch);
  const host_batch hb = to_host(batch);
  const double got = agent.actor_loss_and_gradients(batch);
  const std::vector<int> actor_sizes{3, 8, 8, 1}, q_sizes{4, 8, 8, 1};
  const auto pa = agent.actor().parameters_to_host(), p1 = agent.critic1().parameters_to_host();
  double loss = 0;
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    const auto s = row(hb.obs, i, 3);
    const double mu = ref_mlp(pa, actor_sizes, activation::relu, activation::tanh, s)[0];
    loss -= ref_mlp(p1, q_sizes, activation::relu, activation::identity, concat(s, {mu}))[0];
  }
  CHECK(got == Approx(loss / double(c.batch_size)).epsilon(1e-9));
  const std::vector<double> g = agent.actor().gradients_to_host();
  check_fd(agent.actor(), g, [&] { return agent.actor_loss_and_gradients(batch); }, "actor");
}

TEST_CASE("td3: with actor_noise the actor loss is -mean Q1(s, clip(mu(s) + noise)); its gradient passes inside the "
          "clip") {
  using Agent = td3<pendulum<double>, backend_t>;
  td3_config c = small_td3();
  c.actor_noise = 0.6;  // large: a good share of the noisy actions is clipped
  Agent agent(rlk_test::backend(), c);
  warm_up(agent, 40);
  typename Agent::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(8, 8, batch);
  const host_batch hb = to_host(batch);
  const double got = agent.actor_loss_and_gradients(batch);
  const std::vector<int> actor_sizes{3, 8, 8, 1}, q_sizes{4, 8, 8, 1};
  const auto pa = agent.actor().parameters_to_host(), p1 = agent.critic1().parameters_to_host();
  const std::uint64_t key = detail::derive_key(c.seed, detail::ac_key_td3_actor_noise);
  double loss = 0;
  std::size_t clipped = 0;
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    const auto s = row(hb.obs, i, 3);
    const double mu = ref_mlp(pa, actor_sizes, activation::relu, activation::tanh, s)[0];
    rng gen(key, i, 0);  // draw 0, row i of the batch
    const double x = mu + 0.6 * gen.normal<double>();
    const double a = std::min(1.0, std::max(-1.0, x));
    clipped += a != x;
    loss -= ref_mlp(p1, q_sizes, activation::relu, activation::identity, concat(s, {a}))[0];
  }
  CHECK(clipped > 0);
  CHECK(clipped < c.batch_size);
  CHECK(got == Approx(loss / double(c.batch_size)).epsilon(1e-9));
  const std::vector<double> g = agent.actor().gradients_to_host();
  check_fd(agent.actor(), g, [&] { return agent.actor_loss_and_gradients(batch); }, "actor");
  // training with it runs and moves the actor
  const auto before = agent.actor().parameters_to_host();
  warm_up(agent, 100);
  CHECK(agent.actor().parameters_to_host() != before);
  c.actor_noise = -0.1;
  CHECK_THROWS_WITH(Agent(rlk_test::backend(), c), Contains("actor_noise must be finite and >= 0"));
}

TEST_CASE("sac and td3: warm-up, update schedule, temperature and target updates follow the config") {
  using S = sac<pendulum<float>, backend_t>;
  sac_config c = small_sac();
  c.learning_starts = 30;
  c.gradient_steps = 2;
  c.policy_frequency = 2;
  c.target_network_frequency = 3;
  S agent(rlk_test::backend(), c);
  const std::vector<float> target0 = agent.critic1_target().parameters_to_host();
  const std::vector<float> actor0 = agent.actor().parameters_to_host();
  for (int i = 0; i < 30; ++i) {
    const sac_iteration_stats s = agent.iterate();
    CHECK(s.gradient_steps == 0);  // no update before learning_starts steps
  }
  CHECK(agent.actor().parameters_to_host() == actor0);
  CHECK(agent.replay().size() == 30);
  const sac_iteration_stats s = agent.iterate();  // step 31: 2 critic steps, the 2nd triggers 2 actor steps
  CHECK(s.gradient_steps == 2);
  CHECK(agent.gradient_steps() == 2);
  CHECK(agent.actor().parameters_to_host() != actor0);
  CHECK(agent.critic1_target().parameters_to_host() == target0);  // first Polyak update at critic step 3
  CHECK(s.alpha != Approx(0.2));                                     // autotune moved alpha
  agent.iterate();
  CHECK(agent.critic1_target().parameters_to_host() != target0);

  using D = td3<pendulum<float>, backend_t>;
  td3_config t = small_td3();
  t.learning_starts = 30;
  t.policy_frequency = 3;
  D td(rlk_test::backend(), t);
  for (int i = 0; i < 30; ++i) td.iterate();
  const std::vector<float> a0 = td.actor().parameters_to_host(), at0 = td.actor_target().parameters_to_host();
  td.iterate();
  td.iterate();
  CHECK(td.actor().parameters_to_host() == a0);  // critic steps 1 and 2: no actor step
  CHECK(td.actor_target().parameters_to_host() == at0);
  const td3_iteration_stats ts = td.iterate();   // critic step 3: actor and targets
  CHECK(ts.actor_loss != 0.0);
  CHECK(td.actor().parameters_to_host() != a0);
  CHECK(td.actor_target().parameters_to_host() != at0);

  // train_frequency 4: the gradient steps come on iterations 32, 36, 40, ... (every 4th, once
  // learning_starts steps are in the buffer); gradient_steps 2 each
  t.train_frequency = 4;
  t.gradient_steps = 2;
  D tf(rlk_test::backend(), t);
  for (int i = 1; i <= 40; ++i) {
    const td3_iteration_stats st = tf.iterate();
    INFO("iteration " << i);
    CHECK(st.gradient_steps == (i > 30 && i % 4 == 0 ? 2u : 0u));
  }
  CHECK(tf.gradient_steps() == 6);
  t.train_frequency = 0;
  CHECK_THROWS_WITH(D(rlk_test::backend(), t), Contains("train_frequency must be >= 1"));
}

TEST_CASE("td3: RLtools' schedule options: policy actions from the first step, actor warm-up, critic targets every "
          "critic step, weight decay") {
  using D = td3<pendulum<float>, backend_t>;
  // random_warmup = false: the initial actor acts from the first step (exploration noise 0 here,
  // so the env takes mu(s) exactly); with uniform warm-up it does not.
  for (const bool random : {false, true}) {
    td3_config c = small_td3();
    c.num_envs = 3;
    c.random_warmup = random;
    c.exploration_noise = 0;
    D agent(rlk_test::backend(), c);
    vec_env<pendulum<float>, backend_t> ref(rlk_test::backend(), c.num_envs, c.seed);
    buffer<float, backend_t> actions(rlk_test::backend(), c.num_envs);
    agent.act(ref.observations().cview(), actions.view(), true);
    ref.step(actions.cview());
    agent.iterate();
    INFO("random_warmup " << random);
    CHECK((agent.envs().observations().to_host() == ref.observations().to_host()) == !random);
  }

  td3_config t = small_td3();
  t.learning_starts = 30;
  t.policy_frequency = 3;
  // critic_target_frequency 1: the critics' targets move at every critic step, the actor's with
  // the actor (every 3rd); 0 (the default): all three move with the actor.
  for (const std::uint64_t ct : {std::uint64_t(0), std::uint64_t(1)}) {
    t.critic_target_frequency = ct;
    D agent(rlk_test::backend(), t);
    warm_up(agent, 30);
    const std::vector<float> q0 = agent.critic1_target().parameters_to_host(),
                             a0 = agent.actor_target().parameters_to_host();
    agent.iterate();  // critic step 1
    INFO("critic_target_frequency " << ct);
    CHECK((agent.critic1_target().parameters_to_host() != q0) == (ct == 1));
    CHECK(agent.actor_target().parameters_to_host() == a0);
    agent.iterate();
    agent.iterate();  // critic step 3: the actor and its target
    CHECK(agent.actor_target().parameters_to_host() != a0);
    CHECK(agent.critic1_target().parameters_to_host() != q0);
  }
  t.critic_target_frequency = 0;

  // actor_learning_starts 40: the critics learn from env step 31, the actor from 41.
  t.policy_frequency = 1;
  t.actor_learning_starts = 40;
  {
    D agent(rlk_test::backend(), t);
    const std::vector<float> a0 = agent.actor().parameters_to_host(), q0 = agent.critic1().parameters_to_host();
    warm_up(agent, 31);
    CHECK(agent.critic1().parameters_to_host() != q0);
    for (int i = 32; i <= 40; ++i) {
      const td3_iteration_stats st = agent.iterate();
      CHECK(st.actor_loss == 0.0);
    }
    CHECK(agent.actor().parameters_to_host() == a0);
    CHECK(agent.actor_target().parameters_to_host() == a0);
    const td3_iteration_stats st = agent.iterate();  // env step 41
    CHECK(st.actor_loss != 0.0);
    CHECK(agent.actor().parameters_to_host() != a0);
  }
  t.actor_learning_starts = 0;

  // weight_decay: decoupled (AdamW), p -= lr * wd * p before the Adam step; the first update from
  // the same parameters and gradients differs by exactly that.
  {
    td3_config w = t;
    w.weight_decay = 0.5;
    D plain(rlk_test::backend(), t), decayed(rlk_test::backend(), w);
    warm_up(plain, 30);
    warm_up(decayed, 30);
    const std::vector<float> p0 = plain.critic1().parameters_to_host();
    plain.iterate();
    decayed.iterate();
    const std::vector<float> p1 = plain.critic1().parameters_to_host(), d1 = decayed.critic1().parameters_to_host();
    REQUIRE(p0.size() == d1.size());
    for (std::size_t i = 0; i < p0.size(); ++i) {
      INFO("parameter " << i);
      CHECK(double(d1[i]) - double(p1[i]) == Approx(-t.q_lr * 0.5 * double(p0[i])).margin(1e-6));
    }
    CHECK(w.hyperparameters().find("weight_decay=0.5") != std::string::npos);
    w.weight_decay = -1;
    CHECK_THROWS_WITH(D(rlk_test::backend(), w), Contains("weight_decay must be finite and >= 0"));
  }
}

TEST_CASE("sac: the off-policy schedule options: policy actions from the first step, train_frequency, actor "
          "warm-up, weight decay") {
  using S = sac<pendulum<float>, backend_t>;
  // random_warmup = false: the initial policy's draws act from the first step (the draws act()
  // makes with the actions' key and draw 0); with uniform warm-up they do not.
  for (const bool random : {false, true}) {
    sac_config c = small_sac();
    c.num_envs = 3;
    c.random_warmup = random;
    S agent(rlk_test::backend(), c);
    vec_env<pendulum<float>, backend_t> ref(rlk_test::backend(), c.num_envs, c.seed);
    buffer<float, backend_t> actions(rlk_test::backend(), c.num_envs);
    agent.act(ref.observations().cview(), actions.view(), false, detail::derive_key(c.seed, detail::ac_key_actions), 0);
    ref.step(actions.cview());
    agent.iterate();
    INFO("random_warmup " << random);
    CHECK((agent.envs().observations().to_host() == ref.observations().to_host()) == !random);
  }

  sac_config t = small_sac();
  t.learning_starts = 30;
  // train_frequency 4: the gradient steps come on iterations 32, 36, 40, ... (every 4th, once
  // learning_starts steps are in the buffer); gradient_steps 2 each.
  {
    sac_config f = t;
    f.train_frequency = 4;
    f.gradient_steps = 2;
    S agent(rlk_test::backend(), f);
    for (int i = 1; i <= 40; ++i) {
      const sac_iteration_stats st = agent.iterate();
      INFO("iteration " << i);
      CHECK(st.gradient_steps == (i > 30 && i % 4 == 0 ? 2u : 0u));
    }
    CHECK(agent.gradient_steps() == 6);
    CHECK(f.hyperparameters().find("train_frequency=4\n") != std::string::npos);
    f.train_frequency = 0;
    CHECK_THROWS_WITH(S(rlk_test::backend(), f), Contains("train_frequency must be >= 1"));
  }

  // actor_learning_starts 40: the critics learn from env step 31, the actor and the temperature from 41.
  {
    sac_config a = t;
    a.policy_frequency = 1;
    a.actor_learning_starts = 40;
    S agent(rlk_test::backend(), a);
    const std::vector<float> a0 = agent.actor().parameters_to_host(), q0 = agent.critic1().parameters_to_host();
    warm_up(agent, 31);
    CHECK(agent.critic1().parameters_to_host() != q0);
    for (int i = 32; i <= 40; ++i) {
      const sac_iteration_stats st = agent.iterate();
      CHECK(st.actor_loss == 0.0);
    }
    CHECK(agent.actor().parameters_to_host() == a0);
    CHECK(agent.alpha() == Approx(a.alpha).epsilon(1e-6));  // no temperature step either
    const sac_iteration_stats st = agent.iterate();  // env step 41
    CHECK(st.actor_loss != 0.0);
    CHECK(agent.actor().parameters_to_host() != a0);
    CHECK(agent.alpha() != Approx(a.alpha).epsilon(1e-6));
    CHECK(a.hyperparameters().find("actor_learning_starts=40\n") != std::string::npos);
  }

  // weight_decay: decoupled (AdamW), p -= lr * wd * p before the Adam step; the first update from
  // the same parameters and gradients differs by exactly that.
  {
    sac_config w = t;
    w.weight_decay = 0.5;
    S plain(rlk_test::backend(), t), decayed(rlk_test::backend(), w);
    warm_up(plain, 30);
    warm_up(decayed, 30);
    const std::vector<float> p0 = plain.critic1().parameters_to_host();
    plain.iterate();
    decayed.iterate();
    const std::vector<float> p1 = plain.critic1().parameters_to_host(), d1 = decayed.critic1().parameters_to_host();
    REQUIRE(p0.size() == d1.size());
    for (std::size_t i = 0; i < p0.size(); ++i) {
      INFO("parameter " << i);
      CHECK(double(d1[i]) - double(p1[i]) == Approx(-t.q_lr * 0.5 * double(p0[i])).margin(1e-6));
    }
    CHECK(w.hyperparameters().find("weight_decay=0.5\n") != std::string::npos);
    w.weight_decay = -1;
    CHECK_THROWS_WITH(S(rlk_test::backend(), w), Contains("weight_decay must be finite and >= 0"));
  }

  // At their defaults the options add nothing to hyperparameters() (checkpoints stay as before).
  const std::string h = sac_config{}.hyperparameters();
  for (const char* key : {"random_warmup", "train_frequency", "weight_decay", "actor_learning_starts"}) {
    INFO(key);
    CHECK(h.find(key) == std::string::npos);
  }
}

TEST_CASE("sac and td3: a run is a pure function of the config (repeat runs, serial and OpenMP with any thread count agree bit for bit)") {
  // Batches of 300 rows: each network pass is two 256-row chunks, which run on different threads
  // (one chunk, at batch 16, never opens a parallel region); openmp_backend{threads, 0} opens one
  // for every batched op, even over 3 envs.
  sac_config c = small_sac();
  c.total_timesteps = 120;
  c.learning_starts = 40;
  c.num_envs = 3;
  c.batch_size = 300;
  auto run_sac = [&](auto backend) {
    sac<pendulum<float>, decltype(backend)> a(backend, c);
    while (!a.done()) a.iterate();
    return all_parameters(a);
  };
  td3_config t = small_td3();
  t.total_timesteps = 120;
  t.learning_starts = 40;
  t.num_envs = 3;
  t.batch_size = 300;
  auto run_td3 = [&](auto backend) {
    td3<pendulum<float>, decltype(backend)> a(backend, t);
    while (!a.done()) a.iterate();
    return all_parameters(a);
  };
  const auto s1 = run_sac(rlk_test::backend()), t1 = run_td3(rlk_test::backend());
  CHECK(run_sac(rlk_test::backend()) == s1);
  CHECK(run_td3(rlk_test::backend()) == t1);
#if !defined(RLK_BACKEND_CUDA)
  CHECK(run_sac(serial_backend{}) == s1);
  CHECK(run_td3(serial_backend{}) == t1);
  for (int threads : {1, 2, 3}) {
    INFO(threads << " OpenMP threads");
    CHECK(run_sac(openmp_backend{threads, 0}) == s1);
    CHECK(run_td3(openmp_backend{threads, 0}) == t1);
  }
#endif
#if defined(_OPENMP) && defined(RLK_BACKEND_OPENMP)
  // The default openmp backend under another OpenMP default thread count.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(saved == 3 ? 2 : 3);
  CHECK(run_sac(openmp) == s1);
  CHECK(run_td3(openmp) == t1);
  omp_set_num_threads(saved);
#endif
}

namespace {
template <class Agent>
std::vector<double> flat_parameters(Agent& a) {
  std::vector<double> out;
  for (const auto& v : all_parameters(a)) out.insert(out.end(), v.begin(), v.end());
  return out;
}
double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-3, std::abs(a[i])));
  return worst;
}
template <class Agent, class Config>
std::vector<double> trained(const Config& c) {
  Agent a(rlk_test::backend(), c);
  while (!a.done()) a.iterate();
  std::vector<double> p = flat_parameters(a);
  if constexpr (std::is_same_v<Config, sac_config>) p.push_back(a.alpha());
  return p;
}
}  // namespace

TEST_CASE("sac and td3: gradient accumulation over K micro-batches makes the update of the whole batch; env_shards "
          "train as data-parallel ranks would",
          "[accumulation]") {
  // In double, so that only rounding separates the K-part sums from the one-pass batch: after
  // about 130 critic and actor steps the parameters agree to 1e-9, while half the batch (a real
  // change of the algorithm) moves them by far more. The bit-for-bit equality of env_shards = R
  // with R ranks is tested under mpirun (distributed/mpi_test.cpp).
  using sac_t = sac<pendulum<double>, backend_t>;
  using td3_t = td3<pendulum<double>, backend_t>;
  sac_config c = small_sac();
  c.num_envs = 2;
  c.batch_size = 32;
  c.total_timesteps = 2 * 100;
  td3_config t = small_td3();
  t.num_envs = 2;
  t.batch_size = 32;
  t.total_timesteps = 2 * 100;
  const std::vector<double> sac_whole = trained<sac_t>(c), td3_whole = trained<td3_t>(t);
  for (std::size_t k : {2u, 4u, 8u}) {
    CAPTURE(k);
    sac_config a = c;
    a.gradient_accumulation_steps = k;
    CHECK(max_relative_difference(sac_whole, trained<sac_t>(a)) < 1e-9);
    td3_config b = t;
    b.gradient_accumulation_steps = k;
    CHECK(max_relative_difference(td3_whole, trained<td3_t>(b)) < 1e-9);
  }
  sac_config half = c;
  half.batch_size = 16;
  CHECK(max_relative_difference(sac_whole, trained<sac_t>(half)) > 1e-4);
  // Shards sample each shard's own env columns: another valid algorithm, reproducible, and nested
  // with accumulation like the sums they are.
  sac_config sharded = c;
  sharded.env_shards = 2;
  const std::vector<double> two = trained<sac_t>(sharded);
  CHECK(two == trained<sac_t>(sharded));
  CHECK(max_relative_difference(sac_whole, two) > 1e-4);
  sac_config both = sharded;
  both.gradient_accumulation_steps = 2;
  CHECK(max_relative_difference(two, trained<sac_t>(both)) < 1e-9);
  td3_config t_sharded = t;
  t_sharded.env_shards = 2;
  CHECK(trained<td3_t>(t_sharded) == trained<td3_t>(t_sharded));
  // The one-part loss functions refuse a config whose workspaces hold a part.
  sac_config parts = c;
  parts.gradient_accumulation_steps = 2;
  sac_t agent(rlk_test::backend(), parts);
  warm_up(agent, 40);
  typename sac_t::batch_type batch(rlk_test::backend(), c.batch_size, 3, 1);
  agent.replay().sample(1, 0, batch);
  CHECK_THROWS_AS(agent.critic_loss_and_gradients(batch, 1, 0), std::logic_error);
  CHECK_THROWS_AS(agent.actor_loss_and_gradients(batch, 1, 0), std::logic_error);
  sac_config odd = c;
  odd.gradient_accumulation_steps = 3;
  CHECK_THROWS_WITH(sac_t(rlk_test::backend(), odd), Contains("does not split into env_shards * gradient_accumulation_steps"));
  td3_config uneven = t;
  uneven.env_shards = 3;
  CHECK_THROWS_WITH(td3_t(rlk_test::backend(), uneven), Contains("env_shards (3) must be >= 1 and divide num_envs (2)"));
}

TEST_CASE("sac and td3: resuming from a checkpoint continues bit for bit; a checkpoint of another config is refused") {
  const rlk_test::temp_dir tmp;
  const std::string dir = tmp.path.string();
  SECTION("sac") {
    sac_config c = small_sac();
    c.total_timesteps = 160;
    c.learning_starts = 40;
    sac<pendulum<float>, backend_t> straight(rlk_test::backend(), c);
    while (!straight.done()) straight.iterate();

    sac<pendulum<float>, backend_t> first(rlk_test::backend(), c);
    for (int i = 0; i < 100; ++i) first.iterate();
    first.save_checkpoint(dir + "/sac.rlkc");
    sac<pendulum<float>, backend_t> resumed(rlk_test::backend(), c);
    resumed.load_checkpoint(dir + "/sac.rlkc");
    CHECK(resumed.global_step() == 100);
    while (!resumed.done()) resumed.iterate();
    CHECK(all_parameters(resumed) == all_parameters(straight));
    CHECK(resumed.alpha() == straight.alpha());

    sac_config other = c;
    other.gamma = 0.95;
    sac<pendulum<float>, backend_t> wrong(rlk_test::backend(), other);
    const auto before = all_parameters(wrong);
    CHECK_THROWS_WITH(wrong.load_checkpoint(dir + "/sac.rlkc"), Contains("gamma"));
    CHECK(all_parameters(wrong) == before);
    CHECK(wrong.global_step() == 0);
  }
  SECTION("td3, automatic checkpoints") {
    td3_config c = small_td3();
    c.total_timesteps = 160;
    c.learning_starts = 40;
    td3<pendulum<float>, backend_t> straight(rlk_test::backend(), c);
    while (!straight.done()) straight.iterate();

    td3_config with = c;
    with.checkpoint_dir = dir + "/auto";
    with.checkpoint_every = 25;
    with.checkpoint_keep = 2;
    td3<pendulum<float>, backend_t> first(rlk_test::backend(), with);
    for (int i = 0; i < 110; ++i) first.iterate();  // checkpoints at 25, 50, 75, 100; keeps 75 and 100
    const checkpoint_directory d(with.checkpoint_dir, "td3", 2);
    REQUIRE(d.list().size() == 2);
    REQUIRE(d.latest().has_value());
    td3<pendulum<float>, backend_t> resumed(rlk_test::backend(), c);
    resumed.load_checkpoint(*d.latest());
    CHECK(resumed.global_step() == 100);
    while (!resumed.done()) resumed.iterate();
    CHECK(all_parameters(resumed) == all_parameters(straight));
  }
}

TEST_CASE("sac and td3: act and evaluate") {
  sac<pendulum<float>, backend_t> s(rlk_test::backend(), small_sac());
  auto obs = rlk_test::make<float>({1.f, 0.f, 0.5f, 0.f, 1.f, -2.f});
  auto actions = rlk_test::zeros<float>(2);
  s.act(obs.cview(), actions.view(), true);
  for (float a : actions.to_host()) CHECK((a >= -2.f && a <= 2.f));
  s.act(obs.cview(), actions.view(), false, 3, 4);
  const auto first = actions.to_host();
  s.act(obs.cview(), actions.view(), false, 3, 4);
  CHECK(actions.to_host() == first);  // draws are a function of (seed, draw)
  auto wrong = rlk_test::zeros<float>(3);
  CHECK_THROWS_WITH(s.act(obs.cview(), wrong.view(), true), Contains("actions"));
  auto many = rlk_test::zeros<float>(3 * 17);
  auto many_actions = rlk_test::zeros<float>(17);
  CHECK_THROWS_WITH(s.act(many.cview(), many_actions.view(), true), Contains("at most"));
  const policy_evaluation e1 = s.evaluate(5, 9), e2 = s.evaluate(5, 9);
  REQUIRE(e1.returns.size() == 5);
  CHECK(e1.returns == e2.returns);
  CHECK(e1.mean < 0);  // Pendulum's rewards are never positive

  td3<pendulum<float>, backend_t> t(rlk_test::backend(), small_td3());
  t.act(obs.cview(), actions.view(), false, 1, 1);
  for (float a : actions.to_host()) CHECK((a >= -2.f && a <= 2.f));
  CHECK(t.evaluate(3, 2).returns.size() == 3);
  CHECK_THROWS_WITH(t.evaluate(0, 2), Contains("episodes"));
}

TEST_CASE("td3: save_policy, then load and act, gives the agent's deterministic actions in the env's units") {
  rlk_test::temp_dir dir;
  td3_config c = small_td3();
  c.hidden_activation = activation::tanh;
  td3<pendulum<float>, backend_t> agent(rlk_test::backend(), c);
  while (!agent.done()) agent.iterate();  // trained a little, so the actor is not its initialisation
  save_policy(agent, "Pendulum-v1", dir.file("td3.txt"));
  const policy_file p = policy_file::load(dir.file("td3.txt"));
  CHECK(p.env == "Pendulum-v1");
  CHECK(p.continuous);
  CHECK(p.rescale);  // tanh output in [-1, 1] onto [-2, 2], not a clip
  CHECK(p.action_low == -2.0);
  CHECK(p.action_high == 2.0);
  CHECK_FALSE(p.normalize);
  CHECK(p.layout.hidden == activation::tanh);
  CHECK(p.layout.output == activation::tanh);
  const std::vector<float> params = agent.actor().parameters_to_host();
  CHECK(p.weights[0] == std::vector<double>(params.begin(), params.begin() + std::ptrdiff_t(p.weights[0].size())));
  // Observations spread so that the actions cover the range, some saturated near +-2.
  std::vector<float> obs;
  for (int i = 0; i < 8; ++i)
    for (float v : {std::cos(0.8f * float(i)), std::sin(0.8f * float(i)), 8.0f * float(i - 4)}) obs.push_back(v);
  auto in = rlk_test::make<float>(obs);
  auto out = rlk_test::zeros<float>(8);
  agent.act(in.cview(), out.view(), true);
  const std::vector<float> expected = out.to_host();
  double spread = 0;
  for (int i = 0; i < 8; ++i) {
    double o[3] = {obs[std::size_t(3 * i)], obs[std::size_t(3 * i + 1)], obs[std::size_t(3 * i + 2)]}, a = 0;
    p.act(o, &a);
    INFO("observation " << i);
    CHECK(a == Approx(expected[std::size_t(i)]).margin(2e-5));
    spread = std::max(spread, std::abs(a));
  }
  CHECK(spread > 0.1);  // the check above is not between two zeros
}

TEST_CASE("sac and td3: every iteration's statistics count the envs' failed steps", "[failed_steps]") {
  const auto same = [](std::uint64_t a, std::uint64_t b) { CHECK(a == b); };
  sac_config s = small_sac();
  s.num_envs = 3;
  s.total_timesteps = 3 * 60;
  sac<rlk_test::failing_env<double, false>, backend_t> sac_agent(rlk_test::backend(), s);
  const failed_step_counts a = rlk_test::train_and_check_failures(sac_agent, same);
  CHECK(a.capacity_overflows > 0);
  CHECK(a.unstable_steps > 0);
  td3_config t = small_td3();
  t.total_timesteps = 100;
  td3<rlk_test::failing_env<float, false>, backend_t> td3_agent(rlk_test::backend(), t);
  const failed_step_counts b = rlk_test::train_and_check_failures(td3_agent, same);
  CHECK(b.capacity_overflows == 100 / 7 + (100 % 7 >= 3));  // steps 3, 10, ..., 94
  CHECK(b.unstable_steps > 0);
}

TEST_CASE("sac and td3: configs are validated with the field named") {
  sac_config s;
  s.batch_size = 0;
  CHECK_THROWS_WITH(s.validate(), Contains("batch_size"));
  s = sac_config{};
  s.tau = 1.5;
  CHECK_THROWS_WITH(s.validate(), Contains("tau"));
  s = sac_config{};
  s.alpha = -1;
  CHECK_THROWS_WITH(s.validate(), Contains("alpha"));
  s = sac_config{};
  s.log_std_min = 3;
  CHECK_THROWS_WITH(s.validate(), Contains("log_std_min"));
  s = sac_config{};
  s.checkpoint_every = 10;
  CHECK_THROWS_WITH(s.validate(), Contains("checkpoint_dir"));
  s = small_sac();
  s.policy_frequency = 0;
  CHECK_THROWS_WITH((sac<pendulum<float>, backend_t>(rlk_test::backend(), s)), Contains("policy_frequency"));

  td3_config t;
  t.noise_clip = -1;
  CHECK_THROWS_WITH(t.validate(), Contains("noise_clip"));
  t = td3_config{};
  t.gamma = 2;
  CHECK_THROWS_WITH(t.validate(), Contains("gamma"));
  t = td3_config{};
  t.hidden_sizes = {};
  CHECK_THROWS_WITH(t.validate(), Contains("hidden_sizes"));
  CHECK(sac_preset("Pendulum-v1").hidden_sizes == std::vector<int>{64, 64});
  CHECK(td3_preset("Unknown-v0").hidden_sizes == td3_config{}.hidden_sizes);
}

// ---- learning: docs/training.md's claims on several seeds ----
// Tagged [.][learning]: hidden from a plain run of the binary and so from its ordinary CTest
// registration (and from the sanitizer builds); the CTest test actor_critic_test_learning (labels
// host;learning) runs `actor_critic_test_openmp "[learning]"`. The presets, shortened to the
// smallest budgets that reach -250 with a margin on seeds 1-5 in this build (evaluation along
// training, 2026-12-01: SAC first <= -250 at 4k-5k steps and -184 or better from 5k on; TD3 at
// 7k-9k and -209 or better at 10k), are checked on seeds 1-2: the deterministic policy scores
// >= -250 on 100 fresh episodes (a random policy scores about -1200).
TEST_CASE("sac learns Pendulum-v1 to -250 on seeds 1-2 (the preset, 6k steps)", "[.][learning]") {
  for (std::uint64_t seed : {1, 2}) {
    sac_config c = sac_preset("Pendulum-v1");
    c.seed = seed;
    c.total_timesteps = 6000;
    sac<pendulum<float>, backend_t> agent(rlk_test::backend(), c);
    while (!agent.done()) agent.iterate();
    const policy_evaluation e = agent.evaluate(100, seed + 1000003);
    std::printf("sac Pendulum-v1 seed %d, 6k steps: evaluation %.1f +- %.1f\n", int(seed), e.mean, e.std);
    INFO("seed " << seed << ": evaluation " << e.mean);
    CHECK(e.mean >= -250);
  }
}

TEST_CASE("td3 learns Pendulum-v1 to -250 on seeds 1-2 (the preset, 10k steps)", "[.][learning]") {
  for (std::uint64_t seed : {1, 2}) {
    td3_config c = td3_preset("Pendulum-v1");
    c.seed = seed;
    c.total_timesteps = 10000;
    td3<pendulum<float>, backend_t> agent(rlk_test::backend(), c);
    while (!agent.done()) agent.iterate();
    const policy_evaluation e = agent.evaluate(100, seed + 1000003);
    std::printf("td3 Pendulum-v1 seed %d, 10k steps: evaluation %.1f +- %.1f\n", int(seed), e.mean, e.std);
    INFO("seed " << seed << ": evaluation " << e.mean);
    CHECK(e.mean >= -250);
  }
}

// ---- host round trips (docs/training.md, "Host round trips per iteration") ----
namespace {
using namespace rlkernels;

/// Host waits of one SAC or TD3 iteration (one env step of every env and its gradient steps) after
/// two warm-up iterations.
template <class Agent, class Config>
std::uint64_t off_policy_iteration_syncs(Config c, std::size_t num_envs, std::size_t gradient_steps) {
  c.num_envs = num_envs;
  c.gradient_steps = gradient_steps;
  c.learning_starts = 0;
  c.total_timesteps = 100000;
  Agent agent(rlk_test::backend(), c);
  agent.iterate();
  agent.iterate();
  reset_host_sync_counts();
  agent.iterate();
  return host_sync_counts().total();
}
}  // namespace

TEST_CASE("host round trips: one SAC or TD3 iteration waits once, whatever its env steps and gradient steps",
          "[sac][td3][host_sync]") {
  if (!host_sync_counting_enabled) return;
  using sac_t = sac<pendulum<double>, backend_t>;
  using td3_t = td3<pendulum<double>, backend_t>;
  sac_config fixed_alpha = small_sac();
  fixed_alpha.autotune = false;
  const std::uint64_t sac_few = off_policy_iteration_syncs<sac_t>(fixed_alpha, 1, 1),
                      sac_many = off_policy_iteration_syncs<sac_t>(fixed_alpha, 4, 5);
  const std::uint64_t td3_few = off_policy_iteration_syncs<td3_t>(small_td3(), 1, 1),
                      td3_many = off_policy_iteration_syncs<td3_t>(small_td3(), 4, 5);
  INFO("SAC " << sac_few << " vs " << sac_many << "; TD3 " << td3_few << " vs " << td3_many);
  CHECK(sac_few == sac_many);
  CHECK(td3_few == td3_many);
  CHECK(sac_few == 1);
  CHECK(td3_few == 1);
  // With autotune the temperature is a host value: one more read per actor step. Iteration 3 of
  // 5 critic steps (11 .. 15) runs the actor twice per policy_frequency (2) at steps 12 and 14.
  const std::uint64_t sac_autotune = off_policy_iteration_syncs<sac_t>(small_sac(), 4, 5);
  CHECK(sac_autotune == 1 + 4);
}

TEST_CASE("host round trips: a SAC evaluation batch polls O(log episode length) times, whatever its size",
          "[sac][host_sync]") {
  if (!host_sync_counting_enabled) return;
  sac<pendulum<double>, backend_t> agent(rlk_test::backend(), small_sac());
  for (std::size_t episodes : {std::size_t(1), std::size_t(32)}) {
    reset_host_sync_counts();
    agent.evaluate(episodes, 5);
    INFO(episodes << " episodes: " << host_sync_counts().total() << " host waits");
    // Pendulum's 200-step episodes: polls after 8 .. 128 steps, the one that sees the end, the returns.
    CHECK(host_sync_counts().total() == 7);
  }
}
