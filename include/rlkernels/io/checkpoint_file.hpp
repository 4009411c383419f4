// rlkernels/io/checkpoint_file.hpp
// The checkpoint class: named fields bound to memory (host variables, or arrays in any backend's
// memory), written atomically to one checksummed file (io/checkpoint_format.hpp) and read back
// all-or-nothing.
#pragma once

#include "checkpoint_format.hpp"

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

/// @brief A set of named fields bound to memory: saved from it, loaded into it.
///
/// Names are unique ('/'-separated paths by convention, e.g. "actor/parameters"). A field is an
/// array in any backend's memory (`bind`), a host variable (`bind_value`) or a constant that must
/// match on load (`bind_constant`). The checkpoint keeps pointers to the bound memory: it must
/// outlive neither the memory nor a move of its owner (bind afresh for each save or load, as the
/// trainers do).
///
/// `load` validates the whole file (format, version, byte order, size, checksum, every bound name
/// present with the bound type, element size and count, no unexpected section, constants equal,
/// value checks) before it writes any bound memory: a refused file changes nothing.
class checkpoint {
public:
  /// An empty checkpoint.
  checkpoint() = default;

  /// @brief Binds `v.size()` elements in the memory of `backend` (host or CUDA device).
  /// @tparam T arithmetic (stored with its type code: u8, i8, u16, i16, u32, i32, u64, i64, f32,
  ///         f64, bool) or any other trivially copyable type (stored as "pod" with sizeof(T))
  /// @throw std::logic_error if the name is already bound; std::invalid_argument on an empty or
  ///        too long name, or a null view with elements
  template <class T, class Backend>
  void bind(std::string name, const Backend& backend, view<T> v) {
    static_assert(!std::is_const_v<T>, "rlkernels::checkpoint::bind: the view must be writable (load writes it)");
    static_assert(is_backend_v<Backend>, "rlkernels::checkpoint::bind: Backend must be a rlkernels backend");
    RLK_EXPECTS(v.data() != nullptr || v.size() == 0, std::invalid_argument, "rlkernels::checkpoint::bind: '", name,
                "' is a null view of ", v.size(), " elements");
    RLK_EXPECTS(v.size() <= std::size_t(-1) / sizeof(T), std::invalid_argument, "rlkernels::checkpoint::bind: '", name,
                "' is too large");
    field f;
    f.kind = field_kind::array;
    f.type = std::uint32_t(detail::checkpoint_type_of<T>());
    f.element_size = std::uint32_t(sizeof(T));
    f.count = v.size();
    f.data = v.data();
    f.to_host = [backend](void* dst, const void* src, std::size_t bytes) {
      detail::memory_ops<Backend>::to_host(backend, dst, src, bytes);
    };
    f.from_host = [backend](void* dst, const void* src, std::size_t bytes) {
      detail::memory_ops<Backend>::from_host(backend, dst, src, bytes);
    };
    add(std::move(name), std::move(f));
  }

  /// @brief Binds a host variable (arithmetic or trivially copyable), e.g. a step counter.
  /// @throw as bind()
  template <class T>
  void bind_value(std::string name, T& x) {
    bind_value(std::move(name), x, [](const T&) { return std::string(); });
  }

  /// @brief Binds a host variable whose loaded value `check` accepts: `check(value)` returns an
  /// empty string for a good value, else the reason (e.g. "head row 9 >= capacity 8"), and load
  /// then throws checkpoint_error before changing anything. For values that index memory.
  template <class T, class Check>
  void bind_value(std::string name, T& x, Check check) {
    static_assert(!std::is_const_v<T>, "rlkernels::checkpoint::bind_value: the variable must be writable");
    field f;
    f.kind = field_kind::value;
    f.type = std::uint32_t(detail::checkpoint_type_of<T>());
    f.element_size = std::uint32_t(sizeof(T));
    f.count = 1;
    f.data = &x;
    f.check = [check](const void* bytes) {
      alignas(T) unsigned char storage[sizeof(T)];  // T need not be default-constructible
      std::memcpy(storage, bytes, sizeof(T));
      return std::string(check(*std::launder(reinterpret_cast<const T*>(storage))));
    };
    add(std::move(name), std::move(f));
  }

