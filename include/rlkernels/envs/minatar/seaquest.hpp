// rlkernels/envs/minatar/seaquest.hpp
// MinAtar Seaquest (minatar/environments/seaquest.py, minatar 1.0.15), step for step: a submarine
// that shoots fish and enemy subs, rescues divers and must surface with them before its oxygen runs
// out; every surfacing makes enemies spawn and move faster.
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"
#include "common.hpp"

#include <cstdint>

namespace rlkernels {
namespace detail {

/// A bullet, friendly or enemy: the reference's [x, y, direction].
struct seaquest_bullet {
  std::int8_t x, y;
  bool right;  ///< moves right (True) or left
  RLK_HOST_DEVICE bool operator==(const seaquest_bullet& o) const { return x == o.x && y == o.y && right == o.right; }
};

/// A fish or a diver: the reference's [x, y, direction, move timer].
struct seaquest_mover {
  std::int8_t x, y;
  bool right;
  std::int8_t move_timer;  ///< steps until the next move
  RLK_HOST_DEVICE bool operator==(const seaquest_mover& o) const {
    return x == o.x && y == o.y && right == o.right && move_timer == o.move_timer;
  }
};

/// An enemy submarine: the reference's [x, y, direction, move timer, shot timer].
struct seaquest_sub {
  std::int8_t x, y;
  bool right;
  std::int8_t move_timer;  ///< steps until the next move
  std::int8_t shot_timer;  ///< steps until the next shot
  RLK_HOST_DEVICE bool operator==(const seaquest_sub& o) const {
    return x == o.x && y == o.y && right == o.right && move_timer == o.move_timer && shot_timer == o.shot_timer;
  }
};

/// A Python list of at most Capacity objects, kept in the reference's order (which decides what
/// collides first and what `remove` takes).
template <class T, int Capacity>
struct seaquest_list {
  T item[Capacity];
  std::int8_t count;

  /// list.append; a full list drops the object (the capacities are bounds, see State, so it does not).
  RLK_HOST_DEVICE void push_back(const T& v) {
    if (count < Capacity) item[count++] = v;
  }
  /// Python's list.remove(v): erases the *first* element equal to v (by value, not identity) and
  /// returns its index.
  RLK_HOST_DEVICE int remove(const T& v) {
    for (int i = 0; i < count; ++i)
      if (item[i] == v) {
        for (int j = i + 1; j < count; ++j) item[j - 1] = item[j];
        --count;
        return i;
      }
    return -1;
  }
  /// The body of `for obj in reversed(list)` calling list.remove(obj): `obj` (the loop variable, a
  /// reference in Python) sits at index `at`; it is stored there first so the comparison sees its
  /// changes. Returns where obj sits afterwards: -1 if it was the one removed, one lower if an
  /// equal element before it went instead (then Python's reverse iterator, which counts indices,
  /// visits obj again; the loops below count the same way).
  RLK_HOST_DEVICE int remove_tracked(const T& obj, int at) {
    if (at >= 0) item[at] = obj;
    const int j = remove(obj);
    return j == at ? -1 : (j < at ? at - 1 : at);
  }
  /// Stores the loop variable back unless it left the list.
  RLK_HOST_DEVICE void put(const T& obj, int at) {
    if (at >= 0) item[at] = obj;
  }
};

}  // namespace detail

/// @brief MinAtar Seaquest. Observation: 10 binary channels in MinAtar's order
/// (0 sub_front, 1 sub_back, 2 friendly_bullet, 3 trail, 4 enemy_bullet, 5 enemy_fish, 6 enemy_sub,
/// 7 oxygen_guage, 8 diver_guage, 9 diver) of the 10x10 grid, [y, x, c] (or [c, y, x] with
/// channels_first). Actions: the full set {n, l, u, r, d, f}; Seaquest's minimal set is the same
/// six actions in the same order, so both sets are identical here.
/// Reward: 1 per enemy shot, plus remaining oxygen / 20 when surfacing with six divers.
/// @tparam Scalar observation and reward type (float or double)
/// @tparam Set full or minimal action set
template <class Scalar = float, minatar_action_set Set = minatar_action_set::full>
struct minatar_seaquest {
  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int channels = 10;                                 ///< see the class comment
  static constexpr int observation_size = 10 * 10 * channels;         ///< 1000
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = 6;                               ///< both sets: {n, l, u, r, d, f}

