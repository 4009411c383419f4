// Checkpoints: the file format (CRC-64 check value, round trip of every type), atomic saves, every
// kind of refused file (each truncation, each flipped byte, wrong magic/version/byte order,
// another shape, missing/extra sections, constants, structural corruption behind a valid
// checksum, bad values) with bound memory unchanged, the rotating directory, the components'
// state (continue after a load == continue without), and PPO resuming bit-identically.
#include "../test_backend.hpp"
#include "../test_files.hpp"

#include <rlkernels/buffers/prioritized_replay.hpp>
#include <rlkernels/buffers/replay_buffer.hpp>
#include <rlkernels/envs/cartpole.hpp>
#include <rlkernels/envs/pendulum.hpp>
#include <rlkernels/envs/vec_env.hpp>
#include <rlkernels/estimators/normalization.hpp>
#include <rlkernels/io/checkpoint.hpp>
#include <rlkernels/nn/optim.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using rlk_test::backend_t;
using namespace rlkernels;
namespace fs = std::filesystem;
using rlk_test::bytes_t;
using rlk_test::read_bytes;
using rlk_test::temp_dir;

/// Rewrites the size field and the checksum of a modified file, so that only the change is wrong.
void reseal(bytes_t& b) {
  const std::uint64_t size = b.size();
  for (int k = 0; k < 8; ++k) b[16 + k] = std::uint8_t(size >> (8 * k));
  const std::uint64_t crc = detail::crc64(b.data(), b.size() - 8);
  for (int k = 0; k < 8; ++k) b[b.size() - 8 + k] = std::uint8_t(crc >> (8 * k));
}
/// Offset of the payload of section `name` in a file.
std::size_t payload_offset(const bytes_t& b, const std::string& name) {
  std::vector<std::uint8_t> key(4 + name.size());
  for (int k = 0; k < 4; ++k) key[k] = std::uint8_t(name.size() >> (8 * k));
  std::memcpy(key.data() + 4, name.data(), name.size());
  const auto it = std::search(b.begin(), b.end(), key.begin(), key.end());
  REQUIRE(it != b.end());
  return std::size_t(it - b.begin()) + key.size() + 16;
}
std::string load_error(checkpoint& c, const bytes_t& b) {
  try {
    c.load_from_memory(b.data(), b.size(), "test.rlkc");
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return "<accepted>";
}

struct pod_item {
  std::int32_t a;
  float b;
  std::uint8_t c[3];
};
bool operator==(const pod_item& x, const pod_item& y) {
  return x.a == y.a && x.b == y.b && x.c[0] == y.c[0] && x.c[1] == y.c[1] && x.c[2] == y.c[2];
}

/// Bound memory of every type, on the test backend, with a value per seed.
struct all_types {
  buffer<std::uint8_t, backend_t> u8;
  buffer<std::int8_t, backend_t> i8;
  buffer<std::uint16_t, backend_t> u16;
  buffer<std::int16_t, backend_t> i16;
  buffer<std::uint32_t, backend_t> u32;
  buffer<std::int32_t, backend_t> i32;
  buffer<std::uint64_t, backend_t> u64;
  buffer<std::int64_t, backend_t> i64;
  buffer<float, backend_t> f32;
  buffer<double, backend_t> f64;
  buffer<pod_item, backend_t> pods;
  buffer<float, backend_t> empty;
  std::uint64_t counter = 0;
  double rate = 0;
  bool flag = false;
  pod_item item{};

  explicit all_types(int seed)
      : u8(rlk_test::make<std::uint8_t>({std::uint8_t(seed), 255, 0})),
        i8(rlk_test::make<std::int8_t>({std::int8_t(-seed), 127, -128})),
        u16(rlk_test::make<std::uint16_t>({std::uint16_t(seed * 1000), 65535})),
        i16(rlk_test::make<std::int16_t>({std::int16_t(-seed * 1000), -32768})),
        u32(rlk_test::make<std::uint32_t>({std::uint32_t(seed) * 100000u, 4294967295u})),
        i32(rlk_test::make<std::int32_t>({-seed * 100000, 5, 6, 7})),
        u64(rlk_test::make<std::uint64_t>({std::uint64_t(seed) << 40, ~std::uint64_t(0)})),
        i64(rlk_test::make<std::int64_t>({-(std::int64_t(seed) << 40)})),
        f32(rlk_test::make<float>({0.1f * float(seed), -0.0f, 1e-38f, 3.4e38f})),
        f64(rlk_test::make<double>({0.1 * seed, -2.5e-300, 1.0 / 3.0})),
        pods(rlk_test::make<pod_item>({pod_item{seed, 1.5f * float(seed), {1, 2, std::uint8_t(seed)}}})),
        empty(rlk_test::backend(), 0), counter(std::uint64_t(seed) * 7919), rate(1e-3 * seed), flag(seed % 2 == 1),
        item{-seed, 0.25f, {9, 8, 7}} {}

  void bind(checkpoint& c) {
    const backend_t b = rlk_test::backend();
    c.bind("arrays/u8", b, u8.view());
    c.bind("arrays/i8", b, i8.view());
    c.bind("arrays/u16", b, u16.view());
    c.bind("arrays/i16", b, i16.view());
    c.bind("arrays/u32", b, u32.view());
    c.bind("arrays/i32", b, i32.view());
    c.bind("arrays/u64", b, u64.view());
    c.bind("arrays/i64", b, i64.view());
    c.bind("arrays/f32", b, f32.view());
    c.bind("arrays/f64", b, f64.view());
    c.bind("arrays/pods", b, pods.view());
    c.bind("arrays/empty", b, empty.view());
    c.bind_value("counter", counter);
    c.bind_value("rate", rate);
    c.bind_value("flag", flag);
    c.bind_value("item", item);
    c.bind_constant("config", "alpha=1\nbeta=2\n");
  }

  /// Every value as host bytes, to compare two states exactly.
  bytes_t snapshot() const {
    bytes_t out;
    const auto add = [&](const auto& v) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
      out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
    };
    add(u8.to_host()), add(i8.to_host()), add(u16.to_host()), add(i16.to_host()), add(u32.to_host());
    add(i32.to_host()), add(u64.to_host()), add(i64.to_host()), add(f32.to_host()), add(f64.to_host());
    const auto* raw = reinterpret_cast<const std::uint8_t*>(&counter);
    out.insert(out.end(), raw, raw + 8);
    raw = reinterpret_cast<const std::uint8_t*>(&rate);
    out.insert(out.end(), raw, raw + 8);
    out.push_back(flag);
    return out;
  }
};

