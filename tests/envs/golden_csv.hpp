// Reader for the golden CSV files under tests/reference/: a header line of column names, then rows
// of numbers (decimal integers or hexadecimal floats, which strtod reads exactly).
#pragma once

#include "../reference_dir.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rlk_test {

/// A golden table: column names and rows of doubles.
class golden_table {
public:
  explicit golden_table(const std::string& file) {
    const std::string path = rlk_test::reference_dir() + "/" + file;
    std::ifstream in(path);
    INFO("reading " << path);
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);
    names_ = split(line);
    for (std::size_t k = 0; k < names_.size(); ++k) index_[names_[k]] = k;
    while (std::getline(in, line)) {
      const std::vector<std::string> cells = split(line);
      REQUIRE(cells.size() == names_.size());
      std::vector<double> row(cells.size());
      for (std::size_t k = 0; k < cells.size(); ++k) {
        char* end = nullptr;
        row[k] = std::strtod(cells[k].c_str(), &end);
        REQUIRE(end != cells[k].c_str());
      }
      rows_.push_back(std::move(row));
    }
    REQUIRE(!rows_.empty());
  }

  std::size_t size() const { return rows_.size(); }
  const std::vector<double>& row(std::size_t i) const { return rows_[i]; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  /// Column index of `name` (the test fails if there is none).
  std::size_t column(const std::string& name) const {
    const auto it = index_.find(name);
    INFO("column " << name);
    REQUIRE(it != index_.end());
    return it->second;
  }
  double at(std::size_t i, const std::string& name) const { return rows_[i][column(name)]; }

private:
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) out.push_back(cell);
    return out;
  }
  std::vector<std::string> names_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::vector<double>> rows_;
};

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline std::uint64_t double_bits(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

}  // namespace rlk_test
