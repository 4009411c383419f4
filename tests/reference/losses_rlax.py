#!/usr/bin/env python3
"""Golden values for rlkernels' loss kernels, computed by DeepMind's rlax / distrax (JAX, float64).

Writes, next to this script:
  losses_rlax.json  {"meta": {...versions...}, "data": {name: [values as Python repr strings]}}
  losses_rlax.txt   the same data, one "name index value" per line ('#' lines are comments);
                    values are Python repr() of float64, which round-trip exactly through strtod.
tests/losses/golden_losses_test.cpp reads the .txt file.

Regenerate (CPU is enough; results are deterministic):
    pip install rlax          # pulls jax, jaxlib (CPU), chex, distrax
    python3 tests/reference/losses_rlax.py
Versions used for the committed files are in the "meta" block / header of the outputs
(python 3.11.7, jax 0.10.2, jaxlib 0.10.2, rlax 0.1.9, distrax 0.1.9, numpy see meta).

Every value below comes from an rlax/distrax function (or jax.grad of one); this script never
re-implements a loss formula. Inputs are hard-coded or drawn from np.random.default_rng(0).
Conventions of the references (mapping to rlkernels is in golden_losses_test.cpp):
  * distrax.Categorical: log-softmax of logits; masks are expressed as logits = -inf (the standard
    way to mask with distrax); entropy = -sum p log p with 0*log 0 = 0.
  * distrax.MultivariateNormalDiag(mean, exp(log_std)): log_prob / entropy summed over D.
  * tanh-Gaussian: log pi(tanh(u)) = Normal(mean, std).log_prob(u) - sum distrax.Tanh()
    .forward_log_det_jacobian(u) (exactly what distrax.Transformed(MultivariateNormalDiag,
    Block(Tanh, 1)) computes in sample_and_log_prob; checked against Transformed.log_prob(tanh(u))
    for moderate u below).
  * rlax.clipped_surrogate_pg_loss(ratio, adv, eps) = -mean(fmin(r*A, clip(r,1-eps,1+eps)*A)).
    NOTE: JAX's gradient at r exactly 1 +/- eps is A/2 per sample (fmin at a tie takes the 2nd arg,
    jnp.clip splits the gradient 0.5/0.5 at its bound); rlkernels' documented convention passes the
    full gradient there. Those rows are flagged in "ppo.at_boundary".
  * rlax.huber_loss(x, delta) elementwise; rlax.l2_loss(x) = 0.5 x^2 elementwise.
  * rlax.q_learning / rlax.double_q_learning: td = r + discount * Q_target(s', a*) - Q(s, a),
    with discount = gamma * (1 - terminated).
"""
import json
import math
import os
import platform
import sys

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
import distrax  # noqa: E402
import rlax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
data = {}


def put(name, arr):
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        assert a.dtype == np.float64, (name, a.dtype)
        vals = [repr(float(v)) for v in a.reshape(-1)]
    elif a.dtype.kind in "iub":
        vals = [repr(int(v)) for v in a.reshape(-1)]
    else:
        raise TypeError(name)
    assert name not in data, name
    data[name] = vals


def f64(x):
    return np.asarray(x, dtype=np.float64)


rng = np.random.default_rng(0)

# --------------------------------------------------------------------------- categorical
# [B, A] logits, B = 6, A = 4; row 3 has logits ~1e3 (log-softmax must subtract the max);
# row 5 has a large spread.
B, A = 6, 4
cat_logits = f64(rng.normal(size=(B, A)) * 2.0)
cat_logits[3] = [1000.0, 999.5, -1000.0, 1001.0]
cat_logits[5] = [30.0, -30.0, 0.0, 29.0]
cat_actions = np.array([0, 3, 2, 1, 3, 1], dtype=np.int64)


def cat_logp(logits, a):
    return distrax.Categorical(logits=logits).log_prob(a)


def cat_ent(logits):
    return distrax.Categorical(logits=logits).entropy()