  /// Full-set id of action a: the identity for both sets (seaquest.py minimal_action_set()).
  RLK_HOST_DEVICE static constexpr std::int32_t full_action(std::int32_t a) { return a; }

  /// Settings (defaults: minatar's).
  struct Params {
    int max_episode_steps = 0;        ///< time limit (truncation); 0 = none (gymnax uses 1000)
    double sticky_action_prob = 0.1;  ///< probability of repeating the previous action, in [0, 1]
    bool difficulty_ramping = true;   ///< each surfacing speeds enemies up (minatar's `ramping`)
    bool channels_first = false;      ///< observation layout [C, 10, 10] instead of [10, 10, C]
  };

  // The reference's constants (seaquest.py, top of file).
  static constexpr int max_oxygen = 200;          ///< oxygen when full (refilled on surfacing)
  static constexpr int init_spawn_speed = 20;     ///< initial frames between enemy spawns
  static constexpr int diver_spawn_speed = 30;    ///< frames between diver spawns
  static constexpr int init_move_interval = 5;    ///< initial frames between enemy moves
  static constexpr int shot_cool_down = 5;        ///< frames between the sub's shots
  static constexpr int enemy_shot_interval = 10;  ///< frames between an enemy sub's shots
  static constexpr int diver_move_interval = 5;   ///< frames between diver moves

  // List capacities: bounds on what the rules allow, so nothing is ever dropped.
  // - Enemies (fish and subs, each list; also both together): at most one spawn per step
  //   (e_spawn_timer is set to e_spawn_speed >= 1). An enemy's move timer never exceeds the
  //   move_speed it was last given, so it leaves the grid within 10 * (move_speed + 1) steps of
  //   its spawn: 30 steps once move_speed is 2, 60 before. While move_speed > 2 there were fewer
  //   than 6 surfacings, so e_spawn_speed >= 15 and such spawns are >= 15 steps apart: at most
  //   4 of them in 60 steps, plus at most 30 spawned with move_speed 2 in the last 30 steps: 34.
  // - Enemy bullets: a bullet leaves within 10 steps of its shot and a sub shoots at most once in
  //   11 steps, first 10 steps after its spawn; so the bullets of any step come from distinct subs
  //   that all lived 9 steps earlier: at most 34.
  // - Friendly bullets: one shot per shot_cool_down = 5 steps, each gone within 10 steps: 2.
  // - Divers: one spawn per diver_spawn_speed = 30 steps, each gone within 60 steps: 2.
  static constexpr int max_enemies = 36;          ///< capacity of e_fish and of e_subs
  static constexpr int max_enemy_bullets = 36;    ///< capacity of e_bullets
  static constexpr int max_friendly_bullets = 3;  ///< capacity of f_bullets
  static constexpr int max_divers = 3;            ///< capacity of divers

