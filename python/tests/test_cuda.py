"""backend="cuda": refused with the build option's name when the module has no CUDA backend; with a
GPU and a CUDA build, trajectories agree with the host backend within rounding, arrays are zero-copy
device views (DLPack and __cuda_array_interface__), and actions come from the GPU or the host."""

import numpy as np
import pytest

import rlkernels


def test_cuda_backend_is_refused_naming_the_build_option_when_absent():
    if rlkernels.has_cuda:
        pytest.skip("this build has the CUDA backend")
    with pytest.raises(ValueError, match="RLK_PYTHON_CUDA=ON"):
        rlkernels.make_vec("CartPole-v1", 4, backend="cuda")


def _torch_with_gpu():
    torch = pytest.importorskip("torch")
    if not rlkernels.has_cuda:
        pytest.skip("this build has no CUDA backend (RLK_PYTHON_CUDA=OFF)")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    return torch


def _cuda_and_serial(torch, env_id, n, seed):
    """The same float64 batch on CUDA and on the serial backend, both reset; returns them, their
    first observations and a device-to-NumPy copy function."""
    gpu = rlkernels.make_vec(env_id, n, seed=seed, backend="cuda", dtype="float64")
    cpu = rlkernels.make_vec(env_id, n, seed=seed, backend="serial", dtype="float64", final_obs="array",
                             capacity="measured")  # the capacities "auto" gives on CUDA
    obs_g, _ = gpu.reset(seed=seed)
    obs_c, _ = cpu.reset(seed=seed)
    return gpu, cpu, obs_g, obs_c, lambda x: torch.from_dlpack(x).cpu().numpy()


def test_cuda_agrees_with_the_host_and_views_device_memory():
    torch = _torch_with_gpu()
    n = 1024
    gpu, cpu, obs_g, obs_c, host = _cuda_and_serial(torch, "CartPole-v1", n, 3)
    np.testing.assert_allclose(host(obs_g), obs_c, rtol=1e-5, atol=1e-6)
    rng = np.random.default_rng(0)
    address = torch.from_dlpack(obs_g).data_ptr()
    assert obs_g.__cuda_array_interface__["data"][0] == address
    for t in range(50):
        a = rng.integers(0, 2, size=n).astype(np.int32)
        actions = torch.from_numpy(a).cuda() if t % 2 == 0 else a  # device actions, and host ones (copied)
        og, rg, tg, trg, ig = gpu.step(actions)
        oc, rc, tc, trc, ic = cpu.step(a)
        np.testing.assert_array_equal(host(tg), tc)
        np.testing.assert_array_equal(host(trg), trc)
        np.testing.assert_allclose(host(og), oc, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(host(ig["final_obs"]), ic["final_obs"] if "final_obs" in ic else oc,
                                   rtol=1e-5, atol=1e-6)
        assert torch.from_dlpack(og).data_ptr() == address
    gpu.step(rng.integers(0, 2, size=n))  # int64 host actions: checked and narrowed, then copied
    with pytest.raises(TypeError, match="int32"):
        gpu.step(torch.zeros(n, dtype=torch.int64, device="cuda"))
    with pytest.raises(TypeError, match="CPU"):
        cpu.step(torch.zeros(n, dtype=torch.int32, device="cuda"))
    bad = torch.zeros(n, dtype=torch.int32, device="cuda")
    bad[7] = 5
    with pytest.raises(ValueError, match="env 7"):
        gpu.step(bad)


def test_cuda_arrays_reach_cupy_and_jax_without_a_copy():
    torch = _torch_with_gpu()
    gpu = rlkernels.make_vec("CartPole-v1", 256, seed=5, backend="cuda")
    obs, _ = gpu.reset(seed=5)
    address = obs.__cuda_array_interface__["data"][0]
    expected = torch.from_dlpack(obs).cpu().numpy()
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        c = cupy.asarray(obs)  # through __cuda_array_interface__
        assert c.data.ptr == address
        np.testing.assert_array_equal(cupy.asnumpy(c), expected)
    try:
        import jax
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except Exception:  # noqa: BLE001  (no jax, or jax without its CUDA plugin)
        gpus = []
    if gpus:
        j = jax.dlpack.from_dlpack(obs)
        assert j.unsafe_buffer_pointer() == address
        np.testing.assert_array_equal(np.asarray(j), expected)
    if cupy is None and not gpus:
        pytest.skip("neither CuPy nor JAX with a GPU")


def test_cuda_physics_env_agrees_with_the_host():
    torch = _torch_with_gpu()
    n = 64
    gpu, cpu, obs_g, obs_c, host = _cuda_and_serial(torch, "Hopper-v5", n, 9)
    np.testing.assert_allclose(host(obs_g), obs_c, rtol=1e-12, atol=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(10):  # a few steps: contacts are chaotic, and the GPU contracts multiply-adds differently
        a = rng.uniform(-1, 1, size=(n, 3))
        og, rg, tg, trg, _ = gpu.step(torch.from_numpy(a).cuda())
        oc, rc, tc, trc, _ = cpu.step(a)
        np.testing.assert_allclose(host(og), oc, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(host(rg), rc, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(host(tg), tc)


def test_cuda_auto_capacity_is_the_measured_one_and_refuses_what_needs_more():
    if not rlkernels.has_cuda:
        pytest.skip("this build has no CUDA backend (RLK_PYTHON_CUDA=OFF)")
    # refused before anything reaches the GPU: the measured capacities cannot hold a robot on the floor
    for capacity in ("auto", "measured"):
        with pytest.raises(ValueError, match=rf"make_vec\('Hopper-v5', capacity='{capacity}'.*"
                                             r"terminate_when_unhealthy = false.*On backend 'cuda'"):
            rlkernels.make_vec("Hopper-v5", 2, backend="cuda", capacity=capacity, terminate_when_unhealthy=False)
    with pytest.raises(ValueError, match="capacity='full' runs on the host backends"):
        rlkernels.make_vec("Hopper-v5", 2, backend="cuda", capacity="full")
    _torch_with_gpu()
    for env_id in ("Hopper-v5", "Humanoid-v5"):
        envs = rlkernels.make_vec(env_id, 2, seed=0, backend="cuda")
        assert envs.capacities == rlkernels.capacities(env_id)["auto"]["cuda"] == rlkernels.capacities(env_id)["measured"]
