// Where the tests find their golden data (tests/reference/): the environment variable
// RLK_REFERENCE_DIR when it is set and not empty (a bundle built by `scripts/device_check.sh
// prepare` runs on another machine, where the repository lies elsewhere), else the directory
// compiled in by tests/CMakeLists.txt (the macro RLK_REFERENCE_DIR).
#pragma once

#include <cstdlib>
#include <string>

namespace rlk_test {

/// The reference directory, without a trailing slash.
inline std::string reference_dir() {
  const char* dir = std::getenv("RLK_REFERENCE_DIR");
  return dir && *dir ? std::string(dir) : std::string(RLK_REFERENCE_DIR);
}

}  // namespace rlk_test
