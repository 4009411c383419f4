// Test-only: reads a recording of the reference MinAtar games (tests/reference/minatar_record.py)
// and replays it into an rlkernels MinAtar env: the env draws its random numbers from a generator
// that returns the reference's recorded draws in order (and flags any call of another kind or
// range), and every observation, reward and terminal flag is compared.
#pragma once

#include <rlkernels/envs/minatar/common.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlk_minatar_test {

struct draw {
  char kind = 'u';   ///< 'u': rand(); 'i': randint over n values
  std::uint32_t n = 0;
  std::uint32_t k = 0;  ///< randint: value - low
  double u = 0;         ///< rand(): the double
};

struct record {
  char kind = 'S';  ///< 'R' reset, 'S' step
  std::int32_t action = 0;
  int reward = 0;
  bool terminal = false;
  std::vector<draw> draws;
  std::vector<std::uint8_t> obs;  ///< [10, 10, C] after this record
};

struct run {
  int seed = 0;
  std::vector<record> records;
};

struct recording {
  std::string game;
  int channels = 0;
  std::vector<run> runs;
};

/// Parses tests/reference/minatar_<game>.txt (format: see minatar_record.py).
inline recording load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  recording rec;
  std::string line;
  std::vector<std::uint8_t> obs;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string tag;
    is >> tag;
    if (tag == "game") {
      std::string word;
      is >> rec.game >> word >> rec.channels;
    } else if (tag == "seed") {
      run r;
      is >> r.seed;
      rec.runs.push_back(r);
      obs.assign(std::size_t(100 * rec.channels), 0);
    } else if (tag == "R" || tag == "S") {
      record r;
      r.kind = tag[0];
      if (r.kind == 'S') {
        int t = 0;
        is >> r.action >> r.reward >> t;
        r.terminal = t != 0;
      }
      std::size_t count = 0;
      is >> count;
      for (std::size_t i = 0; i < count; ++i) {
        std::string kind;
        is >> kind;
        draw d;
        d.kind = kind[0];
        if (d.kind == 'u') {
          std::string hex;
          is >> hex;
          d.u = std::strtod(hex.c_str(), nullptr);
        } else {
          is >> d.n >> d.k;
        }
        r.draws.push_back(d);
      }
      std::string bar;
      is >> bar >> count;
      for (std::size_t i = 0; i < count; ++i) {
        std::size_t idx = 0;
        is >> idx;
        obs.at(idx) ^= 1;
      }
      r.obs = obs;
      if (!is) throw std::runtime_error("bad line in " + path + ": " + line);
      rec.runs.back().records.push_back(std::move(r));
    }
  }
  return rec;
}

/// A generator that hands out recorded draws in order. A call of the wrong kind, with another
/// range, or past the end records the error (and returns 0) instead of throwing, like device code;
/// message() describes it. Plain data with RLK_HOST_DEVICE calls, so that the envs' host/device
/// functions may call it (the replay itself runs on the host).
struct replay_generator {
  const draw* draws = nullptr;
  std::size_t count = 0;
  std::size_t pos = 0;
  int error = 0;              ///< 0 none, 1 drew past the end, 2 kind or range differs
  char wanted_kind = 0;       ///< the call that failed: 'u' or 'i'
  std::uint32_t wanted_n = 0;

  template <class T>
  RLK_HOST_DEVICE T uniform() {
    if (!next('u', 0)) return T(0);
    return T(draws[pos++].u);
  }
  RLK_HOST_DEVICE std::uint32_t uniform_int(std::uint32_t n) {
    if (!next('i', n)) return 0;
    return draws[pos++].k;
  }
  /// Empty when every call matched.
  std::string message() const {
    const auto call = [](char kind, std::uint32_t n) {
      return kind == 'u' ? std::string("rand()") : "randint over " + std::to_string(n) + " values";
    };
    if (error == 1) return "the env drew more numbers than the reference (a " + call(wanted_kind, wanted_n) + ")";
    if (error == 2)
      return "draw " + std::to_string(pos) + ": the env called " + call(wanted_kind, wanted_n) + ", the reference " +
             call(draws[pos].kind, draws[pos].n);
    return "";
  }

 private:
  RLK_HOST_DEVICE bool next(char kind, std::uint32_t n) {
    if (error != 0) return false;
    wanted_kind = kind;
    wanted_n = n;
    if (pos >= count) {
      error = 1;
      return false;
    }
    if (draws[pos].kind != kind || (kind == 'i' && draws[pos].n != n)) {
      error = 2;
      return false;
    }
    return true;
  }
};

/// Observation of the env in MinAtar's [10, 10, C] layout as 0/1 bytes.
template <class Env>
std::vector<std::uint8_t> observe(const typename Env::Params& params, const typename Env::State& s) {
  std::vector<typename Env::scalar_type> obs(Env::observation_size);
  Env::observe(params, s, obs.data());
  std::vector<std::uint8_t> out(obs.size());
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < Env::channels; ++c) {
        const auto v = obs[std::size_t(rlkernels::detail::minatar_index(params.channels_first, Env::channels, y, x, c))];
        out[std::size_t((y * 10 + x) * Env::channels + c)] = v == 1 ? 1 : (v == 0 ? 0 : 2);
      }
  return out;
}

/// Replays every run of a recording into Env (full action set) and checks each record; returns the
/// number of steps compared.
template <class Env>
std::size_t replay(const recording& rec, typename Env::Params params = {}) {
  REQUIRE(rec.channels == Env::channels);
  std::size_t steps = 0;
  for (const run& r : rec.runs) {
    typename Env::State s{};  // last_action 0, as a fresh minatar.Environment
    for (std::size_t i = 0; i < r.records.size(); ++i) {
      const record& x = r.records[i];
      replay_generator gen{x.draws.data(), x.draws.size()};
      float reward = 0;
      bool terminal = false;
      if (x.kind == 'R') {
        Env::reset(params, s, gen);
      } else {
        const auto result = Env::step(params, s, x.action, gen);
        reward = float(result.reward);
        terminal = result.terminated;
        ++steps;
      }
      INFO(rec.game << " seed " << r.seed << " record " << i << " (" << x.kind << ", action " << x.action << ")");
      REQUIRE(gen.message() == "");
      REQUIRE(gen.pos == x.draws.size());  // drew exactly what the reference drew
      if (x.kind == 'S') {
        REQUIRE(reward == float(x.reward));
        REQUIRE(terminal == x.terminal);
      }
      const std::vector<std::uint8_t> obs = observe<Env>(params, s);
      if (obs != x.obs) {
        std::string diff;
        for (std::size_t k = 0; k < obs.size(); ++k)
          if (obs[k] != x.obs[k])
            diff += " (y " + std::to_string(k / Env::channels / 10) + ", x " + std::to_string(k / Env::channels % 10) +
                    ", c " + std::to_string(k % Env::channels) + "): ours " + std::to_string(obs[k]) + " ref " +
                    std::to_string(x.obs[k]) + ";";
        FAIL("observation differs:" << diff);
      }
    }
  }
  return steps;
}

}  // namespace rlk_minatar_test
