//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// func icrcCLMUL(crc uint32, p []byte, mask *[icrcMaskLen]byte) uint32
//
// A CRC-32 IEEE update of p, each byte OR-ed with the mask byte at the same
// offset, by carry-less multiplication (PCLMULQDQ, AVX encoding). crc and
// the result are bit-inverted, as in hash/crc32's ieeeCLMUL.
// 16 <= len(p) <= icrcMaskLen.
//
// Leading zero bytes do not change a CRC whose initial value has been
// folded into the data, so the message is taken as s = -len(p) mod 16 zero
// bytes followed by p, n 16-byte blocks: the first is p[0:16] (mask and
// initial value applied) shifted up by s bytes; the others are the last
// 16(n-1) bytes of p, loaded in place. When s > 12 the shift pushes bytes
// of the initial value out of the first block: they go to the second (X7).
//
// Instead of folding each block into the next, a chain of multiplications
// as long as the message, every block but the last is multiplied at once
// by the constants for its distance d from the last block, x^(128d+32) and
// x^(128d-32) mod P, bit-reflected and shifted left once (as hash/crc32's
// for d = 1 and 4), and the products are XOR-ed together: the
// multiplications are independent and overlap. The code is unrolled for
// d = 6..1 and entered at the stage of the second block. The 128-bit sum
// is reduced to 32 bits as hash/crc32 does (crc32_amd64.s, "finish").
TEXT ·icrcCLMUL(SB), NOSPLIT, $0-44
	MOVL	crc+0(FP), X0
	MOVQ	p_base+8(FP), SI
	MOVQ	p_len+16(FP), CX
	MOVQ	mask+32(FP), DI

	// First block: mask, initial value, shift up by s bytes.
	MOVQ	CX, AX
	NEGQ	AX
	ANDQ	$15, AX            // s
	MOVQ	$16, DX
	SUBQ	AX, DX             // 16-s: the second block's offset
	LEAQ	icrcShuf<>(SB), BX
	VMOVDQU	(SI), X1
	VPOR	(DI), X1, X1
	VPXOR	X0, X1, X1
	VPSHUFB	(BX)(DX*1), X1, X1    // icrcShuf[16-s:]: byte i takes i-s, or zero
	VPSHUFB	16(BX)(DX*1), X0, X7  // icrcShuf[32-s:]: byte i takes i+16-s, or zero

	// R11 = n-1, the first block's distance; R8, R9: the last block and
	// its mask.
	MOVQ	CX, R11
	SUBQ	DX, R11
	SHRQ	$4, R11
	JZ	finish
	LEAQ	-16(SI)(CX*1), R8
	LEAQ	-16(DI)(CX*1), R9

	// Fold the first block: X4 and X5 collect the products.
	MOVQ	R11, R10
	SHLQ	$4, R10
	LEAQ	icrcK<>-16(SB), BX
	VPCLMULQDQ	$0x00, (BX)(R10*1), X1, X4
	VPCLMULQDQ	$0x11, (BX)(R10*1), X1, X5

	// Load the second block, at distance n-2, into X2, and enter the stage
	// for that distance.
	VMOVDQU	(SI)(DX*1), X2
	VPOR	(DI)(DX*1), X2, X2
	VPXOR	X7, X2, X2
	DECQ	R11
	CMPQ	R11, $3
	JEQ	d3
	CMPQ	R11, $2
	JEQ	d2
	CMPQ	R11, $4
	JEQ	d4
	CMPQ	R11, $5
	JEQ	d5
	CMPQ	R11, $6
	JEQ	d6
	CMPQ	R11, $1
	JEQ	d1
	JMP	d0

d6:	// X2 holds the block at distance 6: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+80(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+80(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	-80(R8), X2
	VPOR	-80(R9), X2, X2
d5:	// X2 holds the block at distance 5: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+64(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+64(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	-64(R8), X2
	VPOR	-64(R9), X2, X2
d4:	// X2 holds the block at distance 4: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+48(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+48(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	-48(R8), X2
	VPOR	-48(R9), X2, X2
d3:	// X2 holds the block at distance 3: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+32(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+32(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	-32(R8), X2
	VPOR	-32(R9), X2, X2
d2:	// X2 holds the block at distance 2: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+16(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+16(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	-16(R8), X2
	VPOR	-16(R9), X2, X2
d1:	// X2 holds the block at distance 1: fold it, load the next.
	VPCLMULQDQ	$0x00, icrcK<>+0(SB), X2, X6
	VPCLMULQDQ	$0x11, icrcK<>+0(SB), X2, X2
	VPXOR	X6, X4, X4
	VPXOR	X2, X5, X5
	VMOVDQU	(R8), X2
	VPOR	(R9), X2, X2