put("cat.B", np.array([B]))
put("cat.A", np.array([A]))
put("cat.logits", cat_logits)
put("cat.actions", cat_actions)
put("cat.log_prob", jax.vmap(cat_logp)(cat_logits, cat_actions))
put("cat.entropy", jax.vmap(cat_ent)(cat_logits))
put("cat.probs", jax.vmap(lambda l: distrax.Categorical(logits=l).probs)(cat_logits))
# Per-row gradients (the Jacobian is block diagonal, so grad of the sum = per-row gradients).
put("cat.dlog_prob_dlogits",
    jax.grad(lambda l: jnp.sum(jax.vmap(cat_logp)(l, cat_actions)))(cat_logits))
put("cat.dentropy_dlogits", jax.grad(lambda l: jnp.sum(jax.vmap(cat_ent)(l)))(cat_logits))

# Masked categorical: mask[b, j] = 1 allowed, 0 masked; reference uses logits -> -inf where masked.
cat_mask = np.ones((B, A), dtype=np.uint8)
cat_mask[0, 1] = 0
cat_mask[1, [0, 2]] = 0
cat_mask[3, 3] = 0            # masks the largest of the ~1e3 logits
cat_mask[4, [0, 1, 2]] = 0    # a single allowed action: log_prob 0, entropy 0
masked_logits = jnp.where(cat_mask == 1, cat_logits, -jnp.inf)
for b in range(B):
    assert cat_mask[b, cat_actions[b]] == 1
put("catm.mask", cat_mask)
put("catm.log_prob", jax.vmap(cat_logp)(masked_logits, cat_actions))
put("catm.entropy", jax.vmap(cat_ent)(masked_logits))
put("catm.probs", jax.vmap(lambda l: distrax.Categorical(logits=l).probs)(masked_logits))


def masked_sum_logp(l):
    return jnp.sum(jax.vmap(cat_logp)(jnp.where(cat_mask == 1, l, -jnp.inf), cat_actions))


def masked_sum_ent(l):
    return jnp.sum(jax.vmap(cat_ent)(jnp.where(cat_mask == 1, l, -jnp.inf)))


put("catm.dlog_prob_dlogits", jax.grad(masked_sum_logp)(cat_logits))
put("catm.dentropy_dlogits", jax.grad(masked_sum_ent)(cat_logits))

# --------------------------------------------------------------------------- diagonal Gaussian
B, D = 5, 2
g_mean = f64(rng.normal(size=(B, D)))
g_log_std = f64(rng.uniform(-1.5, 1.0, size=(B, D)))
g_log_std[3] = [-5.0, 1.5]    # extreme-ish log-stds
g_x = f64(g_mean + np.exp(g_log_std) * rng.normal(size=(B, D)))
g_x[4] = g_mean[4] + 3.0 * np.exp(g_log_std[4])   # a 3-sigma sample


def gauss_logp(mean, log_std, x):
    return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std)).log_prob(x)


def gauss_ent(mean, log_std):
    return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std)).entropy()


put("gauss.B", np.array([B]))
put("gauss.D", np.array([D]))
put("gauss.mean", g_mean)
put("gauss.log_std", g_log_std)
put("gauss.x", g_x)
put("gauss.log_prob", gauss_logp(g_mean, g_log_std, g_x))
put("gauss.entropy", gauss_ent(g_mean, g_log_std))
gl = lambda m, s, x: jnp.sum(gauss_logp(m, s, x))  # noqa: E731
put("gauss.dlog_prob_dmean", jax.grad(gl, 0)(g_mean, g_log_std, g_x))
put("gauss.dlog_prob_dlog_std", jax.grad(gl, 1)(g_mean, g_log_std, g_x))
put("gauss.dlog_prob_dx", jax.grad(gl, 2)(g_mean, g_log_std, g_x))
put("gauss.dentropy_dlog_std",
    jax.grad(lambda m, s: jnp.sum(gauss_ent(m, s)), 1)(g_mean, g_log_std))

