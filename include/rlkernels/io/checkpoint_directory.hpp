// rlkernels/io/checkpoint_directory.hpp
// A directory of rotating checkpoint files (io/checkpoint_file.hpp): save with the step in the
// name, keep the newest few of the run in progress, find its latest. A small index file records
// which file descends from which, so that a run resumed from an older file never loses its own
// files, the file it resumed from, or the newer files of the run it abandoned.
#pragma once

#include "checkpoint_file.hpp"

#include "../core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace rlkernels {
namespace detail {

/// Test seam: when set, checkpoint_directory::save calls it at each point where a crash would
/// leave a distinct state on disk (0: before the checkpoint file is written, with the path about
/// to be written; 1: after it is in place; 2: after the index names it; 3: after each rotated
/// file is removed; 4: after the index is rewritten without them). The crash tests set it to end
/// the process there. Never set in normal use.
inline void (*checkpoint_directory_crash_point)(int stage, const std::string& path) = nullptr;

inline void checkpoint_directory_stage(int stage, const std::string& path) {
  if (checkpoint_directory_crash_point) checkpoint_directory_crash_point(stage, path);
}

}  // namespace detail

/// @brief Rotating checkpoints in a directory: `dir/<prefix>-<step, at least 12 digits>.rlkc`
/// (`<prefix>-<step>-<n>.rlkc` when that name holds a file that must be kept), keeping the newest
/// `keep_last` files of the run in progress.
///
/// The index `dir/<prefix>.rlkc-index` (text, replaced atomically by each save) records every
/// file the directory wrote, in write order, with the file its state descends from. The *run in
/// progress* is a chain of files: the files a run wrote, the file it resumed from, and that
/// file's own ancestors. save() rotates along this chain only: it keeps the newest `keep_last`
/// of it and, always, the file the run resumed from; it never removes a file off the chain (the
/// newer files of a run abandoned by resuming from an older file, another run's files, files it
/// did not write). latest() is the chain's newest file.
///
/// Tell the object how its run began before its first save: resumed_from(path) after loading a
/// checkpoint, start_new_run() for a run from scratch (the trainers do both themselves). An
/// object told neither continues the directory's newest file, unless its first step is not past
/// that file's step (then it starts a run of its own). One process writes a directory (and
/// prefix) at a time. Other files in the directory and temporary files of an interrupted save
/// are ignored and never removed. A directory written before the index existed is read as one
/// run in the order of the steps.
class checkpoint_directory {
public:
  /// @brief Creates `dir` (and its parents) if needed.
  /// @param dir the directory of the checkpoints
  /// @param prefix file name prefix: letters, digits, '_', '-' and '.' only
  /// @param keep_last newest files of the run in progress kept by save(), >= 1
  /// @throw std::invalid_argument on an empty dir, a bad prefix or keep_last 0; rlkernels::error
  ///        if the directory cannot be created
  checkpoint_directory(std::string dir, std::string prefix = "checkpoint", std::size_t keep_last = 3)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), keep_last_(keep_last) {
    constexpr const char* who = "rlkernels::checkpoint_directory";
    RLK_EXPECTS(!dir_.empty(), std::invalid_argument, who, ": the directory name is empty");
    RLK_EXPECTS(keep_last_ >= 1, std::invalid_argument, who, ": keep_last must be >= 1, got ", keep_last_);
    RLK_EXPECTS(!prefix_.empty() && std::all_of(prefix_.begin(), prefix_.end(),
                                                [](char c) {
                                                  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                                         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
                                                }),
                std::invalid_argument, who, ": prefix '", prefix_, "' must be non-empty letters, digits, '_', '-' or '.'");
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    RLK_EXPECTS(!ec, error, who, ": cannot create '", dir_, "': ", ec.message());
  }

  /// The directory.
  const std::string& directory() const noexcept { return dir_; }
  /// The file name prefix.
  const std::string& prefix() const noexcept { return prefix_; }
  /// Path of the index: DIR/PREFIX.rlkc-index.
  std::string index_path() const { return (std::filesystem::path(dir_) / (prefix_ + ".rlkc-index")).string(); }
  /// Path of the checkpoint of `step` when the name is free: DIR/PREFIX-STEP.rlkc, STEP with at
  /// least 12 digits (save() returns the path it wrote).
  std::string path_for(std::uint64_t step) const { return path_of(name_for(step, 0)); }

  /// @brief The run this object saves for continues from the checkpoint at `path`, which the
  /// caller has loaded (in this directory or elsewhere). Until the first save, latest() is `path`;
  /// from then on rotation keeps that file (if it is this directory's) and never removes a file
  /// of this directory that is not among its ancestors. Nothing is written here.
  void resumed_from(const std::string& path) {
    start_ = start::resumed;
    resumed_path_ = path;
    own_ = 0;
  }
  /// @brief The run this object saves for starts from scratch: its first save descends from no
  /// file, so the files already in the directory are never removed by it. Nothing is written here.
  void start_new_run() {
    start_ = start::fresh;
    resumed_path_.clear();
    own_ = 0;
  }

  /// @brief Saves `c` as the checkpoint of `step` (atomically, see checkpoint::save), records it in
  /// the index, then removes the files of the run in progress beyond the newest keep_last (never
  /// the file the run resumed from, never a file off the run's chain). Returns the path written:
  /// path_for(step), or DIR/PREFIX-STEP-N.rlkc when that name holds a file that must be kept (a
  /// file of an abandoned run, the file the run resumed from, a file the index does not know).
  /// A crash at any point leaves the index naming a complete file as latest().
  /// @throw rlkernels::error on an I/O failure (the older checkpoints are then kept);
  ///        checkpoint_error if the index is damaged (nothing is written then)
  std::string save(const checkpoint& c, std::uint64_t step) const {
    index ix = read_index();
    // The file this state descends from, and the file the run resumed from.
    std::uint64_t parent = 0, pinned = ix.resumed;
    if (start_ == start::resumed && own_ == 0) {
      parent = pinned = seq_of(ix, resumed_path_);
    } else if (start_ == start::fresh && own_ == 0) {
      parent = pinned = 0;
    } else if (own_ != 0 && find(ix, own_)) {
      parent = own_;
      pinned = own_resumed_;
    } else if (own_ != 0) {  // our last file is gone (removed by hand): go on from the run's start
      parent = find(ix, own_resumed_) ? own_resumed_ : 0;
      pinned = parent;
    } else {
      parent = ix.head;
      const entry* h = find(ix, parent);
      if (h && step <= h->step) parent = pinned = 0;  // went back: a run of its own
      if (!h) parent = pinned = 0;
    }
    const entry* p = find(ix, parent);
    if (pinned != 0 && !find(ix, pinned)) pinned = 0;

    // The name: the run's own previous file of the same step is replaced; otherwise the plain
    // name, unless it holds a file to keep.
    std::string name = name_for(step, 0);
    const bool replaces_parent = p && p->step == step && parent != pinned;
    if (replaces_parent) {
      name = p->name;
    } else if (exists(name)) {
      for (std::uint64_t n = 1;; ++n) {
        name = name_for(step, n);
        if (!exists(name) && !find_name(ix, name)) break;
      }
    }
    const std::string path = path_of(name);
    detail::checkpoint_directory_stage(0, path);
    c.save(path);
    detail::checkpoint_directory_stage(1, path);

    const std::uint64_t seq = ix.next++;
    entry e{seq, step, parent, name};
    if (replaces_parent) {
      e.parent = p->parent;
      drop(ix, parent);
    }
    ix.files.push_back(e);
    ix.head = seq;
    ix.resumed = pinned;
    try {
      write_index(ix);
    } catch (...) {
      if (!replaces_parent) std::remove(path.c_str());  // the call changes nothing
      throw;
    }
    detail::checkpoint_directory_stage(2, path);
    own_ = seq;
    own_resumed_ = pinned;

    // Rotation along the chain: the newest keep_last, and the file the run resumed from, stay.
    std::vector<std::uint64_t> doomed;
    std::size_t kept = 0;
    for (const entry* x = find(ix, seq); x; x = find(ix, x->parent)) {
      if (kept < keep_last_) ++kept;
      else if (x->seq != pinned) doomed.push_back(x->seq);
    }
    bool removed = false;
    for (std::uint64_t d : doomed) {
      const std::string victim = path_of(find(ix, d)->name);
      std::error_code ec;
      std::filesystem::remove(victim, ec);  // best effort: the next save tries again
      if (ec && exists(find(ix, d)->name)) continue;
      drop(ix, d);
      removed = true;
      detail::checkpoint_directory_stage(3, victim);
    }
    if (removed) {
      try {
        write_index(ix);  // else the next read drops the missing files itself
      } catch (const error&) {
      }
      detail::checkpoint_directory_stage(4, path);
    }
    return path;
  }

  /// Checkpoint files of this prefix, oldest first: those the index does not know (by step), then
  /// the indexed ones in the order they were written.
  std::vector<std::string> list() const {
    const index ix = read_index();
    std::vector<std::string> out;
    for (const std::string& name : ix.unindexed) out.push_back(path_of(name));
    for (const entry& e : ix.files) out.push_back(path_of(e.name));
    return out;
  }

  /// Checkpoint files of the run in progress, oldest first: what remains of its chain (its
  /// ancestors, the file it resumed from, the files it wrote).
  std::vector<std::string> lineage() const {
    const index ix = read_index();
    std::vector<std::string> out;
    const std::uint64_t tip = run_tip(ix);
    if (tip == 0 && start_ == start::resumed && own_ == 0 && is_file(resumed_path_)) return {resumed_path_};
    for (const entry* x = find(ix, tip); x; x = find(ix, x->parent)) out.insert(out.begin(), path_of(x->name));
    return out;
  }

  /// @brief The newest checkpoint of the run in progress, or nullopt if there is none: the file
  /// this object last saved; before its first save, the file given to resumed_from() (nullopt
  /// after start_new_run()); for an object told neither, the directory's newest file (the one
  /// the last save wrote, or the file the index does not know with the largest step if the
  /// index names no file).
  /// @throw checkpoint_error if the index is damaged
  std::optional<std::string> latest() const {
    if (own_ == 0 && start_ == start::resumed) {
      if (is_file(resumed_path_)) return resumed_path_;
      return std::nullopt;
    }
    if (own_ == 0 && start_ == start::fresh) return std::nullopt;
    const index ix = read_index();
    if (const entry* x = find(ix, run_tip(ix))) return path_of(x->name);
    if (own_ == 0 && ix.files.empty() && !ix.unindexed.empty()) return path_of(ix.unindexed.back());
    return std::nullopt;
  }

