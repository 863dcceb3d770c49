//go:build amd64 && !purego

package wire

// The ICRC by carry-less multiplication (icrc_amd64.s), for the masked
// headers of a packet and up to 128 bytes in all: the whole of a control
// packet. hash/crc32 takes ~15 ns for the 80 bytes of a
// Long-haul CNP (its 64-byte main loop does not apply, so each 16-byte block
// waits on the previous one, and it needs the masked copy); this takes ~5.
// Pure Go has no carry-less multiply, and a table CRC is no faster than
// hash/crc32; see docs/wire.md, Performance.

// icrcCLMUL is documented in icrc_amd64.s.
//
//go:noescape
func icrcCLMUL(crc uint32, p []byte, mask *[icrcMaskLen]byte) uint32

// cpuid1ECX returns ECX of CPUID leaf 1.
func cpuid1ECX() uint32

// xgetbv0 returns XCR0, the register states the OS saves.
func xgetbv0() uint32

// haveCLMUL says the CPU has PCLMULQDQ and AVX (CPUID.1:ECX bits 1 and
// 28) and the OS saves the AVX registers (OSXSAVE, bit 27, and XCR0 bits
// 1 and 2).
var haveCLMUL = func() bool {
	const pclmul, osxsave, avx = 1 << 1, 1 << 27, 1 << 28
	ecx := cpuid1ECX()
	return ecx&(pclmul|osxsave|avx) == pclmul|osxsave|avx && xgetbv0()&6 == 6
}()
