"""rlkernels.gae / lambda_returns / n_step_returns / vtrace against float64 NumPy loops written
from the bootstrap convention (0 at termination, V(final obs) at truncation, V[t+1] inside the
rollout, last_values at its end)."""

import numpy as np
import pytest

import rlkernels


def _rollout(t=37, n=11, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(t, n))
    v = rng.normal(size=(t, n))
    boot = rng.normal(size=(t, n))
    last = rng.normal(size=n)
    term = rng.random((t, n)) < 0.08
    trunc = rng.random((t, n)) < 0.05
    return [x.astype(dtype) for x in (r, v)] + [term, trunc, last.astype(dtype), boot.astype(dtype)]


def _next_value(t, r, v, term, trunc, last, boot):
    T = r.shape[0]
    nv = np.where(term[t], 0.0, np.where(trunc[t], boot[t], v[t + 1] if t + 1 < T else last))
    return nv


def _gae_ref(r, v, term, trunc, last, boot, gamma, lam):
    T, N = r.shape
    adv = np.zeros((T, N))
    nxt = np.zeros(N)
    for t in reversed(range(T)):
        done = term[t] | trunc[t]
        delta = r[t] + gamma * _next_value(t, r, v, term, trunc, last, boot) - v[t]
        nxt = delta + gamma * lam * (~done) * nxt
        adv[t] = nxt
    return adv, adv + v


def _lambda_ref(r, v, term, trunc, last, boot, gamma, lam):
    T, N = r.shape
    g = np.zeros((T, N))
    for t in reversed(range(T)):
        nv = _next_value(t, r, v, term, trunc, last, boot)
        cont = ~(term[t] | trunc[t]) & (t + 1 < T)
        inside = (1 - lam) * (v[t + 1] if t + 1 < T else 0) + lam * (g[t + 1] if t + 1 < T else 0)
        g[t] = r[t] + gamma * np.where(cont, inside, nv)
    return g


def _nstep_ref(r, v, term, trunc, last, boot, gamma, n):
    T, N = r.shape
    ret = np.zeros((T, N))
    disc = np.zeros((T, N))
    for i in range(N):
        for t in range(T):
            s, k = 0.0, 0
            while True:
                s += gamma**k * r[t + k, i]
                k += 1
                end = t + k - 1
                if term[end, i] or trunc[end, i] or k == n or t + k == T:
                    break
            end = t + k - 1
            nv = _next_value(end, r, v, term, trunc, last, boot)[i]
            ret[t, i] = s + gamma**k * nv
            disc[t, i] = gamma**k * (0.0 if term[end, i] else 1.0)
    return ret, disc


def _vtrace_ref(r, v, term, trunc, last, boot, log_rhos, gamma, lam, rho_bar, c_bar, pg_rho_bar):
    T, N = r.shape
    ratio = np.exp(log_rhos)
    rho, c, pg = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio), np.minimum(pg_rho_bar, ratio)
    vs = np.zeros((T, N))
    pga = np.zeros((T, N))
    carry = np.zeros(N)  # vs[t+1] - V[t+1]
    for t in reversed(range(T)):
        done = term[t] | trunc[t]
        if t == T - 1:
            carry = np.zeros(N)
        delta = rho[t] * (r[t] + gamma * _next_value(t, r, v, term, trunc, last, boot) - v[t])
        vs[t] = v[t] + delta + gamma * c[t] * (~done) * carry
        carry = vs[t] - v[t]
    for t in range(T):
        nvs = np.where(term[t], 0.0, np.where(trunc[t], boot[t], vs[t + 1] if t + 1 < T else last))
        pga[t] = pg[t] * (r[t] + gamma * nvs - v[t])
    return vs, pga


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_gae_and_returns_match_reference(dtype, tol):
    r, v, term, trunc, last, boot = _rollout(dtype=dtype)
    ref = [x.astype(np.float64) for x in (r, v)] + [term, trunc, last.astype(np.float64), boot.astype(np.float64)]
    adv, ret = rlkernels.gae(r, v, term, trunc, last, boot, gamma=0.97, lam=0.9)
    assert adv.dtype == dtype and adv.shape == r.shape
    ra, rr = _gae_ref(*ref, 0.97, 0.9)
    np.testing.assert_allclose(adv, ra, rtol=tol, atol=tol)
    np.testing.assert_allclose(ret, rr, rtol=tol, atol=tol)
    g = rlkernels.lambda_returns(r, v, term, trunc, last, boot, gamma=0.97, lam=0.9)
    np.testing.assert_allclose(g, _lambda_ref(*ref, 0.97, 0.9), rtol=tol, atol=tol)
    nr, nd = rlkernels.n_step_returns(r, v, term, trunc, last, boot, gamma=0.97, n=4)
    er, ed = _nstep_ref(*ref, 0.97, 4)
    np.testing.assert_allclose(nr, er, rtol=tol, atol=tol)
    np.testing.assert_allclose(nd, ed, rtol=tol, atol=tol)
    log_rhos = np.random.default_rng(1).normal(scale=0.5, size=r.shape).astype(dtype)
    vs, pg = rlkernels.vtrace(r, v, term, trunc, last, log_rhos, boot, gamma=0.97, lam=0.95, rho_bar=1.0,
                              c_bar=0.9, pg_rho_bar=1.2)
    evs, epg = _vtrace_ref(*ref, log_rhos.astype(np.float64), 0.97, 0.95, 1.0, 0.9, 1.2)
    np.testing.assert_allclose(vs, evs, rtol=tol, atol=tol)
    np.testing.assert_allclose(pg, epg, rtol=tol, atol=tol)


def test_bootstrap_values_required_when_truncated():
    r, v, term, trunc, last, boot = _rollout()
    with pytest.raises(ValueError, match="bootstrap_values"):
        rlkernels.gae(r, v, term, trunc, last, gamma=0.99, lam=0.95)
    no_trunc = np.zeros_like(trunc)
    adv, _ = rlkernels.gae(r, v, term, no_trunc, last, gamma=0.99, lam=0.95)
    assert np.isfinite(adv).all()


def test_estimator_bad_input():
    r, v, term, trunc, last, boot = _rollout()
    with pytest.raises(ValueError, match="values has shape"):
        rlkernels.gae(r, v[:-1], term, trunc, last, boot)
    with pytest.raises(ValueError, match="last_values"):
        rlkernels.gae(r, v, term, trunc, last[:-1], boot)
    with pytest.raises(ValueError, match="gamma"):
        rlkernels.gae(r, v, term, trunc, last, boot, gamma=1.5)
    with pytest.raises(ValueError, match="n must be >= 1"):
        rlkernels.n_step_returns(r, v, term, trunc, last, boot, n=0)
    with pytest.raises(TypeError, match="float32 or float64"):
        rlkernels.gae(r.astype(np.int64), v, term, trunc, last, boot)


def test_estimators_take_dlpack_inputs():
    torch = pytest.importorskip("torch")
    r, v, term, trunc, last, boot = _rollout()
    adv, _ = rlkernels.gae(torch.from_numpy(r), torch.from_numpy(v), torch.from_numpy(term), torch.from_numpy(trunc),
                           torch.from_numpy(last), torch.from_numpy(boot))
    ref, _ = rlkernels.gae(r, v, term, trunc, last, boot)
    np.testing.assert_array_equal(adv, ref)
    assert torch.from_dlpack(adv).shape == r.shape