  /// The game state (the reference's attributes; lists in the reference's order).
  struct State {
    std::int8_t sub_x;  ///< sub column, in [0, 9]
    std::int8_t sub_y;  ///< sub row, in [0, 8] (0 = the surface)
    bool sub_or;  ///< facing right
    bool surface;   ///< at the surface since reset or the last surfacing; false once it dives (row > 0)
    bool terminal;  ///< the episode is over (hit, out of oxygen, or surfaced without a diver)
    std::int8_t e_spawn_speed;  ///< frames between enemy spawns (init_spawn_speed, ramps down to 1)
    std::int8_t e_spawn_timer;  ///< frames until the next enemy spawn
    std::int8_t d_spawn_timer;  ///< frames until the next diver spawn
    std::int8_t move_speed;     ///< frames between enemy moves (init_move_interval, ramps down to 2)
    std::int8_t shot_timer;     ///< frames until the sub may shoot again
    std::int16_t oxygen;        ///< oxygen left, max_oxygen when full; -1 per frame below the surface
    std::int16_t ramp_index;    ///< ramp steps taken (one per surfacing); move_speed drops on odd ones
    std::int32_t diver_count;  ///< goes negative: see _surface() in step
    std::int32_t last_action;  ///< sticky actions: kept across resets, as minatar does
    detail::seaquest_list<detail::seaquest_bullet, max_friendly_bullets> f_bullets;  ///< the sub's bullets
    detail::seaquest_list<detail::seaquest_bullet, max_enemy_bullets> e_bullets;     ///< enemy subs' bullets
    detail::seaquest_list<detail::seaquest_mover, max_enemies> e_fish;                ///< enemy fish
    detail::seaquest_list<detail::seaquest_sub, max_enemies> e_subs;                  ///< enemy subs
    detail::seaquest_list<detail::seaquest_mover, max_divers> divers;                 ///< divers to rescue
  };

  /// seaquest.py reset(): the sub at (5, 0) facing left, full oxygen, no divers; draws nothing.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params&, State& s, Gen&) {
    s.oxygen = max_oxygen;
    s.diver_count = 0;
    s.sub_x = 5;
    s.sub_y = 0;
    s.sub_or = false;
    s.f_bullets.count = 0;
    s.e_bullets.count = 0;
    s.e_fish.count = 0;
    s.e_subs.count = 0;
    s.divers.count = 0;
    s.e_spawn_speed = init_spawn_speed;
    s.e_spawn_timer = init_spawn_speed;
    s.d_spawn_timer = diver_spawn_speed;
    s.move_speed = init_move_interval;
    s.ramp_index = 0;
    s.shot_timer = 0;
    s.surface = true;
    s.terminal = false;
  }

  /// seaquest.py act(): spawns, the player's action, then friendly bullets, divers, enemy subs,
  /// enemy bullets and fish, each list walked backwards as the reference does, then the timers,
  /// oxygen and surfacing.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    const std::int32_t a = detail::minatar_sticky(p.sticky_action_prob, full_action(action), s.last_action, gen);
    int r = 0;
    if (s.terminal) return {Scalar(r), true};

    if (s.e_spawn_timer == 0) {
      spawn_enemy(s, gen);
      s.e_spawn_timer = s.e_spawn_speed;
    }
    if (s.d_spawn_timer == 0) {
      spawn_diver(s, gen);
      s.d_spawn_timer = diver_spawn_speed;
    }

    if (a == 5 && s.shot_timer == 0) {
      s.f_bullets.push_back({s.sub_x, s.sub_y, s.sub_or});
      s.shot_timer = shot_cool_down;
    } else if (a == 1) {
      s.sub_x = s.sub_x > 0 ? s.sub_x - 1 : 0;
      s.sub_or = false;
    } else if (a == 3) {
      s.sub_x = s.sub_x < 9 ? s.sub_x + 1 : 9;
      s.sub_or = true;
    } else if (a == 2) {
      s.sub_y = s.sub_y > 0 ? s.sub_y - 1 : 0;
    } else if (a == 4) {
      s.sub_y = s.sub_y < 8 ? s.sub_y + 1 : 8;
    }

