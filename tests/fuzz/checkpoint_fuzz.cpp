// Fuzz target of checkpoint::load_from_memory (libFuzzer; scripts/fuzz_checkpoint.sh builds and
// runs it with ASan and UBSan). A checkpoint binds fields of several types, a checked value and a
// constant; every input is loaded twice: as it is, and "resealed" (its size field and CRC-64
// recomputed) so that mutations also reach the section parser and the matching, which the
// checksum would otherwise shield. A load must either succeed or throw checkpoint_error with the
// bound memory unchanged; anything else (a crash, a leak, undefined behaviour, another exception,
// changed memory) is a finding.
//
// Built with -DRLK_CHECKPOINT_FUZZ_SEEDS it is instead a program that writes the seed corpus,
// valid files of this layout and of near misses: `checkpoint_fuzz_seeds DIR`.
#include <rlkernels/io/checkpoint.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace rlkernels;

struct item {
  std::int32_t a;
  float b;
  std::uint8_t c[5];
};

/// The state the fuzzed loads write into.
struct state {
  std::vector<float> weights = std::vector<float>(17, 0.5f);
  std::vector<std::int32_t> counts = std::vector<std::int32_t>(5, -3);
  std::vector<double> moments = std::vector<double>(3, 0.25);
  std::vector<std::uint8_t> flags = std::vector<std::uint8_t>(4, 1);
  std::vector<item> items = std::vector<item>(2, item{1, 2.f, {3, 4, 5, 6, 7}});
  std::vector<std::uint64_t> none;
  std::uint64_t step = 12;
  double learning_rate = 1e-3;
  bool done = false;

  void bind(checkpoint& c, const std::string& config = "lr=0.001\nseed=1\n") {
    c.bind_constant("config", config);
    c.bind("net/weights", serial, make_view(weights));
    c.bind("net/counts", serial, make_view(counts));
    c.bind("opt/moments", serial, make_view(moments));
    c.bind("env/flags", serial, make_view(flags));
    c.bind("env/items", serial, make_view(items));
    c.bind("empty", serial, make_view(none));
    c.bind_value("step", step, [](const std::uint64_t& s) { return s < 1000000 ? std::string() : "step too large"; });
    c.bind_value("opt/learning_rate", learning_rate);
    c.bind_value("done", done);
  }

  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> out;
    const auto add = [&](const void* p, std::size_t n) {
      const auto* b = static_cast<const std::uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    };
    add(weights.data(), weights.size() * 4), add(counts.data(), counts.size() * 4);
    add(moments.data(), moments.size() * 8), add(flags.data(), flags.size());
    add(items.data(), items.size() * sizeof(item)), add(&step, 8), add(&learning_rate, 8), add(&done, 1);
    return out;
  }
};

void reseal(std::vector<std::uint8_t>& b) {
  const std::uint64_t size = b.size();
  for (int k = 0; k < 8; ++k) b[16 + k] = std::uint8_t(size >> (8 * k));
  const std::uint64_t crc = detail::crc64(b.data(), b.size() - 8);
  for (int k = 0; k < 8; ++k) b[b.size() - 8 + k] = std::uint8_t(crc >> (8 * k));
}

void try_load(const std::uint8_t* data, std::size_t size) {
  state s;
  checkpoint c;
  s.bind(c);
  const std::vector<std::uint8_t> before = s.bytes();
  try {
    c.load_from_memory(data, size, "fuzz");
  } catch (const checkpoint_error&) {
    if (s.bytes() != before) {
      std::fprintf(stderr, "checkpoint_fuzz: a refused load changed bound memory\n");
      std::abort();
    }
  }
}

}  // namespace

#if defined(RLK_CHECKPOINT_FUZZ_SEEDS)
int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int n = 0;
  const auto save = [&](checkpoint& c) { c.save(dir + "/seed-" + std::to_string(n++) + ".rlkc"); };
  {
    state s;  // the exact layout, other values
    s.weights.assign(17, -1.25f);
    s.step = 77;
    s.done = true;
    checkpoint c;
    s.bind(c);
    save(c);
  }
  {
    state s;  // another constant
    checkpoint c;
    s.bind(c, "lr=0.0003\nseed=1\nextra=2\n");
    save(c);
  }
  {
    state s;  // a value the check refuses
    s.step = 5000000;
    checkpoint c;
    s.bind(c);
    save(c);
  }
  {
    state s;  // other counts, an unexpected section, a missing one
    s.weights.resize(3);
    s.items.resize(7);
    checkpoint c;
    s.bind(c);
    c.bind_value("unexpected", s.step);
    save(c);
  }
  {
    checkpoint c;  // no sections
    save(c);
  }
  {
    std::vector<double> only(2, 3.0);  // one section, of another type under a bound name
    checkpoint c;
    c.bind("net/weights", serial, make_view(only));
    save(c);
  }
  std::printf("checkpoint_fuzz_seeds: wrote %d files to %s\n", n, dir.c_str());
  return 0;
}
#else
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try_load(data, size);
  constexpr std::size_t minimum = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
  if (size >= minimum) {
    std::vector<std::uint8_t> sealed(data, data + size);
    reseal(sealed);
    try_load(sealed.data(), sealed.size());
  }
  return 0;
}
#endif
