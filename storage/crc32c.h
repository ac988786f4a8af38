// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum on every
// slice log record now and on every page later (ARCHITECTURE.md, Storage).
//
// Two implementations compute the same function:
//  - ExtendPortable: slice-by-8 tables, any CPU;
//  - ExtendHardware: the SSE4.2 `crc32` instruction, three independent streams
//    interleaved over long buffers to hide the instruction's latency, joined
//    with precomputed shift-by-zeros tables.
// Extend()/Value() use the hardware one when the CPU has SSE4.2 and the
// portable one otherwise; the choice is made once, on first use, and never
// changes. Tests check the two against each other (storage/crc32c_test.cc);
// bench/micro/crc32c_bench.cc compares them with zlib's crc32.
//
// Conventions: Value(data, n) == Extend(0, data, n), and
// Extend(Value(a), b) == Value(a + b) (the usual pre/post inversion is inside).
//
// Thread-safety: pure functions over immutable tables; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shale::storage::crc32c {

// Returns the CRC32C of the concatenation of the bytes `crc` covers and
// `data[0, n)`. `crc` is 0 for an empty prefix.
uint32_t Extend(uint32_t crc, const void* data, size_t n);

// The CRC32C of `data[0, n)`.
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// Both implementations, for tests and benchmarks. ExtendHardware falls back
// to the portable code when HardwareAvailable() is false, so it is always
// safe to call.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
bool HardwareAvailable();

// "sse4.2" or "slice-by-8": the implementation Extend() uses.
const char* ImplementationName();

}  // namespace shale::storage::crc32c