    // Python's `for obj in reversed(lst)` counts an index down and stops once it is out of range,
    // hence the `i < count` in each loop below.
    // Friendly bullets: move, leave the grid, or hit a fish (checked first) or a sub.
    for (int i = s.f_bullets.count - 1; i >= 0 && i < s.f_bullets.count; --i) {
      detail::seaquest_bullet b = s.f_bullets.item[i];
      int at = i;
      b.x += b.right ? 1 : -1;
      s.f_bullets.put(b, at);
      if (b.x < 0 || b.x > 9) {
        at = s.f_bullets.remove_tracked(b, at);
      } else {
        bool removed = false;
        for (int k = 0; k < s.e_fish.count; ++k)
          if (same_cell(b, s.e_fish.item[k])) {
            s.e_fish.remove(detail::seaquest_mover(s.e_fish.item[k]));
            at = s.f_bullets.remove_tracked(b, at);
            r += 1;
            removed = true;
            break;
          }
        if (!removed)
          for (int k = 0; k < s.e_subs.count; ++k)
            if (same_cell(b, s.e_subs.item[k])) {
              s.e_subs.remove(detail::seaquest_sub(s.e_subs.item[k]));
              at = s.f_bullets.remove_tracked(b, at);
              r += 1;
              break;
            }
      }
    }

    // Divers: picked up (at most 6 on board) where the sub is, before or after their move.
    for (int i = s.divers.count - 1; i >= 0 && i < s.divers.count; --i) {
      detail::seaquest_mover d = s.divers.item[i];
      int at = i;
      if (d.x == s.sub_x && d.y == s.sub_y && s.diver_count < 6) {
        at = s.divers.remove_tracked(d, at);
        s.diver_count += 1;
      } else if (d.move_timer == 0) {
        d.move_timer = diver_move_interval;
        d.x += d.right ? 1 : -1;
        s.divers.put(d, at);
        if (d.x < 0 || d.x > 9) {
          at = s.divers.remove_tracked(d, at);
        } else if (d.x == s.sub_x && d.y == s.sub_y && s.diver_count < 6) {
          at = s.divers.remove_tracked(d, at);
          s.diver_count += 1;
        }
      } else {
        d.move_timer -= 1;
        s.divers.put(d, at);
      }
    }

    // Enemy subs: hit the player before or after moving, run into a friendly bullet, and shoot.
    for (int i = s.e_subs.count - 1; i >= 0 && i < s.e_subs.count; --i) {
      detail::seaquest_sub e = s.e_subs.item[i];
      int at = i;
      if (e.x == s.sub_x && e.y == s.sub_y) s.terminal = true;
      if (e.move_timer == 0) {
        e.move_timer = s.move_speed;
        e.x += e.right ? 1 : -1;
        s.e_subs.put(e, at);
        if (e.x < 0 || e.x > 9) {
          at = s.e_subs.remove_tracked(e, at);
        } else if (e.x == s.sub_x && e.y == s.sub_y) {
          s.terminal = true;
        } else {
          for (int k = 0; k < s.f_bullets.count; ++k)
            if (same_cell(e, s.f_bullets.item[k])) {
              at = s.e_subs.remove_tracked(e, at);
              s.f_bullets.remove(detail::seaquest_bullet(s.f_bullets.item[k]));
              r += 1;
              break;
            }
        }
      } else {
        e.move_timer -= 1;
        s.e_subs.put(e, at);
      }
      // Quirk (seaquest.py, "if(sub[4]==0)"): the shot timer runs on after the sub was removed in
      // this iteration, so a sub that just left the grid (x -1 or 10) or was shot may still fire;
      // such a bullet at x -1 or 10 moves further out and is dropped in the bullet loop below.
      // The reference's bullet x is `sub[0] if sub[2] else sub[0]`: the sub's x either way.
      if (e.shot_timer == 0) {
        e.shot_timer = enemy_shot_interval;
        s.e_bullets.push_back({e.x, e.y, e.right});
      } else {
        e.shot_timer -= 1;
      }
      s.e_subs.put(e, at);
    }

    // Enemy bullets: hit the player before or after moving.
    for (int i = s.e_bullets.count - 1; i >= 0 && i < s.e_bullets.count; --i) {
      detail::seaquest_bullet b = s.e_bullets.item[i];
      int at = i;
      if (b.x == s.sub_x && b.y == s.sub_y) s.terminal = true;
      b.x += b.right ? 1 : -1;
      s.e_bullets.put(b, at);
      if (b.x < 0 || b.x > 9) {
        at = s.e_bullets.remove_tracked(b, at);
      } else if (b.x == s.sub_x && b.y == s.sub_y) {
        s.terminal = true;
      }
    }

