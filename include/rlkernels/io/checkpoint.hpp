// rlkernels/io/checkpoint.hpp
// Checkpoints: named fields bound to memory (host variables, or arrays in any backend's memory)
// written atomically to one checksummed file and read back all-or-nothing, and a directory of
// rotating checkpoints. Components expose their state through a duck-typed member template,
// `bind_checkpoint(checkpoint&, prefix)`, so their headers need not include this one.
//
// File format, version 1 (every integer little-endian, no padding; docs/checkpoints.md):
//
//   offset  size  field
//   0       8     magic "RLKCKPT\x1a"
//   8       4     u32 format version (1)
//   12      4     u32 byte-order marker 0x01020304 (bytes 04 03 02 01; a big-endian writer
//                 would give 01 02 03 04, and such files are refused)
//   16      8     u64 file size in bytes, checksum included
//   24      4     u32 section count S
//   28      4     u32 reserved, 0
//   32      ...   S sections, each:
//                   u32 name length L (1..1024), L bytes of name (no NUL),
//                   u32 type code (detail::checkpoint_type), u32 element size in bytes,
//                   u64 element count C, then C * element size bytes of payload
//   size-8  8     u64 CRC-64/XZ (ECMA-182 polynomial, reflected, as xz and Go's crc64.ECMA)
//                 of every byte before it
//
// The parts: checkpoint_format.hpp (the format's constants, CRC-64, checkpoint_error),
// checkpoint_file.hpp (the checkpoint class) and checkpoint_directory.hpp (rotating files).
#pragma once

#include "checkpoint_directory.hpp"
#include "checkpoint_file.hpp"
#include "checkpoint_format.hpp"
