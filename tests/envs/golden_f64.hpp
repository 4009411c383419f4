// Reader for the binary golden files under tests/reference/ (*.f64): two doubles (rows, cols),
// then the rows, row-major, as the MuJoCo and l2f recording scripts write them.
#pragma once

#include "../reference_dir.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

namespace rlk_test {

/// A golden f64 table, read whole (REQUIREs that the file exists and is complete).
struct f64_table {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;
  explicit f64_table(const std::string& file) {
    const std::string path = reference_dir() + "/" + file;
    INFO("reading " << path);
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    double shape[2];
    in.read(reinterpret_cast<char*>(shape), sizeof(shape));
    REQUIRE(in.good());
    rows = std::size_t(shape[0]);
    cols = std::size_t(shape[1]);
    v.resize(rows * cols);
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(double)));
    REQUIRE(in.good());
    REQUIRE(rows > 0);
  }
  const double* row(std::size_t i) const { return v.data() + i * cols; }
};

}  // namespace rlk_test