# --------------------------------------------------------------------------- tanh-squashed Gaussian
# u is the pre-tanh sample; a = tanh(u). Rows 2 and 3 have |u| > 10 where atanh(a) is useless in
# float64, so the log-prob is taken as a function of u (as SAC implementations do).
B, D = 5, 2
t_mean = f64(rng.normal(size=(B, D)))
t_log_std = f64(rng.uniform(-1.0, 0.5, size=(B, D)))
t_noise = f64(rng.normal(size=(B, D)))
t_noise[2] = [11.0, -3.0]
t_noise[3] = [-14.0, 9.0]
t_mean[2] = [1.0, 0.0]
t_log_std[2] = [0.5, 0.0]
t_mean[3] = [-2.0, 12.0]
t_log_std[3] = [0.0, -1.0]
t_u = f64(t_mean + np.exp(t_log_std) * t_noise)
assert np.abs(t_u[2:4]).max() > 10.0


def tanh_logp_u(mean, log_std, u):
    base = distrax.MultivariateNormalDiag(mean, jnp.exp(log_std)).log_prob(u)
    return base - jnp.sum(distrax.Tanh().forward_log_det_jacobian(u), axis=-1)


def tanh_logp_reparam(mean, log_std, noise):
    return tanh_logp_u(mean, log_std, mean + jnp.exp(log_std) * noise)


# Cross-check against distrax.Transformed where atanh is well conditioned.
dist = distrax.Transformed(
    distrax.MultivariateNormalDiag(t_mean[:2], jnp.exp(t_log_std[:2])),
    distrax.Block(distrax.Tanh(), 1))
chk = dist.log_prob(jnp.tanh(t_u[:2]))
np.testing.assert_allclose(chk, tanh_logp_u(t_mean[:2], t_log_std[:2], t_u[:2]), rtol=1e-9)

put("tanh.B", np.array([B]))
put("tanh.D", np.array([D]))
put("tanh.mean", t_mean)
put("tanh.log_std", t_log_std)
put("tanh.noise", t_noise)
put("tanh.u", t_u)
put("tanh.action", jnp.tanh(t_u))
put("tanh.log_prob", tanh_logp_u(t_mean, t_log_std, t_u))
tl = lambda m, s, u: jnp.sum(tanh_logp_u(m, s, u))  # noqa: E731
# Partial derivatives with u held fixed:
put("tanh.dlog_prob_dmean_fixed_u", jax.grad(tl, 0)(t_mean, t_log_std, t_u))
put("tanh.dlog_prob_dlog_std_fixed_u", jax.grad(tl, 1)(t_mean, t_log_std, t_u))
put("tanh.dlog_prob_du", jax.grad(tl, 2)(t_mean, t_log_std, t_u))
# Total derivatives through the reparameterisation u = mean + exp(log_std) * noise (SAC actor):
tr = lambda m, s, n: jnp.sum(tanh_logp_reparam(m, s, n))  # noqa: E731
put("tanh.dlog_prob_dmean_reparam", jax.grad(tr, 0)(t_mean, t_log_std, t_noise))
put("tanh.dlog_prob_dlog_std_reparam", jax.grad(tr, 1)(t_mean, t_log_std, t_noise))

# --------------------------------------------------------------------------- PPO clipped surrogate
B = 8
eps = 0.2
p_logp_old = f64(rng.normal(size=B) - 1.0)
p_delta = f64(rng.normal(size=B) * 0.3)
p_adv = f64(rng.normal(size=B))
p_adv[6] = -abs(p_adv[6])
p_adv[7] = abs(p_adv[7])
p_adv[1] = -abs(p_adv[1])             # row 1: ratio < 1 - eps with A < 0: clipped, zero gradient


def libm_exp(v):
    # math.exp is the C library's exp (glibc here), the same function std::exp calls in the C++
    # test, so "exactly at the boundary" holds there too. jnp.exp / np.exp may differ by an ulp.
    return np.array([math.exp(float(t)) for t in np.asarray(v).reshape(-1)])