  /// @brief Binds a constant that must be equal on load, e.g. the hyperparameters as
  /// "key=value\n" lines; on a mismatch the error names the first differing key with both values.
  /// @throw as bind()
  void bind_constant(std::string name, std::string value) {
    field f;
    f.kind = field_kind::constant;
    f.type = std::uint32_t(detail::checkpoint_type::text);
    f.element_size = 1;
    f.count = value.size();
    f.constant = std::move(value);
    add(std::move(name), std::move(f));
  }

  /// Number of bound fields.
  std::size_t size() const noexcept { return fields_.size(); }
  /// True if `name` is bound.
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  /// Size in bytes of the file save() writes.
  std::size_t file_size() const {
    std::size_t bytes = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    for (const field& f : fields_) bytes += 4 + f.name.size() + 16 + f.count * f.element_size;
    return bytes;
  }

  /// @brief The bytes save() would write (the same format, checksum included), in memory: each
  /// rank's section of a data-parallel checkpoint in the single-file layout earlier versions
  /// wrote (mpi_test assembles one). load_from_memory() reads them back.
  std::vector<std::uint8_t> save_to_memory() const {
    RLK_EXPECTS(detail::host_is_little_endian(), error,
                "rlkernels::checkpoint::save_to_memory: checkpoints are little-endian; this host is big-endian");
    std::vector<std::uint8_t> out;
    out.reserve(std::size_t(file_size()));
    std::uint64_t crc = 0;
    const auto write = [&](const void* data, std::size_t bytes) {
      if (bytes == 0) return;
      crc = detail::crc64(data, bytes, crc);
      const auto* p = static_cast<const std::uint8_t*>(data);
      out.insert(out.end(), p, p + bytes);
    };
    emit(write, crc);
    return out;
  }

  /// @brief Writes every bound field to `path` atomically: to "<path>.tmp.<pid>", flushed and
  /// fsync'ed, renamed over `path`, then the directory is fsync'ed. A crash at any point leaves
  /// either the old file or the new one; on failure the temporary file is removed and `path` is
  /// untouched. Device arrays are copied to the host in chunks (CUDA: waits for the stream).
  /// @throw rlkernels::error naming the path and the system's reason on an I/O failure
  void save(const std::string& path) const {
    RLK_EXPECTS(detail::host_is_little_endian(), error, "rlkernels::checkpoint::save: '", path,
                "': checkpoints are little-endian; this host is big-endian");
    const std::string tmp = path + ".tmp." + std::to_string(process_id());
    detail::temp_file_guard guard{tmp};
    std::FILE* file = std::fopen(tmp.c_str(), "wb");
    if (!file) fail_io("cannot create", tmp);
    std::uint64_t crc = 0;
    bool ok = true;
    int write_error = 0;
    const auto write = [&](const void* data, std::size_t bytes) {
      if (!ok || bytes == 0) return;
      crc = detail::crc64(data, bytes, crc);
      ok = std::fwrite(data, 1, bytes, file) == bytes;
      if (!ok) write_error = errno;
    };
    try {
      emit(write, crc);
    } catch (...) {
      std::fclose(file);
      throw;
    }
    if (!ok || std::fflush(file) != 0) {
      const int code = ok ? errno : write_error;
      std::fclose(file);
      fail_io("cannot write", tmp, code);
    }
#if defined(__unix__) || defined(__APPLE__)
    if (::fsync(::fileno(file)) != 0) {
      const int code = errno;
      std::fclose(file);
      fail_io("cannot fsync", tmp, code);
    }
#endif
    if (std::fclose(file) != 0) fail_io("cannot close", tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail_io("cannot rename the temporary file over", path);
    guard.armed = false;
    sync_directory_of(path);
  }

  /// @brief The bytes of the file at `path` (what load() validates), for a process that reads a
  /// checkpoint once and hands it to others (data-parallel ranks).
  /// @throw checkpoint_error if the file cannot be read
  static std::vector<std::uint8_t> read_bytes(const std::string& path) { return read_file(path); }

  /// @brief Reads `path` and loads it (see load_from_memory()).
  /// @throw checkpoint_error if the file cannot be read or is refused; nothing bound has changed then
  void load(const std::string& path) {
    const std::vector<std::uint8_t> bytes = read_file(path);
    load_from_memory(bytes.data(), bytes.size(), path);
  }

  /// @brief Validates a checkpoint held in memory completely (magic, version, byte order, size,
  /// checksum, structure, every bound name present with the bound type, element size and count, no
  /// unexpected section, constants equal, value checks), then copies every field into its memory.
  /// @param data the file's bytes
  /// @param size number of bytes at `data`
  /// @param source names the data in messages (the path for load())
  /// @throw checkpoint_error naming `source` and the reason; nothing bound has changed then
  void load_from_memory(const std::uint8_t* data, std::size_t size, const std::string& source = "<memory>") {
    const std::vector<const std::uint8_t*> payloads = validate(data, size, source);
    // Everything is valid: copy.
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      const std::size_t bytes = f.count * f.element_size;
      if (bytes == 0 || f.kind == field_kind::constant) continue;
      if (f.kind == field_kind::value) std::memcpy(f.data, payloads[i], bytes);
      else f.from_host(f.data, payloads[i], bytes);
    }
  }