    // Enemy fish: as the subs, without shooting.
    for (int i = s.e_fish.count - 1; i >= 0 && i < s.e_fish.count; --i) {
      detail::seaquest_mover f = s.e_fish.item[i];
      int at = i;
      if (f.x == s.sub_x && f.y == s.sub_y) s.terminal = true;
      if (f.move_timer == 0) {
        f.move_timer = s.move_speed;
        f.x += f.right ? 1 : -1;
        s.e_fish.put(f, at);
        if (f.x < 0 || f.x > 9) {
          at = s.e_fish.remove_tracked(f, at);
        } else if (f.x == s.sub_x && f.y == s.sub_y) {
          s.terminal = true;
        } else {
          for (int k = 0; k < s.f_bullets.count; ++k)
            if (same_cell(f, s.f_bullets.item[k])) {
              at = s.e_fish.remove_tracked(f, at);
              s.f_bullets.remove(detail::seaquest_bullet(s.f_bullets.item[k]));
              r += 1;
              break;
            }
        }
      } else {
        f.move_timer -= 1;
        s.e_fish.put(f, at);
      }
    }

    s.e_spawn_timer -= s.e_spawn_timer > 0;
    s.d_spawn_timer -= s.d_spawn_timer > 0;
    s.shot_timer -= s.shot_timer > 0;
    if (s.oxygen <= 0) s.terminal = true;
    if (s.sub_y > 0) {
      s.oxygen -= 1;
      s.surface = false;
    } else if (!s.surface) {
      if (s.diver_count == 0) {
        s.terminal = true;
      } else {
        r += surface(p, s);
      }
    }
    return {Scalar(r), s.terminal};
  }

  /// seaquest.py state(): sub front and back, oxygen and diver gauges on row 9, bullets, enemies
  /// and divers, with a trail behind each enemy and diver.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    detail::minatar_clear(obs, channels);
    const bool cf = p.channels_first;
    obs[detail::minatar_index(cf, channels, s.sub_y, s.sub_x, 0)] = Scalar(1);
    // The back is always on the grid: the sub reaches x 9 only by moving right and x 0 only by
    // moving left, so it faces away from the edge.
    const int back_x = s.sub_or ? s.sub_x - 1 : s.sub_x + 1;
    if (back_x >= 0 && back_x <= 9) obs[detail::minatar_index(cf, channels, s.sub_y, back_x, 1)] = Scalar(1);
    // oxygen >= 0 here except after a terminal step; the reference clamps with max(0, oxygen).
    const int oxygen_cells = (s.oxygen > 0 ? s.oxygen : 0) * 10 / max_oxygen;
    for (int x = 0; x < oxygen_cells; ++x) obs[detail::minatar_index(cf, channels, 9, x, 7)] = Scalar(1);
    // Slice [9 - diver_count, 9): empty when diver_count <= 0 (it goes negative, see surface()).
    for (int x = 9 - s.diver_count; x < 9; ++x) obs[detail::minatar_index(cf, channels, 9, x, 8)] = Scalar(1);
    for (int i = 0; i < s.f_bullets.count; ++i)
      obs[detail::minatar_index(cf, channels, s.f_bullets.item[i].y, s.f_bullets.item[i].x, 2)] = Scalar(1);
    for (int i = 0; i < s.e_bullets.count; ++i)
      obs[detail::minatar_index(cf, channels, s.e_bullets.item[i].y, s.e_bullets.item[i].x, 4)] = Scalar(1);
    for (int i = 0; i < s.e_fish.count; ++i)
      mark_with_trail(cf, obs, s.e_fish.item[i].x, s.e_fish.item[i].y, s.e_fish.item[i].right, 5);
    for (int i = 0; i < s.e_subs.count; ++i)
      mark_with_trail(cf, obs, s.e_subs.item[i].x, s.e_subs.item[i].y, s.e_subs.item[i].right, 6);
    for (int i = 0; i < s.divers.count; ++i)
      mark_with_trail(cf, obs, s.divers.item[i].x, s.divers.item[i].y, s.divers.item[i].right, 9);
  }

 private:
  template <class A, class B>
  RLK_HOST_DEVICE static bool same_cell(const A& a, const B& b) {
    return a.x == b.x && a.y == b.y;
  }

  RLK_HOST_DEVICE static void mark_with_trail(bool cf, Scalar* obs, int x, int y, bool right, int c) {
    obs[detail::minatar_index(cf, channels, y, x, c)] = Scalar(1);
    const int back_x = right ? x - 1 : x + 1;
    if (back_x >= 0 && back_x <= 9) obs[detail::minatar_index(cf, channels, y, back_x, 3)] = Scalar(1);
  }

  /// seaquest.py _spawn_enemy(): rand() for the side, rand() for sub or fish, randint(1, 9) for
  /// the row, all drawn before the spawn may be cancelled (a row holding an enemy that moves the
  /// other way).
  template <class Gen>
  RLK_HOST_DEVICE static void spawn_enemy(State& s, Gen& gen) {
    const bool lr = gen.template uniform<double>() < 1.0 / 2.0;
    const bool is_sub = gen.template uniform<double>() < 1.0 / 3.0;
    const std::int8_t x = lr ? 0 : 9;
    const std::int8_t y = std::int8_t(1 + gen.uniform_int(8u));
    for (int i = 0; i < s.e_subs.count; ++i)
      if (s.e_subs.item[i].y == y && s.e_subs.item[i].right != lr) return;
    for (int i = 0; i < s.e_fish.count; ++i)
      if (s.e_fish.item[i].y == y && s.e_fish.item[i].right != lr) return;
    if (is_sub) {
      s.e_subs.push_back({x, y, lr, s.move_speed, std::int8_t(enemy_shot_interval)});
    } else {
      s.e_fish.push_back({x, y, lr, s.move_speed});
    }
  }

  /// seaquest.py _spawn_diver(): rand() for the side, randint(1, 9) for the row.
  template <class Gen>
  RLK_HOST_DEVICE static void spawn_diver(State& s, Gen& gen) {
    const bool lr = gen.template uniform<double>() < 1.0 / 2.0;
    const std::int8_t x = lr ? 0 : 9;
    const std::int8_t y = std::int8_t(1 + gen.uniform_int(8u));
    s.divers.push_back({x, y, lr, std::int8_t(diver_move_interval)});
  }

  /// seaquest.py _surface(): refills the oxygen; with six divers pays oxygen * 10 // 200 and
  /// empties the sub; speeds enemies up. Returns the reward.
  RLK_HOST_DEVICE static int surface(const Params& p, State& s) {
    s.surface = true;
    int r = 0;
    if (s.diver_count == 6) {
      s.diver_count = 0;
      r = s.oxygen * 10 / max_oxygen;  // oxygen >= 0 here, so C++ `/` is Python's `//`
    }
    s.oxygen = max_oxygen;
    // Quirk (seaquest.py `self.diver_count -= 1` after the six-diver branch): it also runs after
    // the count was set to 0, leaving -1 divers. The player may then surface again without a
    // diver (only exactly 0 ends the game) and each surfacing lowers the count further; the gauge
    // shows nothing while the count is <= 0, and seven divers fit on board from -1.
    s.diver_count -= 1;
    if (p.difficulty_ramping && (s.e_spawn_speed > 1 || s.move_speed > 2)) {
      if (s.move_speed > 2 && s.ramp_index % 2) s.move_speed -= 1;
      if (s.e_spawn_speed > 1) s.e_spawn_speed -= 1;
      s.ramp_index += 1;
    }
    return r;
  }
};

}  // namespace rlkernels
