#!/usr/bin/env python3
"""Render a MuJoCo env's policy file as an animated GIF: our engine flies it, MuJoCo draws it.

The policy (a file from ``train_ppo --export-policy``, ``train_td3 --export-policy`` or
``save_policy``: rlkernels/algorithms/policy_file.hpp) acts on one env of the rlkernels Python
package in float64, from ``--seed``; each state the engine reaches (qpos, qvel) is written into
Gymnasium's own env of the same id (``set_state``, which runs ``mj_forward``) and drawn by
MuJoCo's renderer (``mujoco.Renderer``) with that env's default camera settings, following the
robot. Nothing is simulated by MuJoCo: the frames are our states.

Headless by default: MuJoCo renders offscreen through EGL (Mesa's software rasteriser where there
is no GPU; Debian: ``apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri``) unless MUJOCO_GL is
set (``osmesa`` with libosmesa6 also works; ``glfw`` needs a display).

    scripts/render_policy.py tests/reference/mujoco_hopper_v5_policy.txt --out hopper.gif
    scripts/render_policy.py my_policy.txt --out clip.gif --seconds 8 --width 480 --height 360

Needs the rlkernels package (``pip install .``, or PYTHONPATH=build/<preset>/python), gymnasium
with mujoco, and Pillow. Prints one line: frames, the episode's return and length, and the file.
"""

from __future__ import annotations

import argparse
import math
import os
import sys


def _setup_gl() -> None:
    # Before mujoco is imported: offscreen EGL, on Mesa's surfaceless platform when no display.
    if "MUJOCO_GL" not in os.environ:
        os.environ["MUJOCO_GL"] = "egl"
    if os.environ["MUJOCO_GL"] == "egl" and "EGL_PLATFORM" not in os.environ and not os.environ.get("DISPLAY"):
        os.environ["EGL_PLATFORM"] = "surfaceless"
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("policy", help="a policy file of a MuJoCo env (its first lines name the env)")
    p.add_argument("--out", required=True, help="the GIF to write")
    p.add_argument("--seed", type=int, default=0, help="the env's seed (default 0)")
    p.add_argument("--seconds", type=float, default=5.0,
                   help="simulated seconds to render at most (default 5); the clip ends earlier if the episode does")
    p.add_argument("--fps", type=float, default=25.0, help="frames per second of the clip (default 25)")
    p.add_argument("--width", type=int, default=320, help="frame width in pixels (default 320)")
    p.add_argument("--height", type=int, default=240, help="frame height in pixels (default 240)")
    p.add_argument("--no-track", dest="track", action="store_false",
                   help="keep the camera where Gymnasium's default config puts it (by default it follows the robot)")
    p.add_argument("--env-kwargs", default="",
                   help="keyword arguments of both envs as NAME=VALUE,NAME=VALUE (e.g. reset_noise_scale=0.01)")
    args = p.parse_args(argv)
    for name in ("seconds", "fps"):
        if not getattr(args, name) > 0:
            p.error(f"--{name} must be positive, got {getattr(args, name)}")
    if args.width < 16 or args.height < 16:
        p.error(f"--width and --height must be at least 16, got {args.width} x {args.height}")
    return args


def _kwargs(text: str) -> dict:
    out = {}
    for item in filter(None, text.split(",")):
        if "=" not in item:
            raise SystemExit(f"render_policy: --env-kwargs item {item!r} is not NAME=VALUE")
        name, value = item.split("=", 1)
        try:
            out[name] = int(value)
        except ValueError:
            try:
                out[name] = float(value)
            except ValueError:
                out[name] = {"true": True, "false": False}.get(value.lower(), value)
    return out


def render(args) -> dict:
    """Renders the clip; returns what it did (frames, return, length, stride, frame duration)."""
    _setup_gl()
    import gymnasium as gym
    import numpy as np
    from PIL import Image

    import rlkernels

    policy = rlkernels.load_policy(args.policy)
    kwargs = _kwargs(args.env_kwargs)
    try:
        view = gym.make(policy.env, render_mode="rgb_array", width=args.width, height=args.height, **kwargs)
    except gym.error.Error as e:
        raise SystemExit(f"render_policy: Gymnasium has no MuJoCo env {policy.env!r} to draw with ({e})")
    model = view.unwrapped.model
    nq, nv = model.nq, model.nv
    dt = float(view.unwrapped.dt)
    envs = rlkernels.make_vec(policy.env, num_envs=1, seed=args.seed, backend="serial", dtype="float64", **kwargs)
    view.reset(seed=args.seed)

    stride = max(1, round(1.0 / (args.fps * dt)))  # env steps per frame
    duration_ms = max(20, int(round(stride * dt * 1000.0 / 10.0)) * 10)  # GIF delays are in 10 ms units
    max_steps = int(math.ceil(args.seconds / dt))

    import mujoco

    # MuJoCo's renderer on Gymnasium's model and data, with Gymnasium's default camera settings
    # (distance, elevation, azimuth, lookat). That config names a body (trackbodyid) but Gymnasium
    # leaves its camera free, so a robot that walks leaves the picture; with --track (the default)
    # the camera follows that body's subtree (mjCAMERA_TRACKING).
    config = dict(getattr(view.unwrapped.mujoco_renderer, "default_cam_config", None) or {})
    camera = mujoco.MjvCamera()
    mujoco.mjv_defaultFreeCamera(model, camera)
    for key in ("distance", "elevation", "azimuth"):
        if key in config:
            setattr(camera, key, float(config[key]))
    if "lookat" in config:
        camera.lookat[:] = np.asarray(config["lookat"], dtype=np.float64)
    if args.track:
        camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        camera.trackbodyid = int(config["trackbodyid"]) if int(config.get("trackbodyid", 0)) > 0 else 1
    renderer = mujoco.Renderer(model, args.height, args.width)
    data = view.unwrapped.data

    def frame() -> Image.Image:
        state = envs.get_states()[0].view(np.float64)  # qpos[nq], qvel[nv] first, as mjData's
        view.unwrapped.set_state(state[:nq].copy(), state[nq:nq + nv].copy())  # then mj_forward
        renderer.update_scene(data, camera)
        return Image.fromarray(renderer.render())

    obs, _ = envs.reset(seed=args.seed)
    frames = [frame()]
    total, length = 0.0, 0
    for t in range(1, max_steps + 1):
        obs, reward, terminated, truncated, _ = envs.step(policy(obs))
        total += float(reward[0])
        length = t
        if terminated[0] or truncated[0]:
            break  # the env has reset: the episode's last state is not in the batch any more
        if t % stride == 0:
            frames.append(frame())
    renderer.close()
    view.close()
    frames[0].save(args.out, save_all=True, append_images=frames[1:], duration=duration_ms, loop=0)
    return {"frames": len(frames), "return": total, "length": length, "stride": stride, "duration_ms": duration_ms,
            "env": policy.env}


def main(argv=None) -> int:
    args = parse_args(argv)
    r = render(args)
    print(f"render_policy: {r['env']}, seed {args.seed}: {r['frames']} frames ({r['stride']} env steps, "
          f"{r['duration_ms']} ms each), return {r['return']:.1f} over {r['length']} steps -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