  /// @brief Every check load_from_memory() makes, without writing any bound memory: what a
  /// data-parallel load runs on every rank before any rank loads (all or nothing).
  /// @throw checkpoint_error as load_from_memory() would
  void check_from_memory(const std::uint8_t* data, std::size_t size, const std::string& source = "<memory>") const {
    (void)validate(data, size, source);
  }

  /// @brief A checkpoint held in memory split in two: the sections `keep(name)` accepts as a
  /// checkpoint of their own (the same format, its own checksum), and the payloads of the others,
  /// which must be uint8 sections (each, in a data-parallel checkpoint, one rank's checkpoint).
  struct split_sections {
    std::vector<std::uint8_t> kept;                              ///< a checkpoint of the kept sections
    std::map<std::string, view<const std::uint8_t>> payloads;  ///< the other sections' bytes, in `data`
  };

  /// @brief Splits a checkpoint held in memory after checking it as load_from_memory() checks a
  /// file (magic, version, byte order, size, checksum, structure; not against bindings). The
  /// payload views point into `data`. For a data-parallel load: rank 0 keeps the shared state and
  /// hands each rank its section.
  /// @throw checkpoint_error naming `source`: a refused file, or a section not kept that is not uint8
  template <class Keep>
  static split_sections split_from_memory(const std::uint8_t* data, std::size_t size, Keep&& keep,
                                          const std::string& source = "<memory>") {
    const std::map<std::string, section> sections = parse(data, size, source);
    std::vector<std::pair<std::size_t, const section*>> kept;  // by offset: the file's order
    split_sections out;
    for (const auto& named : sections) {
      const section& s = named.second;
      if (keep(named.first)) {
        kept.emplace_back(s.name_offset, &s);
        continue;
      }
      if (s.type != std::uint32_t(detail::checkpoint_type::u8))
        reject(source, "section '" + named.first + "' holds " + detail::checkpoint_type_name(s.type) +
                           " elements; a rank's section is uint8 bytes");
      out.payloads.emplace(named.first, view<const std::uint8_t>(data + s.payload_offset, std::size_t(s.count)));
    }
    std::sort(kept.begin(), kept.end());
    std::size_t bytes = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    for (const auto& k : kept) bytes += (k.second->payload_offset + k.second->count * k.second->element_size) -
                                        (k.second->name_offset - 4);
    std::vector<std::uint8_t>& image = out.kept;
    image.reserve(bytes);
    image.insert(image.end(), data, data + 16);  // magic, version, byte order
    detail::put_le<std::uint64_t>(image, bytes);
    detail::put_le<std::uint32_t>(image, std::uint32_t(kept.size()));
    detail::put_le<std::uint32_t>(image, 0);
    for (const auto& k : kept)  // a section's bytes, name length to payload end, as they are
      image.insert(image.end(), data + k.second->name_offset - 4,
                   data + k.second->payload_offset + k.second->count * k.second->element_size);
    detail::put_le<std::uint64_t>(image, detail::crc64(image.data(), image.size()));
    return out;
  }

private:
  /// Emits the whole file (header, fields, checksum) through `write(data, bytes)`, which adds
  /// the bytes to its running CRC-64 `crc` as it writes.
  template <class Write>
  void emit(Write&& write, const std::uint64_t& crc) const {
    std::vector<std::uint8_t> header;
    header.insert(header.end(), std::begin(detail::checkpoint_magic), std::end(detail::checkpoint_magic));
    detail::put_le<std::uint32_t>(header, detail::checkpoint_version);
    std::uint8_t order[4];  // native order: a big-endian writer would mark its file as such
    std::memcpy(order, &detail::checkpoint_byte_order, 4);
    header.insert(header.end(), order, order + 4);
    detail::put_le<std::uint64_t>(header, file_size());
    detail::put_le<std::uint32_t>(header, std::uint32_t(fields_.size()));
    detail::put_le<std::uint32_t>(header, 0);
    write(header.data(), header.size());
    std::vector<std::uint8_t> chunk;
    for (const field& f : fields_) {
      std::vector<std::uint8_t> head;
      detail::put_le<std::uint32_t>(head, std::uint32_t(f.name.size()));
      head.insert(head.end(), f.name.begin(), f.name.end());
      detail::put_le<std::uint32_t>(head, f.type);
      detail::put_le<std::uint32_t>(head, f.element_size);
      detail::put_le<std::uint64_t>(head, f.count);
      write(head.data(), head.size());
      const std::size_t bytes = f.count * f.element_size;
      if (f.kind == field_kind::constant) {
        write(f.constant.data(), bytes);
      } else if (f.kind == field_kind::value) {
        write(f.data, bytes);
      } else {
        // Through a bounded host buffer: no second copy of a large (device) array.
        constexpr std::size_t max_chunk = std::size_t(1) << 24;
        for (std::size_t done = 0; done < bytes;) {
          const std::size_t n = std::min(max_chunk, bytes - done);
          chunk.resize(n);
          f.to_host(chunk.data(), static_cast<const unsigned char*>(f.data) + done, n);
          write(chunk.data(), n);
          done += n;
        }
      }
    }
    std::vector<std::uint8_t> tail;
    detail::put_le<std::uint64_t>(tail, crc);
    write(tail.data(), tail.size());
  }