bool same_state(const all_types& a, const all_types& b) {
  return a.snapshot() == b.snapshot() && a.pods.to_host()[0] == b.pods.to_host()[0] && a.item == b.item;
}

}  // namespace

TEST_CASE("checkpoint: CRC-64/XZ check value and incremental use", "[checkpoint]") {
  const char* s = "123456789";
  CHECK(detail::crc64(s, 9) == 0x995DC9BBDF1939FAull);
  CHECK(detail::crc64(s + 3, 6, detail::crc64(s, 3)) == 0x995DC9BBDF1939FAull);
  CHECK(detail::crc64(s, 0) == 0);
}

TEST_CASE("checkpoint: every type round-trips through a file", "[checkpoint]") {
  temp_dir dir;
  const std::string path = dir.file("all.rlkc");
  all_types saved(3);
  checkpoint out;
  saved.bind(out);
  CHECK(out.size() == 17);
  out.save(path);
  CHECK(fs::file_size(path) == out.file_size());

  all_types loaded(5);
  REQUIRE_FALSE(same_state(saved, loaded));
  checkpoint in;
  loaded.bind(in);
  in.load(path);
  CHECK(same_state(saved, loaded));

  // The header as documented.
  const bytes_t b = read_bytes(path);
  CHECK(std::memcmp(b.data(), "RLKCKPT\x1a", 8) == 0);
  CHECK(b[8] == 1);
  CHECK((b[12] == 4 && b[13] == 3 && b[14] == 2 && b[15] == 1));
  CHECK(detail::get_le<std::uint64_t>(b.data() + 16) == b.size());
  CHECK(detail::get_le<std::uint32_t>(b.data() + 24) == 17);
  CHECK(detail::get_le<std::uint64_t>(b.data() + b.size() - 8) == detail::crc64(b.data(), b.size() - 8));
  // Saving the same state twice gives the same bytes; so does saving to memory, and
  // checkpoint::read_bytes reads them back.
  out.save(path);
  CHECK(read_bytes(path) == b);
  CHECK(out.save_to_memory() == b);
  CHECK(checkpoint::read_bytes(path) == b);
  all_types from_memory(7);
  checkpoint mem;
  from_memory.bind(mem);
  const bytes_t in_memory = out.save_to_memory();
  mem.load_from_memory(in_memory.data(), in_memory.size());
  CHECK(same_state(saved, from_memory));
  // A bool must be 0 or 1 (anything else would be undefined behaviour to read).
  bytes_t bad = b;
  bad[payload_offset(b, "flag")] = 2;
  reseal(bad);
  all_types untouched(5);
  checkpoint again;
  untouched.bind(again);
  CHECK_THAT(load_error(again, bad), Catch::Contains("section 'flag' holds a bool that is neither 0 nor 1"));
  CHECK(same_state(untouched, all_types(5)));
}

TEST_CASE("checkpoint: binding rules", "[checkpoint]") {
  checkpoint c;
  double x = 0;
  c.bind_value("x", x);
  CHECK_THROWS_AS(c.bind_value("x", x), std::logic_error);
  CHECK_THROWS_AS(c.bind_constant("", "v"), std::invalid_argument);
  CHECK_THROWS_AS(c.bind_value(std::string(1025, 'n'), x), std::invalid_argument);
  CHECK_THROWS_AS(c.bind("null", rlk_test::backend(), view<float>(nullptr, 3)), std::invalid_argument);
  CHECK(c.contains("x"));
  CHECK_FALSE(c.contains("y"));
}

