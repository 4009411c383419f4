// Fuzz target of checkpoint_directory's rotation (libFuzzer; scripts/fuzz_checkpoint.sh builds and
// runs it with ASan and UBSan). Each input is a program of runs on one directory: saves, runs
// that stop, resume from latest() or from any file in the directory (told with resumed_from, or
// not told at all), runs from scratch, and saves cut short by a crash at each point where one
// leaves a distinct state (a forked child ends itself with _exit there; before the checkpoint's
// rename it also leaves the half-written temporary file). The harness knows the true history
// (which run wrote each file, from which state), and after every step checks:
// - a file removed by a save is the run's own or an ancestor of the file it resumed from, never
//   that file itself (a run resumed without telling may remove it: it did not say so);
// - every checkpoint file in the directory loads;
// - latest() after a completed save is the file just written; after a crash, it loads and is the
//   file latest() gave before the save or the one the crashed save wrote;
// - a run keeps at most keep_last of its own files, and at least as many as it wrote up to that.
// A failed check aborts (a finding).
#include <rlkernels/io/checkpoint.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace rlkernels;
namespace fs = std::filesystem;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "checkpoint_directory_fuzz: %s\n", what.c_str());
  std::abort();
}

struct written {
  std::uint64_t parent;  // the token of the state it was saved from (0: a run from scratch)
  std::uint64_t run;     // the run that wrote it
};

struct harness {
  fs::path dir;
  std::size_t keep = 1;
  std::uint64_t clock = 0;                   // tokens: one per save, in write order
  std::map<std::uint64_t, written> history;  // token -> who wrote it, from what
  std::uint64_t run = 0;                     // the run in progress (0: none)
  std::optional<checkpoint_directory> obj;   // its directory object
  std::uint64_t resumed = 0;                 // the token it resumed from (0: none, or a file from elsewhere)
  bool told = true;                          // it told the directory (resumed_from / start_new_run)
  std::uint64_t state = 0;                   // the token its state descends from now
  std::uint64_t step = 0;
  std::uint64_t own_saved = 0;  // saves of the run in progress

  std::uint64_t token_value = 0, step_value = 0;
  checkpoint c;
  harness() {
    c.bind_value("token", token_value);
    c.bind_value("step", step_value);
  }

  checkpoint_directory fresh() const { return checkpoint_directory(dir.string(), "f", keep); }

  std::uint64_t token_of(const std::string& path) {
    token_value = step_value = ~0ull;
    try {
      c.load(path);
    } catch (const std::exception& e) {
      finding(std::string("a checkpoint file does not load: ") + e.what());
    }
    return token_value;
  }
  /// token -> path of every checkpoint file on disk (each must load).
  std::map<std::uint64_t, std::string> present() {
    std::map<std::uint64_t, std::string> out;
    for (const std::string& p : fresh().list()) out[token_of(p)] = p;
    return out;
  }

  bool ancestor_of_resume(std::uint64_t t) const {
    for (std::uint64_t x = resumed; x != 0;) {
      const auto it = history.find(x);
      if (it == history.end()) return false;
      x = it->second.parent;
      if (x == t) return true;
    }
    return false;
  }
  void check_removals(const std::map<std::uint64_t, std::string>& before,
                      const std::map<std::uint64_t, std::string>& after) const {
    for (const auto& [t, path] : before) {
      if (after.count(t)) continue;
      const written& w = history.at(t);
      if (t == resumed && told) finding("removed the file the run resumed from: " + path);
      if (w.run != run && !ancestor_of_resume(t) && !(t == resumed && !told))
        finding("removed " + path + ", neither the run's own nor older than the file it resumed from");
    }
  }

  void end_run() {
    obj.reset();
    run = 0;
  }
  void start(int how, std::uint8_t arg) {
    end_run();
    run = ++clock;  // runs and files share the clock; a run's id is never a file's token
    own_saved = 0;
    obj.emplace(dir.string(), "f", keep);
    const auto files = present();
    std::optional<std::string> from;
    if (how == 0) from = fresh().latest();
    if (how == 1 && !files.empty()) {
      auto it = files.begin();
      std::advance(it, arg % files.size());
      from = it->second;
    }
    told = !(how == 0 && (arg & 1));  // resume from latest() without telling, now and then
    if (from) {
      resumed = token_of(*from);
      state = resumed;
      step = step_value;
      if (told) obj->resumed_from(*from);
      if (told && obj->latest() != from) finding("latest() after resumed_from is not the file resumed from");
    } else {
      resumed = state = step = 0;
      told = true;
      obj->start_new_run();
      if (obj->latest()) finding("latest() of a run from scratch before its first save");
    }
  }

  void save(std::uint8_t arg) {
    if (!run) start(0, 0);
    const auto before = present();
    step += 1 + arg % 3;
    token_value = ++clock;
    step_value = step;
    history[clock] = {state, run};
    const std::string path = obj->save(c, step);
    state = clock;
    ++own_saved;
    const auto after = present();
    check_removals(before, after);
    if (!after.count(clock) || after.at(clock) != path) finding("the file just written is missing: " + path);
    if (obj->latest() != path || fresh().latest() != path) finding("latest() is not the file just written: " + path);
    std::size_t own = 0;
    for (const auto& [t, p] : after) own += history.at(t).run == run;
    if (own > keep || own < std::min<std::uint64_t>(keep, own_saved)) finding("the run keeps the wrong number of its files");
  }

  void crash(std::uint8_t arg) {
    if (!run) start(0, 0);
    const auto before = present();
    const std::optional<std::string> latest_before = fresh().latest();
    const std::uint64_t token_before = latest_before ? token_of(*latest_before) : 0;
    step += 1 + arg % 3;
    token_value = ++clock;
    step_value = step;
    history[clock] = {state, run};
    static int stage = 0;
    stage = int(arg / 3 % 5);
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) finding("fork failed");
    if (child == 0) {
      detail::checkpoint_directory_crash_point = [](int s, const std::string& p) {
        if (s != stage) return;
        if (s == 0) std::ofstream(p + ".tmp." + std::to_string(::getpid())) << "half a checkpoint";
        ::_exit(0);
      };
      try {
        obj->save(c, step);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) finding("the crashing save failed otherwise");
    const auto after = present();
    check_removals(before, after);
    const std::optional<std::string> l = fresh().latest();
    if (latest_before && !l) finding("no latest() after a crash");
    if (l) {
      const std::uint64_t t = token_of(*l);
      if (t != token_before && t != clock) finding("latest() after a crash is neither the old nor the new file");
    }
    end_run();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static int counter = 0;
  const char* base = std::getenv("RLK_FUZZ_TMP");
  fs::path root = base ? fs::path(base) : (fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path());
  harness h;
  h.dir = root / ("rlk_ckdir_fuzz_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(h.dir);
  h.keep = 1 + data[0] % 3;
  const std::size_t ops = std::min<std::size_t>(size, 48);
  for (std::size_t i = 1; i + 1 < ops; i += 2) {
    const std::uint8_t op = data[i], arg = data[i + 1];
    switch (op % 8) {
      case 0: case 1: case 2: h.save(arg); break;
      case 3: h.crash(arg); break;
      case 4: h.end_run(); break;
      case 5: h.start(0, arg); break;  // from latest(), told or not
      case 6: h.start(1, arg); break;  // from any file here, told
      default: h.start(2, arg); break;  // from scratch
    }
  }
  std::error_code ec;
  fs::remove_all(h.dir, ec);
  return 0;
}