  enum class field_kind { array, value, constant };
  struct field {
    std::string name;
    field_kind kind = field_kind::array;
    std::uint32_t type = 0;
    std::uint32_t element_size = 0;
    std::size_t count = 0;
    void* data = nullptr;
    std::string constant;
    std::function<void(void*, const void*, std::size_t)> to_host, from_host;
    std::function<std::string(const void*)> check;
  };
  /// A section of a parsed file: offsets into the data.
  struct section {
    std::size_t name_offset, name_size;
    std::uint32_t type, element_size;
    std::uint64_t count;
    std::size_t payload_offset;
  };

  void add(std::string name, field f) {
    RLK_EXPECTS(!name.empty() && name.size() <= detail::checkpoint_max_name, std::invalid_argument,
                "rlkernels::checkpoint: a field name must have 1 to ", detail::checkpoint_max_name, " bytes, got ",
                name.size());
    RLK_EXPECTS(name.find('\0') == std::string::npos, std::invalid_argument, "rlkernels::checkpoint: field name '",
                name, "' contains a NUL byte");
    RLK_EXPECTS(index_.count(name) == 0, std::logic_error, "rlkernels::checkpoint: '", name, "' is bound twice");
    RLK_EXPECTS(fields_.size() < detail::checkpoint_max_sections, std::invalid_argument,
                "rlkernels::checkpoint: more than ", detail::checkpoint_max_sections, " fields");
    index_[name] = fields_.size();
    f.name = std::move(name);
    fields_.push_back(std::move(f));
  }

