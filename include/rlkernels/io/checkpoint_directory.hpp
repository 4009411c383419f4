// rlkernels/io/checkpoint_directory.hpp
// A directory of rotating checkpoint files (io/checkpoint_file.hpp): save with the step in the
// name, keep the newest few, find the latest.
#pragma once

#include "checkpoint_file.hpp"

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace rlkernels {

/// @brief Rotating checkpoints in a directory: `dir/<prefix>-<step, at least 12 digits>.rlkc`,
/// keeping the newest `keep_last`. Other files in the directory (and temporary files of an
/// interrupted save) are ignored.
class checkpoint_directory {
public:
  /// @brief Creates `dir` (and its parents) if needed.
  /// @param dir the directory of the checkpoints
  /// @param prefix file name prefix: letters, digits, '_', '-' and '.' only
  /// @param keep_last newest files kept by save(), >= 1
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
  /// Path of the checkpoint of `step`: DIR/PREFIX-STEP.rlkc, STEP with at least 12 digits.
  std::string path_for(std::uint64_t step) const {
    std::string digits = std::to_string(step);
    if (digits.size() < 12) digits.insert(0, 12 - digits.size(), '0');
    return (std::filesystem::path(dir_) / (prefix_ + "-" + digits + ".rlkc")).string();
  }

  /// @brief Saves `c` as the checkpoint of `step` (atomically, see checkpoint::save), then removes
  /// the oldest checkpoints beyond keep_last. Returns the path written.
  /// @throw rlkernels::error on an I/O failure (the older checkpoints are then kept)
  std::string save(const checkpoint& c, std::uint64_t step) const {
    const std::string path = path_for(step);
    c.save(path);
    const std::vector<entry> all = entries();
    for (std::size_t i = 0; i + keep_last_ < all.size(); ++i) {
      std::error_code ec;
      std::filesystem::remove(all[i].path, ec);  // best effort: a leftover old file is harmless
    }
    return path;
  }

  /// Checkpoint files of this prefix, oldest (smallest step) first.
  std::vector<std::string> list() const {
    std::vector<std::string> out;
    for (const entry& e : entries()) out.push_back(e.path);
    return out;
  }

  /// The newest checkpoint, or nullopt if there is none.
  std::optional<std::string> latest() const {
    const std::vector<entry> all = entries();
    if (all.empty()) return std::nullopt;
    return all.back().path;
  }

private:
  struct entry {
    std::uint64_t step;
    std::string path;
  };

  std::vector<entry> entries() const {
    std::vector<entry> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir_, ec), end;
    if (ec) return out;
    const std::string head = prefix_ + "-", tail = ".rlkc";
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      const std::string name = it->path().filename().string();
      if (name.size() < head.size() + 12 + tail.size() || name.compare(0, head.size(), head) != 0 ||
          name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
        continue;
      const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
      if (digits.size() > 20 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      errno = 0;
      const unsigned long long step = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) continue;
      out.push_back({std::uint64_t(step), it->path().string()});
    }
    std::sort(out.begin(), out.end(), [](const entry& a, const entry& b) {
      return a.step != b.step ? a.step < b.step : a.path < b.path;
    });
    return out;
  }

  std::string dir_;
  std::string prefix_;
  std::size_t keep_last_;
};

}  // namespace rlkernels
