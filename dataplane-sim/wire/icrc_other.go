//go:build !amd64 || purego

package wire

// Without the amd64 assembly, icrcMasked always falls back to hash/crc32.
const haveCLMUL = false

func icrcCLMUL(crc uint32, p []byte, mask *[icrcMaskLen]byte) uint32 {
	panic("wire: icrcCLMUL without the amd64 assembly")
}