p_delta[0] = 0.5                      # clipped above
p_delta[1] = -0.6                     # clipped below
p_logp = f64(p_logp_old + p_delta)
# Rows 2, 6: ratio exactly 1 + eps (adv < 0 in row 6); rows 5, 7: exactly 1 - eps (adv > 0 in
# row 7). logp is nudged by ulps until the C library's exp(logp - logp_old) hits the bound exactly.
for i, target in ((2, 1.0 + eps), (5, 1.0 - eps), (6, 1.0 + eps), (7, 1.0 - eps)):
    p_logp[i] = p_logp_old[i] + math.log(target)
    for _ in range(400):
        r = math.exp(p_logp[i] - p_logp_old[i])
        if r == target:
            break
        p_logp[i] = np.nextafter(p_logp[i], np.inf if r < target else -np.inf)
    assert math.exp(p_logp[i] - p_logp_old[i]) == target, i
p_ratio = libm_exp(p_logp - p_logp_old)
at_boundary = np.array([int(r == 1.0 + eps or r == 1.0 - eps) for r in p_ratio], dtype=np.int64)


def ppo_from_logp(logp, logp_old, adv):
    return rlax.clipped_surrogate_pg_loss(jnp.exp(logp - logp_old), adv, eps)


put("ppo.B", np.array([B]))
put("ppo.epsilon", f64([eps]))
put("ppo.logp", p_logp)
put("ppo.logp_old", p_logp_old)
put("ppo.adv", p_adv)
put("ppo.ratio", p_ratio)
put("ppo.at_boundary", at_boundary)
# The loss from the libm ratios (the exact boundary rows); the logp-gradient through jnp.exp.
put("ppo.loss", rlax.clipped_surrogate_pg_loss(p_ratio, p_adv, eps))
put("ppo.loss_jnp_exp", ppo_from_logp(p_logp, p_logp_old, p_adv))
# d loss / d logp through jnp.exp: XLA's exp may miss the exact bound by an ulp, so this is only
# meaningful on rows with ppo.at_boundary == 0 (use dloss_dratio * ratio on the boundary rows).
put("ppo.dloss_dlogp", jax.grad(ppo_from_logp, 0)(p_logp, p_logp_old, p_adv))
put("ppo.dloss_dratio",
    jax.grad(lambda r: rlax.clipped_surrogate_pg_loss(r, p_adv, eps))(p_ratio))

# --------------------------------------------------------------------------- Huber and L2
h_x = f64([-3.0, -1.0, -0.4, 0.0, 0.25, 1.0, 1.7, 2.0])
h_w = f64(rng.uniform(0.1, 1.0, size=h_x.size))
for delta in (1.0, 2.0):
    tag = "huber_d%d" % int(delta)
    mean_h = lambda x: jnp.mean(rlax.huber_loss(x, delta))  # noqa: E731
    wmean_h = lambda x: jnp.mean(h_w * rlax.huber_loss(x, delta))  # noqa: E731
    put(tag + ".delta", f64([delta]))
    put(tag + ".elementwise", rlax.huber_loss(h_x, delta))
    put(tag + ".loss", mean_h(h_x))
    put(tag + ".dloss_dx", jax.grad(mean_h)(h_x))
    put(tag + ".weighted_loss", wmean_h(h_x))
    put(tag + ".weighted_dloss_dx", jax.grad(wmean_h)(h_x))
put("huber.x", h_x)
put("huber.weights", h_w)
put("l2.elementwise", rlax.l2_loss(h_x))
put("l2.loss", jnp.mean(rlax.l2_loss(h_x)))
put("l2.dloss_dx", jax.grad(lambda x: jnp.mean(rlax.l2_loss(x)))(h_x))