d0:	// The last block is added as it is.
	VPXOR	X4, X2, X1
	VPXOR	X5, X1, X1

finish:
	// As hash/crc32's ieeeCLMUL: 128 -> 64 bits, then Barrett reduction.
	VPCLMULQDQ	$0x10, icrcK<>+0(SB), X1, X0 // low half times x^96
	VPSRLDQ	$8, X1, X1
	VPXOR	X0, X1, X1

	VPCMPEQB	X3, X3, X3
	VPSRLQ	$32, X3, X3          // 32-bit mask
	VPSRLDQ	$4, X1, X2
	VPAND	X3, X1, X1
	VPCLMULQDQ	$0x00, icrcR5<>+0(SB), X1, X1
	VPXOR	X2, X1, X1

	VPAND	X3, X1, X2
	VPCLMULQDQ	$0x10, icrcPoly<>+0(SB), X2, X2
	VPAND	X3, X2, X2
	VPCLMULQDQ	$0x00, icrcPoly<>+0(SB), X2, X2
	VPXOR	X1, X2, X1

	VPEXTRD	$1, X1, AX
	MOVL	AX, ret+40(FP)
	RET

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL	$1, AX
	XORL	CX, CX
	CPUID
	MOVL	CX, ret+0(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	XORL	CX, CX
	XGETBV
	MOVL	AX, ret+0(FP)
	RET

// icrcShuf: PSHUFB controls; icrcShuf[16-s:32-s] moves byte i to i+s and
// zeroes the first s bytes, icrcShuf[32-s:48-s] moves byte i+16-s to i.
DATA	icrcShuf<>+0(SB)/8, $0x8080808080808080
DATA	icrcShuf<>+8(SB)/8, $0x8080808080808080
DATA	icrcShuf<>+16(SB)/8, $0x0706050403020100
DATA	icrcShuf<>+24(SB)/8, $0x0f0e0d0c0b0a0908
DATA	icrcShuf<>+32(SB)/8, $0x8080808080808080
DATA	icrcShuf<>+40(SB)/8, $0x8080808080808080
GLOBL	icrcShuf<>(SB), RODATA, $48

// icrcK[d-1]: the fold constants for a block d blocks before the last,
// x^(128d+32) and x^(128d-32) mod P, bit-reflected, shifted left once
// (TestICRCConstants derives them; TestICRCCLMUL uses every one).
DATA	icrcK<>+0(SB)/8, $0x001751997d0 // x^(128*1+32)
DATA	icrcK<>+8(SB)/8, $0x000ccaa009e // x^(128*1-32)
DATA	icrcK<>+16(SB)/8, $0x000f1da05aa // x^(128*2+32)
DATA	icrcK<>+24(SB)/8, $0x0015a546366 // x^(128*2-32)
DATA	icrcK<>+32(SB)/8, $0x0003db1ecdc // x^(128*3+32)
DATA	icrcK<>+40(SB)/8, $0x00174359406 // x^(128*3-32)
DATA	icrcK<>+48(SB)/8, $0x00154442bd4 // x^(128*4+32)
DATA	icrcK<>+56(SB)/8, $0x001c6e41596 // x^(128*4-32)
DATA	icrcK<>+64(SB)/8, $0x001c7569e54 // x^(128*5+32)
DATA	icrcK<>+72(SB)/8, $0x000ae0b5394 // x^(128*5-32)
DATA	icrcK<>+80(SB)/8, $0x000df068dc2 // x^(128*6+32)
DATA	icrcK<>+88(SB)/8, $0x0018cb44e58 // x^(128*6-32)
DATA	icrcK<>+96(SB)/8, $0x001ea89367e // x^(128*7+32)
DATA	icrcK<>+104(SB)/8, $0x001d7cfc6ac // x^(128*7-32)
GLOBL	icrcK<>(SB), RODATA, $112

// x^64 mod P as above, and the Barrett constants (mu, P), as in hash/crc32.
// 16 bytes each: they are read as 128-bit operands.
DATA	icrcR5<>+0(SB)/8, $0x163cd6124
DATA	icrcR5<>+8(SB)/8, $0
GLOBL	icrcR5<>(SB), RODATA, $16
DATA	icrcPoly<>+0(SB)/8, $0x1db710641
DATA	icrcPoly<>+8(SB)/8, $0x1f7011641
GLOBL	icrcPoly<>(SB), RODATA, $16
