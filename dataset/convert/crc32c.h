// CRC-32C (Castagnoli), the checksum of the shard files: the SSE4.2 instruction when the CPU
// has it, else a slicing-by-8 table. Both give the same value (crc32c("123456789") is
// 0xE3069283).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mrcnn::dataset {

// The CRC of `size` bytes; pass a previous result as `crc` to continue over more bytes.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The table path alone (tests compare it with the hardware one).
uint32_t crc32cPortable(const void* data, size_t size, uint32_t crc = 0);

}  // namespace mrcnn::dataset