# Plain value loss: mean(rlax.l2_loss(v, R)) = 0.5 mean((v - R)^2).
v_pred = f64(rng.normal(size=7))
v_ret = f64(rng.normal(size=7))
put("value.values", v_pred)
put("value.returns", v_ret)
put("value.plain_loss", jnp.mean(rlax.l2_loss(v_pred, v_ret)))
put("value.plain_dloss_dvalues", jax.grad(lambda v: jnp.mean(rlax.l2_loss(v, v_ret)))(v_pred))

# --------------------------------------------------------------------------- Q-learning, double Q
B, A = 6, 4
gamma = 0.99
q_tm1 = f64(rng.normal(size=(B, A)))
q_t_target = f64(rng.normal(size=(B, A)))
q_t_online = f64(rng.normal(size=(B, A)))
q_a = np.array([1, 0, 3, 2, 2, 1], dtype=np.int64)
q_r = f64(rng.normal(size=B))
q_term = np.array([0, 0, 1, 0, 1, 0], dtype=np.uint8)
q_disc = f64(gamma * (1.0 - q_term))
q_w = f64(rng.uniform(0.2, 1.0, size=B))
# No ties in argmax (rlkernels and rlax could legitimately break ties differently).
for m in (q_t_target, q_t_online):
    s = np.sort(m, axis=1)
    assert np.all(s[:, -1] - s[:, -2] > 1e-6)

put("q.B", np.array([B]))
put("q.A", np.array([A]))
put("q.gamma", f64([gamma]))
put("q.q_tm1", q_tm1)
put("q.q_t_target", q_t_target)
put("q.q_t_online", q_t_online)
put("q.actions", q_a)
put("q.rewards", q_r)
put("q.terminated", q_term)
put("q.discounts", q_disc)
put("q.weights", q_w)

qlearn = jax.vmap(rlax.q_learning)
dqlearn = jax.vmap(rlax.double_q_learning)


def td_q(qt):
    return qlearn(qt, q_a, q_r, q_disc, q_t_target)


def td_dq(qt):
    return dqlearn(qt, q_a, q_r, q_disc, q_t_target, q_t_online)


put("q.td_error", td_q(q_tm1))
put("dq.td_error", td_dq(q_tm1))
for name, td in (("q", td_q), ("dq", td_dq)):
    losses = {
        "mse": lambda qt, td=td: jnp.mean(rlax.l2_loss(td(qt))),            # 0.5 * mean(td^2)
        "huber": lambda qt, td=td: jnp.mean(rlax.huber_loss(td(qt), 1.0)),
        "whuber": lambda qt, td=td: jnp.mean(q_w * rlax.huber_loss(td(qt), 1.0)),
    }
    for lname, fn in losses.items():
        put("%s.%s_loss" % (name, lname), fn(q_tm1))
        put("%s.%s_dloss_dq_tm1" % (name, lname), jax.grad(fn)(q_tm1))

# --------------------------------------------------------------------------- write
meta = {
    "generator": "tests/reference/losses_rlax.py",
    "python": platform.python_version(),
    "numpy": np.__version__,
    "jax": jax.__version__,
    "jaxlib": jaxlib.__version__,
    "rlax": rlax.__version__,
    "distrax": distrax.__version__,
    "jax_enable_x64": True,
    "regenerate": "pip install rlax && python3 tests/reference/losses_rlax.py",
}
with open(os.path.join(HERE, "losses_rlax.json"), "w") as f:
    json.dump({"meta": meta, "data": data}, f, indent=1)
    f.write("\n")
with open(os.path.join(HERE, "losses_rlax.txt"), "w") as f:
    f.write("# Golden values from rlax/distrax (float64), generated by tests/reference/losses_rlax.py\n")
    for k, v in meta.items():
        f.write("# %s: %s\n" % (k, v))
    f.write("# format: name index value   (arrays row-major; value is Python repr of float64 or int)\n")
    for name, vals in data.items():
        for i, v in enumerate(vals):
            f.write("%s %d %s\n" % (name, i, v))
print("wrote %d arrays, %d values" % (len(data), sum(len(v) for v in data.values())), file=sys.stderr)