TEST_CASE("checkpoint: save is atomic", "[checkpoint]") {
  temp_dir dir;
  const std::string path = dir.file("state.rlkc");
  all_types a(1);
  checkpoint c;
  a.bind(c);
  c.save(path);
  const bytes_t good = read_bytes(path);
  a.counter = 99;  // the next save would write other bytes

  SECTION("into a missing directory") {
    const std::string missing = dir.file("no/such/dir/state.rlkc");
    CHECK_THROWS_AS(c.save(missing), rlkernels::error);
    CHECK_THROWS_WITH(c.save(missing), Catch::Contains(missing) && Catch::Contains("No such file or directory"));
  }
  SECTION("when the temporary file cannot be created: the old file survives") {
    // A non-empty directory where the temporary file would go (works as root too).
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    fs::create_directories(fs::path(tmp) / "blocker");
    CHECK_THROWS_WITH(c.save(path), Catch::Contains(tmp) && Catch::Contains("cannot create"));
    CHECK(read_bytes(path) == good);
    fs::remove_all(tmp);
  }
  SECTION("when the rename fails: the temporary file is removed") {
    const std::string target = dir.file("is_a_directory");
    fs::create_directories(fs::path(target) / "content");
    CHECK_THROWS_WITH(c.save(target), Catch::Contains(target) && Catch::Contains("cannot rename"));
    CHECK(fs::is_directory(target));
  }
  SECTION("into a read-only directory (not as root, which may write anyway)") {
    if (::geteuid() != 0) {
      fs::permissions(dir.path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
      CHECK_THROWS_WITH(c.save(path), Catch::Contains(path) && Catch::Contains("Permission denied"));
      fs::permissions(dir.path, fs::perms::owner_write, fs::perm_options::add);
      CHECK(read_bytes(path) == good);
    }
  }
  // No temporary file is left behind in any case.
  for (const auto& e : fs::directory_iterator(dir.path))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  CHECK(read_bytes(path) == good);
}

TEST_CASE("checkpoint: refused files leave bound memory unchanged", "[checkpoint]") {
  temp_dir dir;
  const std::string path = dir.file("small.rlkc");
  // A small file: a few fields of several types and a constant.
  buffer<float, backend_t> weights = rlk_test::make<float>({1.5f, -2.5f, 3.25f});
  buffer<std::int32_t, backend_t> counts = rlk_test::make<std::int32_t>({7, 8});
  std::uint64_t step = 42;
  {
    checkpoint c;
    c.bind_constant("config", "lr=0.001\nseed=1\n");
    c.bind("weights", rlk_test::backend(), weights.view());
    c.bind("counts", rlk_test::backend(), counts.view());
    c.bind_value("step", step);
    c.save(path);
  }
  const bytes_t good = read_bytes(path);
  // The memory a load would overwrite holds other values.
  buffer<float, backend_t> w2 = rlk_test::make<float>({0.f, 0.f, 0.f});
  buffer<std::int32_t, backend_t> n2 = rlk_test::make<std::int32_t>({0, 0});
  std::uint64_t s2 = 0;
  checkpoint c;
  c.bind_constant("config", "lr=0.001\nseed=1\n");
  c.bind("weights", rlk_test::backend(), w2.view());
  c.bind("counts", rlk_test::backend(), n2.view());
  c.bind_value("step", s2);
  const auto unchanged = [&] {
    return w2.to_host() == std::vector<float>{0.f, 0.f, 0.f} && n2.to_host() == std::vector<std::int32_t>{0, 0} &&
           s2 == 0;
  };
  const auto expect_refused = [&](const bytes_t& b, const std::string& why) {
    CHECK_THROWS_AS(c.load_from_memory(b.data(), b.size(), "test.rlkc"), checkpoint_error);
    CHECK_THROWS_WITH(c.load_from_memory(b.data(), b.size(), "test.rlkc"),
                      Catch::Contains("'test.rlkc'") && Catch::Contains(why));
    CHECK(unchanged());
  };

  SECTION("truncated at every length") {
    for (std::size_t n = 0; n < good.size(); ++n) {
      INFO("prefix of " << n << " of " << good.size() << " bytes");
      const bytes_t prefix(good.begin(), good.begin() + std::ptrdiff_t(n));
      CHECK_THAT(load_error(c, prefix), Catch::Contains("truncated"));
    }
    CHECK(unchanged());
    std::ofstream(dir.file("empty.rlkc")).close();
    CHECK_THROWS_WITH(c.load(dir.file("empty.rlkc")), Catch::Contains("truncated: 0 bytes"));
  }
  SECTION("each single flipped byte") {
    for (std::size_t i = 0; i < good.size(); ++i) {
      bytes_t b = good;
      b[i] ^= 0x5A;
      INFO("byte " << i << " of " << good.size());
      const std::string why = load_error(c, b);
      if (i < 8) CHECK_THAT(why, Catch::Contains("bad magic"));
      else if (i < 12) CHECK_THAT(why, Catch::Contains("this build reads version 1"));
      else if (i < 16) CHECK_THAT(why, Catch::Contains("byte-order marker"));
      else if (i < 24) CHECK_THAT(why, Catch::Contains("truncated") || Catch::Contains("size mismatch"));
      else CHECK_THAT(why, Catch::Contains("checksum mismatch"));
    }
    CHECK(unchanged());
  }
  SECTION("not a checkpoint, other version, big-endian, trailing data") {
    bytes_t b = good;
    b[0] = 'X';
    expect_refused(b, "not a checkpoint (bad magic)");
    expect_refused(bytes_t{'h', 'e', 'l', 'l', 'o'}, "bad magic");
    b = good;
    b[8] = 7;
    reseal(b);
    expect_refused(b, "version 7, this build reads version 1");
    b = good;
    b[12] = 1, b[13] = 2, b[14] = 3, b[15] = 4;
    reseal(b);
    expect_refused(b, "big-endian checkpoint");
    b = good;
    b.push_back(0);
    expect_refused(b, "size mismatch");
    b = good;
    b[good.size() - 1] ^= 1;
    expect_refused(b, "checksum mismatch");
    CHECK_THROWS_WITH(c.load(dir.file("missing.rlkc")), Catch::Contains("cannot open") && Catch::Contains("missing.rlkc"));
  }
  SECTION("another shape, type, count; missing and unexpected sections; constants") {
    {
      buffer<double, backend_t> other(rlk_test::backend(), 3);  // float64 instead of float32
      checkpoint d;
      d.bind_constant("config", "lr=0.001\nseed=1\n");
      d.bind("weights", rlk_test::backend(), other.view());
      d.bind("counts", rlk_test::backend(), counts.view());
      d.bind_value("step", step);
      CHECK_THAT(load_error(d, good), Catch::Contains("section 'weights' holds 3 float32 elements of 4 bytes; this run "
                                                      "binds 3 float64 elements of 8 bytes"));
    }
    {
      buffer<float, backend_t> longer(rlk_test::backend(), 4);
      checkpoint d;
      d.bind_constant("config", "lr=0.001\nseed=1\n");
      d.bind("weights", rlk_test::backend(), longer.view());
      CHECK_THAT(load_error(d, good), Catch::Contains("section 'weights' holds 3 float32") &&
                                          Catch::Contains("this run binds 4 float32"));
      CHECK(longer.to_host() == std::vector<float>(4, 0.f));
    }
    {
      std::int64_t wide = 0;  // a value of another type
      checkpoint d;
      d.bind_constant("config", "lr=0.001\nseed=1\n");
      d.bind("weights", rlk_test::backend(), w2.view());
      d.bind("counts", rlk_test::backend(), n2.view());
      d.bind_value("step", wide);
      CHECK_THAT(load_error(d, good), Catch::Contains("section 'step' holds 1 uint64") && Catch::Contains("1 int64"));
    }
    c.bind_value("extra", s2);
    expect_refused(good, "missing section 'extra'");
    checkpoint fewer;
    fewer.bind_constant("config", "lr=0.001\nseed=1\n");
    fewer.bind("weights", rlk_test::backend(), w2.view());
    fewer.bind_value("step", s2);
    CHECK_THAT(load_error(fewer, good), Catch::Contains("unexpected section 'counts'"));
    checkpoint other_config;
    other_config.bind_constant("config", "lr=0.0003\nseed=1\n");
    CHECK_THAT(load_error(other_config, good), Catch::Contains("constant 'config' differs: lr: file 0.001, this run 0.0003"));
    checkpoint more_keys;
    more_keys.bind_constant("config", "lr=0.001\nseed=1\nextra=5\n");
    CHECK_THAT(load_error(more_keys, good), Catch::Contains("extra: not in the file, this run 5"));
    checkpoint reordered;
    reordered.bind_constant("config", "seed=2\nlr=0.001\n");
    CHECK_THAT(load_error(reordered, good), Catch::Contains("seed: file 1, this run 2"));
    CHECK(unchanged());
  }
  SECTION("structural corruption behind a valid checksum") {
    const std::size_t first = detail::checkpoint_header_bytes;  // the first section: "config"
    bytes_t b = good;
    b[first] = 0, b[first + 1] = 0;  // name length 0
    reseal(b);
    expect_refused(b, "name of 0 bytes");
    b = good;
    b[first] = 0xE8, b[first + 1] = 0x03;  // a name of 1000 bytes: past the end
    reseal(b);
    expect_refused(b, "runs past the end");
    const std::size_t w = payload_offset(good, "weights");
    b = good;
    b[w - 16] = 99;  // type code
    reseal(b);
    expect_refused(b, "unknown type code 99");
    b = good;
    b[w - 12] = 8;  // float32 with 8-byte elements
    reseal(b);
    expect_refused(b, "of type float32 has elements of 8 bytes");
    b = good;
    for (int k = 0; k < 8; ++k) b[w - 8 + k] = 0xFF;  // count 2^64 - 1: count * size overflows
    reseal(b);
    expect_refused(b, "elements of 4 bytes, more than the");
    b = good;
    std::memcpy(b.data() + payload_offset(good, "counts") - 16 - 6, "config", 6);  // "counts" -> "config"
    reseal(b);
    expect_refused(b, "section 'config' appears twice");
    b = good;
    b[24] = 0xFF, b[25] = 0xFF, b[26] = 0xFF, b[27] = 0x7F;  // section count
    reseal(b);
    expect_refused(b, "sections, at most");
    b = good;
    b[24] = 3;  // one section fewer than written
    reseal(b);
    expect_refused(b, "bytes after the last section");
    b = good;
    b[24] = 5;
    reseal(b);
    expect_refused(b, "runs past the end");
  }
  SECTION("a value its check refuses") {
    checkpoint d;
    std::uint64_t checked_step = 0;
    d.bind_constant("config", "lr=0.001\nseed=1\n");
    d.bind("weights", rlk_test::backend(), w2.view());
    d.bind("counts", rlk_test::backend(), n2.view());
    d.bind_value("step", checked_step, [](const std::uint64_t& v) {
      return v < 10 ? std::string() : "step " + std::to_string(v) + " >= 10";
    });
    CHECK_THAT(load_error(d, good), Catch::Contains("section 'step' holds a bad value: step 42 >= 10"));
    CHECK(unchanged());
    CHECK(checked_step == 0);
  }
  // The good file still loads, with every value.
  checkpoint ok;
  ok.bind_constant("config", "lr=0.001\nseed=1\n");
  ok.bind("weights", rlk_test::backend(), w2.view());
  ok.bind("counts", rlk_test::backend(), n2.view());
  ok.bind_value("step", s2);
  ok.load(path);
  CHECK(w2.to_host() == weights.to_host());
  CHECK(n2.to_host() == counts.to_host());
  CHECK(s2 == 42);
}

TEST_CASE("checkpoint_directory: rotation, latest, foreign files", "[checkpoint]") {
  temp_dir dir;
  const std::string sub = dir.file("runs/a");
  checkpoint_directory d(sub, "ppo", 2);  // creates the directories
  CHECK(fs::is_directory(sub));
  CHECK(d.list().empty());
  CHECK_FALSE(d.latest().has_value());
  CHECK(d.path_for(64) == (fs::path(sub) / "ppo-000000000064.rlkc").string());

  std::uint64_t value = 0;
  checkpoint c;
  c.bind_value("value", value);
  // Foreign files and leftovers of an interrupted save are ignored (and never removed).
  for (const char* name : {"notes.txt", "ppo-12.rlkc", "ppo-000000000001.rlkc.tmp.123", "dqn-000000000001.rlkc",
                           "ppo-00000000000x.rlkc", "ppo-000000000001.rlkcx"})
    std::ofstream(fs::path(sub) / name) << "x";
  fs::create_directories(fs::path(sub) / "ppo-000000000002.rlkc");  // a directory of that name
  value = 5;
  CHECK(d.save(c, 5) == d.path_for(5));
  value = 10;
  d.save(c, 10);
  CHECK(d.list() == std::vector<std::string>{d.path_for(5), d.path_for(10)});
  value = 1000;
  d.save(c, 1000);
  CHECK(d.list() == std::vector<std::string>{d.path_for(10), d.path_for(1000)});
  value = 20;
  d.save(c, 20);  // the same run, an older step than its newest: the oldest written goes
  CHECK(d.list() == std::vector<std::string>{d.path_for(1000), d.path_for(20)});
  CHECK(d.latest() == d.path_for(20));
  value = 7;
  d.save(c, 10000000000000ull);  // 14 digits
  CHECK(d.latest() == d.path_for(10000000000000ull));
  CHECK(d.list().size() == 2);
  value = 0;
  c.load(*d.latest());
  CHECK(value == 7);
  for (const char* name : {"notes.txt", "ppo-12.rlkc", "ppo-000000000001.rlkc.tmp.123", "dqn-000000000001.rlkc",
                           "ppo-00000000000x.rlkc", "ppo-000000000001.rlkcx", "ppo-000000000002.rlkc"})
    CHECK(fs::exists(fs::path(sub) / name));

  CHECK_THROWS_AS(checkpoint_directory(sub, "ppo", 0), std::invalid_argument);
  CHECK_THROWS_AS(checkpoint_directory(sub, "a/b", 1), std::invalid_argument);
  CHECK_THROWS_AS(checkpoint_directory("", "ppo", 1), std::invalid_argument);
  std::ofstream(dir.file("plain_file")) << "x";
  CHECK_THROWS_AS(checkpoint_directory(dir.file("plain_file") + "/sub", "ppo", 1), rlkernels::error);
}

namespace {

/// A checkpoint holding one value, to tell the files apart.
struct tagged {
  std::uint64_t value = 0;
  checkpoint c;
  tagged() { c.bind_value("value", value); }
  std::string save(const checkpoint_directory& d, std::uint64_t step, std::uint64_t v) {
    value = v;
    return d.save(c, step);
  }
  std::uint64_t load(const std::string& path) {
    value = ~0ull;
    c.load(path);
    return value;
  }
};

std::vector<std::string> checkpoint_names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".rlkc") == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// Issue 55, item 3: rotation was keyed by step, so a run resumed from an older file into the same
// directory kept the abandoned run's newer files as "latest" and deleted its own checkpoints as
// soon as it wrote them. This case uses only what the earlier code offered (no resumed_from).
TEST_CASE("checkpoint_directory: a run resumed from an older file keeps its own files and latest() is its newest",
          "[checkpoint]") {
  temp_dir dir;
  const std::string sub = dir.file("run");
  tagged t;
  {
    checkpoint_directory first(sub, "ppo", 2);
    for (std::uint64_t step = 1; step <= 5; ++step) {
      const std::string path = t.save(first, step, step);
      if (step == 2) fs::copy_file(path, dir.file("backup.rlkc"));  // the user keeps step 2 aside
    }
    CHECK(checkpoint_names(sub) == std::vector<std::string>{"ppo-000000000004.rlkc", "ppo-000000000005.rlkc"});
  }
  // Back to step 2 in the same directory (restored from the backup), and on from there: 3', 4'.
  fs::copy_file(dir.file("backup.rlkc"), fs::path(sub) / "ppo-000000000002.rlkc");
  checkpoint_directory d(sub, "ppo", 2);
  const std::string resumed = d.path_for(2);
  REQUIRE(t.load(resumed) == 2);
  const std::string p3 = t.save(d, 3, 30);
  CHECK(fs::exists(p3));
  CHECK(fs::exists(resumed));  // the file it resumed from
  const std::string p4 = t.save(d, 4, 40);
  CHECK(p4 != d.path_for(4));  // the abandoned run's step 4 is not overwritten
  CHECK(fs::exists(p3));
  CHECK(fs::exists(p4));
  CHECK(fs::exists(resumed));
  REQUIRE(d.latest().has_value());
  CHECK(*d.latest() == p4);
  CHECK(t.load(*d.latest()) == 40);
  // What a restarted process sees: the resumed run's newest, not the abandoned run's step 5.
  const checkpoint_directory again(sub, "ppo", 2);
  REQUIRE(again.latest().has_value());
  CHECK(t.load(*again.latest()) == 40);
  // The abandoned run's newer files are left as they were.
  CHECK(t.load(d.path_for(4)) == 4);
  CHECK(t.load(d.path_for(5)) == 5);
  CHECK(t.load(resumed) == 2);
}

TEST_CASE("checkpoint_directory: resumed_from, rotation along the run's chain, crash and resume again",
          "[checkpoint]") {
  temp_dir dir;
  const std::string sub = dir.file("run");
  tagged t;
  {
    checkpoint_directory first(sub, "ppo", 3);
    first.start_new_run();
    for (std::uint64_t step = 1; step <= 5; ++step) t.save(first, step, step);
  }
  checkpoint_directory d(sub, "ppo", 3);
  CHECK(*d.latest() == d.path_for(5));
  const std::string resumed = d.path_for(3);
  d.resumed_from(resumed);
  CHECK(*d.latest() == resumed);  // before its first save: the file it resumed from
  CHECK(d.lineage() == std::vector<std::string>{resumed});
  CHECK(*checkpoint_directory(sub, "ppo", 3).latest() == d.path_for(5));  // nothing written yet
  std::vector<std::string> own;
  for (std::uint64_t step = 4; step <= 7; ++step) own.push_back(t.save(d, step, 10 * step));
  CHECK(own[0] == (fs::path(sub) / "ppo-000000000004-1.rlkc").string());
  CHECK(own[1] == (fs::path(sub) / "ppo-000000000005-1.rlkc").string());
  CHECK(own[2] == d.path_for(6));
  // Kept: the newest 3 of the run (5', 6', 7'), the file it resumed from (3), the abandoned 4 and 5.
  CHECK(!fs::exists(own[0]));
  CHECK(d.lineage() == std::vector<std::string>{resumed, own[1], own[2], own[3]});
  CHECK(checkpoint_names(sub) ==
        std::vector<std::string>{"ppo-000000000003.rlkc", "ppo-000000000004.rlkc", "ppo-000000000005-1.rlkc",
                                 "ppo-000000000005.rlkc", "ppo-000000000006.rlkc", "ppo-000000000007.rlkc"});
  CHECK(t.load(*checkpoint_directory(sub, "ppo", 3).latest()) == 70);

  // The run stops; the next resumes from latest(). The file it resumed from is now kept instead,
  // and 3, an ancestor older than that, goes with the rest of the chain beyond the newest 3.
  checkpoint_directory next(sub, "ppo", 3);
  const std::string from = *next.latest();
  next.resumed_from(from);
  t.save(next, 8, 80);
  t.save(next, 9, 90);
  t.save(next, 10, 100);
  CHECK(checkpoint_names(sub) ==
        std::vector<std::string>{"ppo-000000000004.rlkc", "ppo-000000000005.rlkc", "ppo-000000000007.rlkc",
                                 "ppo-000000000008.rlkc", "ppo-000000000009.rlkc", "ppo-000000000010.rlkc"});
  CHECK(t.load(d.path_for(4)) == 4);
  CHECK(t.load(d.path_for(5)) == 5);
  CHECK(t.load(*next.latest()) == 100);

  // A file from elsewhere: a run of its own; nothing here is removed by it.
  fs::copy_file(d.path_for(8), dir.file("elsewhere.rlkc"));
  checkpoint_directory other(sub, "ppo", 1);
  other.resumed_from(dir.file("elsewhere.rlkc"));
  CHECK(*other.latest() == dir.file("elsewhere.rlkc"));
  const std::string o = t.save(other, 9, 99);
  CHECK(o == (fs::path(sub) / "ppo-000000000009-1.rlkc").string());
  t.save(other, 10, 109);
  CHECK(!fs::exists(o));
  CHECK(checkpoint_names(sub).size() == 7);
  CHECK(t.load(*checkpoint_directory(sub, "ppo", 1).latest()) == 109);

  // A run from scratch removes nothing of the others either.
  checkpoint_directory fresh(sub, "ppo", 1);
  fresh.start_new_run();
  CHECK_FALSE(fresh.latest().has_value());
  t.save(fresh, 1, 1000);
  t.save(fresh, 2, 2000);
  CHECK(checkpoint_names(sub).size() == 8);
  CHECK(t.load(*fresh.latest()) == 2000);
  CHECK(t.load(*checkpoint_directory(sub, "ppo", 1).latest()) == 2000);
}

TEST_CASE("checkpoint_directory: directories written before the index load and resume", "[checkpoint]") {
  temp_dir dir;
  const std::string sub = dir.file("old");
  tagged t;
  checkpoint_directory d(sub, "sac", 2);
  for (std::uint64_t step = 1000; step <= 4000; step += 1000) {
    t.value = step;
    t.c.save(d.path_for(step));  // what the earlier code wrote: the files alone, no index
  }
  REQUIRE_FALSE(fs::exists(d.index_path()));
  CHECK(d.list() == std::vector<std::string>{d.path_for(1000), d.path_for(2000), d.path_for(3000), d.path_for(4000)});
  CHECK(*d.latest() == d.path_for(4000));

  SECTION("resume from the newest: the run goes on and rotates as before") {
    checkpoint_directory r(sub, "sac", 2);
    r.resumed_from(*r.latest());
    t.save(r, 5000, 5);
    t.save(r, 6000, 6);
    CHECK(checkpoint_names(sub) ==
          std::vector<std::string>{"sac-000000004000.rlkc", "sac-000000005000.rlkc", "sac-000000006000.rlkc"});
    CHECK(t.load(*checkpoint_directory(sub, "sac", 2).latest()) == 6);
  }
  SECTION("resume from an older file: its ancestors go, the newer files stay") {
    checkpoint_directory r(sub, "sac", 2);
    r.resumed_from(d.path_for(2000));
    const std::string p3 = t.save(r, 3000, 3);
    CHECK(p3 == (fs::path(sub) / "sac-000000003000-1.rlkc").string());
    CHECK(t.save(r, 3000, 33) == p3);  // the run's own file of the same step is replaced
    CHECK(t.load(p3) == 33);
    t.save(r, 3000, 3);
    CHECK(t.load(*checkpoint_directory(sub, "sac", 2).latest()) == 3);
    t.save(r, 4000, 4);
    CHECK(checkpoint_names(sub) ==
          std::vector<std::string>{"sac-000000002000.rlkc", "sac-000000003000-1.rlkc", "sac-000000003000.rlkc",
                                   "sac-000000004000-1.rlkc", "sac-000000004000.rlkc"});
    CHECK(t.load(d.path_for(4000)) == 4000);
  }
  SECTION("an object told nothing continues the newest file") {
    checkpoint_directory r(sub, "sac", 2);
    t.save(r, 5000, 5);
    CHECK(checkpoint_names(sub) == std::vector<std::string>{"sac-000000004000.rlkc", "sac-000000005000.rlkc"});
  }
}

TEST_CASE("checkpoint_directory: a crash at any point of a save leaves a loadable latest()", "[checkpoint]") {
  struct crash {};
  for (int stage = 0; stage <= 4; ++stage) {
    CAPTURE(stage);
    temp_dir dir;
    const std::string sub = dir.file("run");
    tagged t;
    {
      checkpoint_directory d(sub, "ppo", 2);
      d.start_new_run();
      for (std::uint64_t step = 1; step <= 3; ++step) t.save(d, step, step);
      static int crash_at = 0;
      crash_at = stage;
      detail::checkpoint_directory_crash_point = [](int s, const std::string& path) {
        if (s != crash_at) return;
        if (s == 0) std::ofstream(path + ".tmp.999999") << "half a checkpoint";  // a write cut short
        throw crash{};
      };
      CHECK_THROWS_AS(t.save(d, 4, 4), crash);
      detail::checkpoint_directory_crash_point = nullptr;
    }
    checkpoint_directory after(sub, "ppo", 2);
    REQUIRE(after.latest().has_value());
    const std::uint64_t v = t.load(*after.latest());
    CHECK(v == (stage <= 1 ? 3u : 4u));
    CHECK(fs::exists(after.path_for(3)));  // never removed before the index names its successor
    // The next run resumes from latest() and rotates normally.
    after.resumed_from(*after.latest());
    t.save(after, 5, 5);
    t.save(after, 6, 6);
    CHECK(t.load(*checkpoint_directory(sub, "ppo", 2).latest()) == 6);
    CHECK(fs::exists(after.path_for(5)));
  }
}

TEST_CASE("checkpoint_directory: a damaged index is refused with its line, and nothing is written", "[checkpoint]") {
  temp_dir dir;
  const std::string sub = dir.file("run");
  tagged t;
  checkpoint_directory d(sub, "ppo", 2);
  t.save(d, 1, 1);
  std::string text;
  {
    std::ifstream in(d.index_path());
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  CHECK(text == "rlkernels checkpoint index 1\nhead 1\nresumed 0\nnext 2\nfile 1 1 0 ppo-000000000001.rlkc\n");
  std::ofstream(d.index_path()) << "rlkernels checkpoint index 1\nhead 1\nresumed 0\nnext 2\nfile 1 1 5 ppo-000000000001.rlkc\n";
  CHECK_THROWS_AS(d.latest(), checkpoint_error);
  CHECK_THROWS_WITH(t.save(d, 2, 2), Catch::Contains(d.index_path()) && Catch::Contains("line 5") &&
                                         Catch::Contains("parent 5 is not older"));
  CHECK_FALSE(fs::exists(d.path_for(2)));
}

TEST_CASE("checkpoint: vec_env resumes exactly", "[checkpoint]") {
  using env_t = vec_env<cartpole<float>, backend_t>;
  const std::size_t n = 70;  // two episode-statistics chunks on the host
  const auto actions_at = [&](int t) {
    std::vector<std::int32_t> a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = std::int32_t((i * 7 + std::size_t(t) * 3 + i / 5) % 2);
    return rlk_test::make<std::int32_t>(a);
  };
  env_t a(rlk_test::backend(), n, 11);
  for (int t = 0; t < 40; ++t) a.step(actions_at(t).cview());
  temp_dir dir;
  const std::string path = dir.file("env.rlkc");
  {
    checkpoint c;
    a.bind_checkpoint(c, "env/");
    c.save(path);
  }
  env_t b(rlk_test::backend(), n, 999);  // another seed: restored from the file
  {
    checkpoint c;
    b.bind_checkpoint(c, "env/");
    c.load(path);
  }
  CHECK(b.seed() == 11);
  CHECK(b.observations().to_host() == a.observations().to_host());
  for (int t = 40; t < 120; ++t) {
    a.step(actions_at(t).cview());
    b.step(actions_at(t).cview());
  }
  CHECK(b.observations().to_host() == a.observations().to_host());
  CHECK(b.final_observations().to_host() == a.final_observations().to_host());
  CHECK(b.rewards().to_host() == a.rewards().to_host());
  CHECK(b.terminated().to_host() == a.terminated().to_host());
  CHECK(b.truncated().to_host() == a.truncated().to_host());
  CHECK(b.episode_lengths().to_host() == a.episode_lengths().to_host());
  const episode_statistics sa = a.get_episode_statistics(), sb = b.get_episode_statistics();
  CHECK(sa.count > 0);
  CHECK(sb.count == sa.count);
  CHECK(sb.mean_return == sa.mean_return);
  CHECK(sb.min_return == sa.min_return);

  env_t other(rlk_test::backend(), n + 1, 11);
  checkpoint c;
  other.bind_checkpoint(c, "env/");
  const std::vector<float> before = other.observations().to_host();
  CHECK_THROWS_WITH(c.load(path), Catch::Contains("constant 'env/layout' differs: num_envs: file 70, this run 71"));
  CHECK(other.observations().to_host() == before);
}

TEST_CASE("checkpoint: adam, sgd and running_mean_std resume exactly", "[checkpoint]") {
  const std::size_t p = 37;
  const auto grads_at = [&](int t) {
    std::vector<double> g(p);
    for (std::size_t i = 0; i < p; ++i) g[i] = std::sin(0.3 * double(i) + 1.7 * t);
    return rlk_test::make<double>(g);
  };
  temp_dir dir;
  SECTION("adam") {
    buffer<double, backend_t> xa = rlk_test::make<double>(std::vector<double>(p, 0.5)), xb(rlk_test::backend(), p);
    adam<double, backend_t> a(rlk_test::backend(), p, adam_params{1e-2, 0.9, 0.99, 1e-8, 0.01});
    for (int t = 0; t < 5; ++t) a.step(xa.view(), grads_at(t).cview());
    a.set_learning_rate(3e-3);
    checkpoint ca;
    a.bind_checkpoint(ca, "opt/");
    ca.bind("x", rlk_test::backend(), xa.view());
    ca.save(dir.file("adam.rlkc"));
    adam<double, backend_t> b(rlk_test::backend(), p, adam_params{1e-2, 0.9, 0.99, 1e-8, 0.01});
    checkpoint cb;
    b.bind_checkpoint(cb, "opt/");
    cb.bind("x", rlk_test::backend(), xb.view());
    cb.load(dir.file("adam.rlkc"));
    CHECK(b.steps() == 5);
    CHECK(b.learning_rate() == 3e-3);
    for (int t = 5; t < 9; ++t) {
      a.step(xa.view(), grads_at(t).cview());
      b.step(xb.view(), grads_at(t).cview());
    }
    CHECK(xb.to_host() == xa.to_host());
    // A learning rate its check refuses.
    bytes_t bytes = read_bytes(dir.file("adam.rlkc"));
    const double bad = -1.0;
    std::memcpy(bytes.data() + payload_offset(bytes, "opt/learning_rate"), &bad, 8);
    reseal(bytes);
    CHECK_THAT(load_error(cb, bytes), Catch::Contains("'opt/learning_rate' holds a bad value"));
    CHECK(b.learning_rate() == 3e-3);
  }
  SECTION("sgd with momentum") {
    buffer<double, backend_t> xa = rlk_test::make<double>(std::vector<double>(p, 0.5)), xb(rlk_test::backend(), p);
    sgd<double, backend_t> a(rlk_test::backend(), p, sgd_params{1e-2, 0.9, true, 0.0});
    for (int t = 0; t < 5; ++t) a.step(xa.view(), grads_at(t).cview());
    checkpoint ca;
    a.bind_checkpoint(ca, "opt/");
    ca.bind("x", rlk_test::backend(), xa.view());
    ca.save(dir.file("sgd.rlkc"));
    sgd<double, backend_t> b(rlk_test::backend(), p, sgd_params{1e-2, 0.9, true, 0.0});
    checkpoint cb;
    b.bind_checkpoint(cb, "opt/");
    cb.bind("x", rlk_test::backend(), xb.view());
    cb.load(dir.file("sgd.rlkc"));
    CHECK(b.steps() == 5);
    for (int t = 5; t < 9; ++t) {
      a.step(xa.view(), grads_at(t).cview());
      b.step(xb.view(), grads_at(t).cview());
    }
    CHECK(xb.to_host() == xa.to_host());
  }
  SECTION("running_mean_std") {
    const std::size_t dim = 3;
    const auto batch_at = [&](int t) {
      std::vector<float> x(5 * dim);
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = float(std::cos(0.7 * double(k) + t) * (1.0 + double(k % dim)));
      return rlk_test::make<float>(x);
    };
    running_mean_std<float, backend_t> a(rlk_test::backend(), dim), b(rlk_test::backend(), dim);
    for (int t = 0; t < 4; ++t) a.update(batch_at(t).cview());
    checkpoint ca, cb;
    a.bind_checkpoint(ca, "rms/");
    b.bind_checkpoint(cb, "rms/");
    ca.save(dir.file("rms.rlkc"));
    cb.load(dir.file("rms.rlkc"));
    for (int t = 4; t < 7; ++t) {
      a.update(batch_at(t).cview());
      b.update(batch_at(t).cview());
    }
    CHECK(b.mean() == a.mean());
    CHECK(b.var() == a.var());
    CHECK(b.count() == a.count());
    running_mean_std<float, backend_t> wider(rlk_test::backend(), dim + 1);
    checkpoint cw;
    wider.bind_checkpoint(cw, "rms/");
    CHECK_THROWS_WITH(cw.load(dir.file("rms.rlkc")), Catch::Contains("section 'rms/mean' holds 3 float64"));
  }
}

namespace {
/// Adds `rows` synthetic rows of N transitions to a replay buffer (of either kind).
template <class Buffer>
void add_rows(Buffer& buf, int first, int rows, std::size_t n, int obs) {
  for (int r = first; r < first + rows; ++r) {
    std::vector<float> o(n * std::size_t(obs)), o2(n * std::size_t(obs)), rew(n);
    std::vector<std::int32_t> act(n);
    std::vector<std::uint8_t> te(n), tr(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (int k = 0; k < obs; ++k) {
        o[i * std::size_t(obs) + std::size_t(k)] = float(r * 100 + int(i) * 10 + k);
        o2[i * std::size_t(obs) + std::size_t(k)] = float(r * 100 + int(i) * 10 + k + 100);
      }
      act[i] = std::int32_t((r + int(i)) % 3);
      rew[i] = float(r) * 0.5f - float(i);
      te[i] = std::uint8_t((r + int(i)) % 5 == 0);
      tr[i] = std::uint8_t((r + int(i)) % 7 == 0);
    }
    buf.add(rlk_test::make(o).cview(), rlk_test::make(act).cview(), rlk_test::make(rew).cview(),
            rlk_test::make(o2).cview(), rlk_test::make(te).cview(), rlk_test::make(tr).cview());
  }
}
template <class Batch>
void check_same_batch(const Batch& a, const Batch& b) {
  CHECK(a.indices.to_host() == b.indices.to_host());
  CHECK(a.observations.to_host() == b.observations.to_host());
  CHECK(a.actions.to_host() == b.actions.to_host());
  CHECK(a.rewards.to_host() == b.rewards.to_host());
  CHECK(a.next_observations.to_host() == b.next_observations.to_host());
  CHECK(a.discounts.to_host() == b.discounts.to_host());
  CHECK(a.weights.to_host() == b.weights.to_host());
}
}  // namespace

TEST_CASE("checkpoint: replay buffers resume exactly", "[checkpoint]") {
  const std::size_t n = 3;
  const int obs = 2;
  temp_dir dir;
  SECTION("replay_buffer") {
    using rb_t = replay_buffer<float, std::int32_t, backend_t>;
    rb_t a(rlk_test::backend(), 6, n, obs, 1), b(rlk_test::backend(), 6, n, obs, 1);
    add_rows(a, 0, 8, n, obs);  // wrapped: head row 2
    checkpoint ca, cb;
    a.bind_checkpoint(ca, "replay/");
    b.bind_checkpoint(cb, "replay/");
    ca.save(dir.file("rb.rlkc"));
    cb.load(dir.file("rb.rlkc"));
    CHECK(b.head_row() == 2);
    CHECK(b.rows_added() == 8);
    add_rows(a, 8, 3, n, obs);
    add_rows(b, 8, 3, n, obs);
    typename rb_t::batch_type ba(rlk_test::backend(), 16, obs, 1), bb(rlk_test::backend(), 16, obs, 1);
    a.sample(5, 1, ba, 3, 0.9f);
    b.sample(5, 1, bb, 3, 0.9f);
    check_same_batch(ba, bb);
    // A head row outside the ring is refused before anything changes.
    bytes_t bytes = read_bytes(dir.file("rb.rlkc"));
    const std::uint64_t bad = 6;
    std::memcpy(bytes.data() + payload_offset(bytes, "replay/head_row"), &bad, 8);
    reseal(bytes);
    const std::vector<float> before = b.observations().to_host();
    CHECK_THAT(load_error(cb, bytes), Catch::Contains("head row 6 >= capacity_steps 6"));
    CHECK(b.head_row() == 5);
    CHECK(b.observations().to_host() == before);
    rb_t smaller(rlk_test::backend(), 5, n, obs, 1);
    checkpoint cs;
    smaller.bind_checkpoint(cs, "replay/");
    CHECK_THROWS_WITH(cs.load(dir.file("rb.rlkc")),
                      Catch::Contains("constant 'replay/layout' differs: capacity_steps: file 6, this run 5"));
  }
  SECTION("prioritized_replay_buffer") {
    using per_t = prioritized_replay_buffer<float, std::int32_t, backend_t>;
    per_t a(rlk_test::backend(), 5, n, obs, 1), b(rlk_test::backend(), 5, n, obs, 1);
    add_rows(a, 0, 4, n, obs);
    typename per_t::batch_type ba(rlk_test::backend(), 8, obs, 1), bb(rlk_test::backend(), 8, obs, 1);
    a.sample(3, 0, ba);
    std::vector<float> td(8);
    for (std::size_t k = 0; k < td.size(); ++k) td[k] = 0.3f * float(k) - 1.0f;
    a.update_priorities(ba.indices.cview(), rlk_test::make(td).cview());
    a.set_beta(0.7);
    checkpoint ca, cb;
    a.bind_checkpoint(ca, "per/");
    b.bind_checkpoint(cb, "per/");
    ca.save(dir.file("per.rlkc"));
    cb.load(dir.file("per.rlkc"));
    CHECK(b.max_priority() == a.max_priority());
    CHECK(b.params().beta == 0.7);
    CHECK(b.tree().total() == a.tree().total());
    add_rows(a, 4, 3, n, obs);
    add_rows(b, 4, 3, n, obs);
    a.sample(3, 1, ba);
    b.sample(3, 1, bb);
    check_same_batch(ba, bb);
    a.update_priorities(ba.indices.cview(), rlk_test::make(td).cview());
    b.update_priorities(bb.indices.cview(), rlk_test::make(td).cview());
    a.sample(3, 2, ba);
    b.sample(3, 2, bb);
    check_same_batch(ba, bb);
  }
}