private:
  enum class start { unknown, resumed, fresh };

  struct entry {
    std::uint64_t seq;     // write order, from 1
    std::uint64_t step;    // the step in the name
    std::uint64_t parent;  // seq of the file it descends from (0: none known)
    std::string name;      // file name in the directory
  };
  struct index {
    std::uint64_t head = 0;     // the last file written (seq)
    std::uint64_t resumed = 0;  // the file the run in progress resumed from (seq)
    std::uint64_t next = 1;     // the next seq
    std::vector<entry> files;   // existing files, in write order
    std::vector<std::string> unindexed;  // checkpoint files the index does not list, by step
  };

  std::string path_of(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }
  std::string name_for(std::uint64_t step, std::uint64_t n) const {
    std::string digits = std::to_string(step);
    if (digits.size() < 12) digits.insert(0, 12 - digits.size(), '0');
    return prefix_ + "-" + digits + (n ? "-" + std::to_string(n) : std::string()) + ".rlkc";
  }
  bool exists(const std::string& name) const {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::symlink_status(path_of(name), ec));
  }
  static bool is_file(const std::string& path) {
    std::error_code ec;
    return !path.empty() && std::filesystem::is_regular_file(path, ec);
  }

  /// Parses "<prefix>-<12 to 20 digits>[-<n>].rlkc": the step and n, or nullopt.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_name(const std::string& name) const {
    const std::string head = prefix_ + "-", tail = ".rlkc";
    if (name.size() < head.size() + 12 + tail.size() || name.compare(0, head.size(), head) != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      return std::nullopt;
    std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size()), version;
    const std::size_t dash = digits.find('-');
    if (dash != std::string::npos) {
      version = digits.substr(dash + 1);
      digits.resize(dash);
      if (version.empty() || version.size() > 9 || version[0] == '0' || !all_digits(version)) return std::nullopt;
    }
    if (digits.size() < 12 || digits.size() > 20 || !all_digits(digits)) return std::nullopt;
    errno = 0;
    const unsigned long long step = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) return std::nullopt;
    return std::make_pair(std::uint64_t(step), version.empty() ? 0 : std::uint64_t(std::stoull(version)));
  }
  static bool all_digits(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  }

  /// The checkpoint files of this prefix on disk (regular files), by step, then n, then name.
  std::vector<std::pair<std::pair<std::uint64_t, std::uint64_t>, std::string>> scan() const {
    std::vector<std::pair<std::pair<std::uint64_t, std::uint64_t>, std::string>> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir_, ec), end;
    if (ec) return out;
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      const std::string name = it->path().filename().string();
      const auto parsed = parse_name(name);
      if (!parsed) continue;
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      out.push_back({*parsed, name});
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  static const entry* find(const index& ix, std::uint64_t seq) {
    if (seq == 0) return nullptr;
    for (const entry& e : ix.files)
      if (e.seq == seq) return &e;
    return nullptr;
  }
  static const entry* find_name(const index& ix, const std::string& name) {
    for (const entry& e : ix.files)
      if (e.name == name) return &e;
    return nullptr;
  }
  /// Removes entry `seq`; its children descend from its parent from now on.
  static void drop(index& ix, std::uint64_t seq) {
    const entry* x = find(ix, seq);
    if (!x) return;
    const std::uint64_t up = x->parent;
    for (entry& e : ix.files)
      if (e.parent == seq) e.parent = up;
    if (ix.head == seq) ix.head = up;
    if (ix.resumed == seq) ix.resumed = 0;
    ix.files.erase(std::find_if(ix.files.begin(), ix.files.end(), [&](const entry& e) { return e.seq == seq; }));
  }
  /// The seq of the indexed file at `path` (0 if it is not one of this directory's indexed files).
  std::uint64_t seq_of(const index& ix, const std::string& path) const {
    const std::filesystem::path p(path);
    std::error_code ec;
    if (!std::filesystem::equivalent(p.has_parent_path() ? p.parent_path() : std::filesystem::path("."), dir_, ec) || ec)
      return 0;
    const entry* e = find_name(ix, p.filename().string());
    return e ? e->seq : 0;
  }
  /// The newest file of the run in progress (seq, 0 if none).
  std::uint64_t run_tip(const index& ix) const {
    if (own_ != 0) {
      if (find(ix, own_)) return own_;
      return find(ix, own_resumed_) ? own_resumed_ : 0;
    }
    if (start_ == start::resumed) return seq_of(ix, resumed_path_);
    if (start_ == start::fresh) return 0;
    return ix.head;
  }

  [[noreturn]] void damaged(std::size_t line, const std::string& why) const {
    throw checkpoint_error("rlkernels::checkpoint_directory: '" + index_path() + "': line " + std::to_string(line) +
                           ": " + why + " (the index is damaged; move it away to read the directory as one run "
                           "in the order of the steps)");
  }

  /// Reads the index and the directory: indexed files that no longer exist are dropped; without
  /// an index, the checkpoint files on disk form one run in the order of their steps.
  index read_index() const {
    index ix;
    const auto on_disk = scan();
    std::FILE* file = std::fopen(index_path().c_str(), "rb");
    if (!file) {
      if (errno != ENOENT)
        throw error("rlkernels::checkpoint_directory: cannot open '" + index_path() + "': " + detail::errno_text(errno));
      for (const auto& f : on_disk) {  // written before the index existed: one run, by step
        ix.files.push_back({ix.next, f.first.first, ix.head, f.second});
        ix.head = ix.next++;
      }
      return ix;
    }
    std::string text;
    char block[4096];
    for (std::size_t n; (n = std::fread(block, 1, sizeof block, file)) > 0;) text.append(block, n);
    const bool failed = std::ferror(file) != 0;
    std::fclose(file);
    if (failed) throw error("rlkernels::checkpoint_directory: cannot read '" + index_path() + "'");

    std::istringstream in(text);
    std::string line;
    std::size_t number = 0;
    const auto next_line = [&](const char* what) -> std::string {
      if (!std::getline(in, line)) damaged(number + 1, std::string("missing the line '") + what + "'");
      ++number;
      return line;
    };
    const auto number_after = [&](const std::string& key) -> std::uint64_t {
      const std::string l = next_line(key.c_str());
      const std::string digits = l.compare(0, key.size() + 1, key + " ") == 0 ? l.substr(key.size() + 1) : "";
      if (digits.empty() || digits.size() > 19 || !all_digits(digits)) damaged(number, "expected '" + key + " <number>'");
      return std::uint64_t(std::stoull(digits));
    };
    if (next_line("rlkernels checkpoint index 1") != "rlkernels checkpoint index 1")
      damaged(1, "expected 'rlkernels checkpoint index 1'");
    ix.head = number_after("head");
    ix.resumed = number_after("resumed");
    ix.next = number_after("next");
    if (ix.next == 0) damaged(number, "next must be >= 1");
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      std::istringstream f(line);
      std::string key, seq, step, parent, name, rest;
      f >> key >> seq >> step >> parent >> name;
      if (key != "file" || name.empty() || (f >> rest) || !all_digits(seq) || !all_digits(step) ||
          !all_digits(parent) || seq.empty() || seq.size() > 19 || step.empty() || step.size() > 20 ||
          parent.empty() || parent.size() > 19)
        damaged(number, "expected 'file <seq> <step> <parent seq> <name>'");
      const auto parsed = parse_name(name);
      entry e{std::stoull(seq), 0, std::stoull(parent), name};
      if (!parsed) damaged(number, "'" + name + "' is not a checkpoint name of the prefix '" + prefix_ + "'");
      e.step = parsed->first;
      if (step != std::to_string(e.step)) damaged(number, "the step " + step + " differs from the name's");
      if (e.seq == 0 || e.seq >= ix.next) damaged(number, "seq " + seq + " is not in [1, next)");
      if (e.parent >= e.seq) damaged(number, "parent " + parent + " is not older than the file");
      if (find(ix, e.seq) || find_name(ix, e.name)) damaged(number, "a second entry for '" + name + "' or seq " + seq);
      if (!ix.files.empty() && e.seq < ix.files.back().seq) damaged(number, "the files are not in write order");
      ix.files.push_back(e);
    }
    if (ix.head >= ix.next || ix.resumed >= ix.next) damaged(number, "head or resumed is not in [0, next)");
    for (entry& e : ix.files)
      if (e.parent != 0 && !find(ix, e.parent)) e.parent = 0;
    if (!find(ix, ix.head)) ix.head = 0;
    if (!find(ix, ix.resumed)) ix.resumed = 0;
    // Files removed by hand (or by a save interrupted after removing them) leave the index.
    std::vector<std::uint64_t> gone;
    for (const entry& e : ix.files) {
      const bool present = std::any_of(on_disk.begin(), on_disk.end(), [&](const auto& f) { return f.second == e.name; });
      if (!present) gone.push_back(e.seq);
    }
    for (std::uint64_t g : gone) drop(ix, g);
    for (const auto& f : on_disk)
      if (!find_name(ix, f.second)) ix.unindexed.push_back(f.second);
    return ix;
  }

  /// Replaces the index atomically (a temporary file, fsync'ed, renamed over it; then the
  /// directory is fsync'ed).
  void write_index(const index& ix) const {
    std::string text = "rlkernels checkpoint index 1\nhead " + std::to_string(ix.head) + "\nresumed " +
                       std::to_string(ix.resumed) + "\nnext " + std::to_string(ix.next) + "\n";
    for (const entry& e : ix.files)
      text += "file " + std::to_string(e.seq) + " " + std::to_string(e.step) + " " + std::to_string(e.parent) + " " +
              e.name + "\n";
    const std::string path = index_path();
    const auto fail = [&](const char* what, const std::string& p, int code) {
      throw error("rlkernels::checkpoint_directory: " + std::string(what) + " '" + p + "': " + detail::errno_text(code));
    };
#if defined(__unix__) || defined(__APPLE__)
    const std::string tmp = path + ".tmp." + std::to_string(long(::getpid()));
#else
    const std::string tmp = path + ".tmp";
#endif
    detail::temp_file_guard guard{tmp};
    std::FILE* file = std::fopen(tmp.c_str(), "wb");
    if (!file) fail("cannot create", tmp, errno);
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size() && std::fflush(file) == 0;
    int code = errno;
#if defined(__unix__) || defined(__APPLE__)
    if (written && ::fsync(::fileno(file)) != 0) {
      code = errno;
      std::fclose(file);
      fail("cannot fsync", tmp, code);
    }
#endif
    if (std::fclose(file) != 0 || !written) fail("cannot write", tmp, written ? errno : code);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file over", path, errno);
    guard.armed = false;
#if defined(__unix__) || defined(__APPLE__)
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
#endif
  }

  std::string dir_;
  std::string prefix_;
  std::size_t keep_last_;
  start start_ = start::unknown;
  std::string resumed_path_;                // resumed_from()'s path
  mutable std::uint64_t own_ = 0;           // the file this object last wrote (seq; 0: none yet)
  mutable std::uint64_t own_resumed_ = 0;   // the file its run resumed from (seq; 0: none)
};

}  // namespace rlkernels
