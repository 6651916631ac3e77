"""The single env's ``render_mode="rgb_array"`` (an image of the dice and scorecard)."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("PIL")

import dice_poker_env  # noqa: E402,F401 - registers the ids
from dice_poker_env import ENV_IDS  # noqa: E402
from dice_poker_env.engine import game  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.envs.render_image import image_size, render_rgb  # noqa: E402

IDS = [env_id for env_id, rules in ENV_IDS.items() if rules]


@pytest.mark.parametrize("env_id", IDS)
def test_frames_are_fixed_size_uint8_images(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    _, info = env.reset(seed=0)
    env.action_space.seed(0)
    first = env.render()
    height, width = image_size(env.unwrapped.tables)
    assert first.shape == (height, width, 3) and first.dtype == np.uint8
    done, frames = False, [first]
    while not done:
        _, _, done, _, info = env.step(env.action_space.sample(info["action_mask"]))
        frames.append(env.render())
    assert all(f.shape == first.shape and f.dtype == np.uint8 for f in frames)
    assert not np.array_equal(frames[0], frames[-1])
    assert len({f.tobytes() for f in frames}) > len(frames) // 2  # frames show the game moving


def test_render_collection_and_record_video(tmp_path):
    env = gym.wrappers.RenderCollection(gym.make("DicePoker/Yacht-v0", render_mode="rgb_array"))
    _, info = env.reset(seed=1)
    env.action_space.seed(1)
    for _ in range(5):
        _, _, _, _, info = env.step(env.action_space.sample(info["action_mask"]))
    frames = env.render()
    assert len(frames) == 6 and len({f.shape for f in frames}) == 1
    pytest.importorskip("moviepy")
    video = gym.wrappers.RecordVideo(
        gym.make("DicePoker/Yacht-v0", render_mode="rgb_array"),
        str(tmp_path / "videos"),
        episode_trigger=lambda e: True,
    )
    _, info = video.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = video.step(video.action_space.sample(info["action_mask"]))
    video.close()
    assert list((tmp_path / "videos").glob("*.mp4"))


def test_a_game_of_a_batch_renders_as_the_same_game_alone():
    tables = compile_rules(dice_poker_env.load_rules("yatzy"))
    batch = game.new_batch(tables, np.array([0, 251]))
    assert np.array_equal(render_rgb(tables, batch.game(1)), render_rgb(tables, game.new_game(tables, 251)))
    assert not np.array_equal(render_rgb(tables, batch.game(0)), render_rgb(tables, batch.game(1)))


def test_pillow_is_imported_only_for_images():
    code = (
        "import sys, gymnasium as gym, dice_poker_env\n"
        "env = gym.make('DicePoker/Yacht-v0', render_mode='ansi'); env.reset(seed=0); env.render()\n"
        "print('PIL' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
