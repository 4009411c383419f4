// rlkernels/nn/serialize.hpp
// Saving and loading an MLP's parameters: a small binary file with a header that records the
// layout and scalar type, and a checksum, so a load into a network of another shape, a truncated
// file or flipped bits are refused with a clear error instead of giving a silently wrong network.
#pragma once

#include "../core/error.hpp"
#include "mlp.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlkernels {

namespace detail {
inline constexpr char mlp_file_magic[8] = {'R', 'L', 'K', 'M', 'L', 'P', '0', '1'};

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

template <class T>
std::vector<std::uint64_t> mlp_file_header(const mlp_layout& layout) {
  std::vector<std::uint64_t> h;
  h.push_back(sizeof(T));
  h.push_back(std::uint64_t(layout.hidden));
  h.push_back(std::uint64_t(layout.output));
  h.push_back(layout.sizes.size());
  for (int s : layout.sizes) h.push_back(std::uint64_t(s));
  h.push_back(layout.num_parameters());
  return h;
}

inline std::string describe_layout(const mlp_layout& layout, std::size_t scalar_bytes) {
  std::string s = "{";
  for (std::size_t i = 0; i < layout.sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(layout.sizes[i]);
  return s + "} " + activation_name(layout.hidden) + "/" + activation_name(layout.output) + " " +
         (scalar_bytes == 4 ? "float" : scalar_bytes == 8 ? "double" : std::to_string(scalar_bytes) + "-byte");
}
}  // namespace detail

/// @brief Writes the network's layout and parameters to `path` (the file is replaced).
/// @throw rlkernels::error if the file cannot be written
template <class T, class Backend>
void save_parameters(const mlp<T, Backend>& net, const std::string& path) {
  const std::vector<T> params = net.parameters_to_host();
  const std::vector<std::uint64_t> header = detail::mlp_file_header<T>(net.layout());
  const std::uint64_t header_count = header.size();
  std::uint64_t checksum = detail::fnv1a(header.data(), header.size() * sizeof(std::uint64_t));
  checksum = detail::fnv1a(params.data(), params.size() * sizeof(T), checksum);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  RLK_EXPECTS(out.good(), error, "rlkernels::save_parameters: cannot open '", path, "' for writing");
  out.write(detail::mlp_file_magic, sizeof(detail::mlp_file_magic));
  out.write(reinterpret_cast<const char*>(&header_count), sizeof(header_count));
  out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size() * sizeof(std::uint64_t)));
  out.write(reinterpret_cast<const char*>(params.data()), std::streamsize(params.size() * sizeof(T)));
  out.write(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
  out.flush();
  RLK_EXPECTS(out.good(), error, "rlkernels::save_parameters: writing '", path, "' failed");
}

/// @brief Loads parameters saved by save_parameters into `net`, which must have the same layout and
/// scalar type.
/// @throw rlkernels::error if the file cannot be read, is not an rlkernels MLP file, is truncated
///        or fails its checksum; std::invalid_argument if it holds a network of another shape or
///        type. The network is unchanged when anything is refused.
template <class T, class Backend>
void load_parameters(mlp<T, Backend>& net, const std::string& path) {
  constexpr const char* who = "rlkernels::load_parameters";
  std::ifstream in(path, std::ios::binary);
  RLK_EXPECTS(in.good(), error, who, ": cannot open '", path, "'");
  char magic[sizeof(detail::mlp_file_magic)] = {};
  in.read(magic, sizeof(magic));
  RLK_EXPECTS(in.good() && std::memcmp(magic, detail::mlp_file_magic, sizeof(magic)) == 0, error, who, ": '", path,
              "' is not an rlkernels MLP parameter file");
  std::uint64_t header_count = 0;
  in.read(reinterpret_cast<char*>(&header_count), sizeof(header_count));
  RLK_EXPECTS(in.good() && header_count >= 5 && header_count < 4096, error, who, ": '", path, "' has a corrupt header");
  std::vector<std::uint64_t> header(header_count);
  in.read(reinterpret_cast<char*>(header.data()), std::streamsize(header_count * sizeof(std::uint64_t)));
  RLK_EXPECTS(in.good(), error, who, ": '", path, "' is truncated (in the header)");
  const std::vector<std::uint64_t> want = detail::mlp_file_header<T>(net.layout());
  if (header != want) {
    mlp_layout saved;
    std::size_t bytes = std::size_t(header[0]);
    if (header.size() >= 4 && header[3] + 5 == header.size()) {
      saved.hidden = activation(header[1]);
      saved.output = activation(header[2]);
      for (std::size_t i = 0; i < header[3]; ++i) saved.sizes.push_back(int(header[4 + i]));
    }
    throw std::invalid_argument(detail::concat(who, ": '", path, "' holds a network ", detail::describe_layout(saved, bytes),
                                               "; this network is ", detail::describe_layout(net.layout(), sizeof(T))));
  }
  std::vector<T> params(net.num_parameters());
  in.read(reinterpret_cast<char*>(params.data()), std::streamsize(params.size() * sizeof(T)));
  std::uint64_t checksum = 0;
  in.read(reinterpret_cast<char*>(&checksum), sizeof(checksum));
  RLK_EXPECTS(in.good(), error, who, ": '", path, "' is truncated");
  in.peek();
  RLK_EXPECTS(in.eof(), error, who, ": '", path, "' has trailing bytes");
  std::uint64_t expect = detail::fnv1a(header.data(), header.size() * sizeof(std::uint64_t));
  expect = detail::fnv1a(params.data(), params.size() * sizeof(T), expect);
  RLK_EXPECTS(checksum == expect, error, who, ": '", path, "' fails its checksum (the file is corrupt)");
  net.set_parameters(params);
}

}  // namespace rlkernels