  /// load_from_memory()'s checks; returns each field's payload in `data`.
  std::vector<const std::uint8_t*> validate(const std::uint8_t* data, std::size_t size,
                                            const std::string& source) const {
    const std::map<std::string, section> sections = parse(data, size, source);
    // Constants first: a different configuration explains the other differences best.
    const auto find = [&](const std::string& name) -> const section* {
      const auto it = sections.find(name);
      return it == sections.end() ? nullptr : &it->second;
    };
    for (const field& f : fields_) {
      if (f.kind != field_kind::constant) continue;
      const section* s = find(f.name);
      if (!s) reject(source, "missing section '" + f.name + "'");
      if (s->type != f.type)
        reject(source, "section '" + f.name + "' holds " + detail::checkpoint_type_name(s->type) +
                           " elements; this run binds a text constant");
      const std::string stored(reinterpret_cast<const char*>(data + s->payload_offset), s->count);
      if (stored != f.constant)
        reject(source, "constant '" + f.name + "' differs: " + detail::first_difference(stored, f.constant));
    }
    std::vector<const section*> matched(fields_.size(), nullptr);
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      const section* s = find(f.name);
      if (!s) reject(source, "missing section '" + f.name + "'");
      if (f.kind != field_kind::constant) check_shape(*s, f, source);  // constants: compared above
      matched[i] = s;
    }
    if (sections.size() != fields_.size()) {
      for (const auto& named : sections)
        if (!contains(named.first)) reject(source, "unexpected section '" + named.first + "' (this run does not bind it)");
    }
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const field& f = fields_[i];
      if (f.kind != field_kind::value || !f.check) continue;
      const std::string why = f.check(data + matched[i]->payload_offset);
      if (!why.empty()) reject(source, "section '" + f.name + "' holds a bad value: " + why);
    }
    std::vector<const std::uint8_t*> payloads(fields_.size(), nullptr);
    for (std::size_t i = 0; i < fields_.size(); ++i) payloads[i] = data + matched[i]->payload_offset;
    return payloads;
  }

  [[noreturn]] static void reject(const std::string& source, const std::string& why) {
    throw checkpoint_error("rlkernels::checkpoint::load: '" + source + "': " + why);
  }
  [[noreturn]] static void fail_io(const char* what, const std::string& path, int code = errno) {
    throw error("rlkernels::checkpoint::save: " + std::string(what) + " '" + path + "': " + detail::errno_text(code));
  }

  static long process_id() {
#if defined(__unix__) || defined(__APPLE__)
    return long(::getpid());
#else
    return 0;
#endif
  }

  static void sync_directory_of(const std::string& path) {
#if defined(__unix__) || defined(__APPLE__)
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail_io("cannot open the directory of", path);
    const int status = ::fsync(fd);
    const int code = errno;
    ::close(fd);
    // Some file systems cannot fsync a directory (EINVAL); the rename itself was done.
    if (status != 0 && code != EINVAL && code != EROFS) fail_io("cannot fsync the directory of", path, code);
#else
    (void)path;
#endif
  }

  static std::vector<std::uint8_t> read_file(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) reject(path, "cannot open: " + detail::errno_text(errno));
    std::vector<std::uint8_t> bytes;
    std::uint8_t block[1 << 16];
    for (;;) {
      const std::size_t n = std::fread(block, 1, sizeof(block), file);
      bytes.insert(bytes.end(), block, block + n);
      if (n < sizeof(block)) break;
    }
    const bool failed = std::ferror(file) != 0;
    const int code = errno;
    std::fclose(file);
    if (failed) reject(path, "cannot read: " + detail::errno_text(code));
    return bytes;
  }

  void check_shape(const section& s, const field& f, const std::string& source) const {
    if (s.type != f.type || s.element_size != f.element_size || s.count != f.count) {
      reject(source, "section '" + f.name + "' holds " + std::to_string(s.count) + " " +
                         detail::checkpoint_type_name(s.type) + " elements of " + std::to_string(s.element_size) +
                         " bytes; this run binds " + std::to_string(f.count) + " " +
                         detail::checkpoint_type_name(f.type) + " elements of " + std::to_string(f.element_size) +
                         " bytes");
    }
  }

  /// Checks the header, the size, the checksum and the structure; returns the sections.
  static std::map<std::string, section> parse(const std::uint8_t* data, std::size_t size, const std::string& source) {
    if (size != 0 && data == nullptr) reject(source, "null data");
    constexpr std::size_t magic_bytes = sizeof(detail::checkpoint_magic);
    const std::size_t probe = std::min(size, magic_bytes);
    if (std::memcmp(data ? data : reinterpret_cast<const std::uint8_t*>(""), detail::checkpoint_magic, probe) != 0)
      reject(source, "not a checkpoint (bad magic)");
    constexpr std::size_t minimum = detail::checkpoint_header_bytes + detail::checkpoint_checksum_bytes;
    if (size < minimum)
      reject(source, "truncated: " + std::to_string(size) + " bytes, a checkpoint has at least " +
                         std::to_string(minimum));
    const std::uint32_t order = detail::get_le<std::uint32_t>(data + 12);
    if (order == 0x04030201u)
      reject(source, "big-endian checkpoint (byte-order marker 01 02 03 04); this build reads little-endian files");
    if (order != detail::checkpoint_byte_order) reject(source, "bad byte-order marker (the header is corrupt)");
    if (!detail::host_is_little_endian()) reject(source, "this host is big-endian; checkpoints are little-endian");
    const std::uint32_t version = detail::get_le<std::uint32_t>(data + 8);
    if (version != detail::checkpoint_version)
      reject(source, "version " + std::to_string(version) + ", this build reads version " +
                         std::to_string(detail::checkpoint_version));
    const std::uint64_t declared = detail::get_le<std::uint64_t>(data + 16);
    if (declared > size)
      reject(source, "truncated: " + std::to_string(size) + " of " + std::to_string(declared) + " bytes");
    if (declared < size)
      reject(source, "size mismatch: " + std::to_string(size) + " bytes, the header records " +
                         std::to_string(declared) + " (trailing data or a corrupt header)");
    const std::size_t body = size - detail::checkpoint_checksum_bytes;
    if (detail::crc64(data, body) != detail::get_le<std::uint64_t>(data + body))
      reject(source, "checksum mismatch (the file is corrupt)");
    // The checksum matched: what follows only fails for files written by something else.
    const std::uint32_t count = detail::get_le<std::uint32_t>(data + 24);
    if (count > detail::checkpoint_max_sections)
      reject(source, "corrupt: " + std::to_string(count) + " sections, at most " +
                         std::to_string(detail::checkpoint_max_sections));
    if (detail::get_le<std::uint32_t>(data + 28) != 0) reject(source, "corrupt: reserved header field is not 0");
    std::map<std::string, section> sections;
    std::size_t at = detail::checkpoint_header_bytes;
    std::uint32_t index = 0;
    const auto need = [&](std::size_t bytes, const char* what) {
      if (bytes > body - at)
        reject(source, "corrupt: section " + std::to_string(index) + " (" + what + ") runs past the end");
    };
    for (std::uint32_t i = 0; i < count; ++i) {
      index = i;
      section s{};
      need(4, "name length");
      const std::uint32_t name_size = detail::get_le<std::uint32_t>(data + at);
      at += 4;
      if (name_size == 0 || name_size > detail::checkpoint_max_name)
        reject(source, "corrupt: section " + std::to_string(i) + " has a name of " + std::to_string(name_size) +
                           " bytes (1 to " + std::to_string(detail::checkpoint_max_name) + " allowed)");
      need(name_size, "name");
      s.name_offset = at;
      s.name_size = name_size;
      if (std::memchr(data + at, 0, name_size) != nullptr)
        reject(source, "corrupt: section " + std::to_string(i) + " has a NUL byte in its name");
      at += name_size;
      need(16, "type, element size and count");
      s.type = detail::get_le<std::uint32_t>(data + at);
      s.element_size = detail::get_le<std::uint32_t>(data + at + 4);
      s.count = detail::get_le<std::uint64_t>(data + at + 8);
      at += 16;
      const std::string name(reinterpret_cast<const char*>(data + s.name_offset), s.name_size);
      const std::uint32_t implied = detail::checkpoint_type_size(s.type);
      const bool known = s.type >= 1 && s.type <= 13;
      if (!known) reject(source, "corrupt: section '" + name + "' has unknown type code " + std::to_string(s.type));
      if (implied != 0 ? s.element_size != implied
                       : (s.element_size == 0 || s.element_size > detail::checkpoint_max_element))
        reject(source, "corrupt: section '" + name + "' of type " + detail::checkpoint_type_name(s.type) +
                           " has elements of " + std::to_string(s.element_size) + " bytes");
      // count * element_size <= remaining, without overflow.
      if (s.count > (body - at) / s.element_size)
        reject(source, "corrupt: section '" + name + "' has " + std::to_string(s.count) + " elements of " +
                           std::to_string(s.element_size) + " bytes, more than the " + std::to_string(body - at) +
                           " bytes left");
      s.payload_offset = at;
      at += std::size_t(s.count) * s.element_size;
      if (s.type == std::uint32_t(detail::checkpoint_type::boolean)) {
        for (std::size_t k = 0; k < s.count; ++k)
          if (data[s.payload_offset + k] > 1)
            reject(source, "corrupt: section '" + name + "' holds a bool that is neither 0 nor 1");
      }
      if (!sections.emplace(name, s).second) reject(source, "corrupt: section '" + name + "' appears twice");
    }
    if (at != body)
      reject(source, "corrupt: " + std::to_string(body - at) + " bytes after the last section");
    return sections;
  }

  std::vector<field> fields_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace rlkernels
