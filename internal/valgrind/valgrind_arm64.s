#include "textflag.h"

// func request(args *[6]uintptr, def uintptr) uintptr
//
// valgrind.h's VALGRIND_DO_CLIENT_REQUEST_EXPR for PLAT_arm64_linux: the
// default result in X3, the address of the request block in X4, the
// special preamble (rotations of X12 by 3, 13, 51 and 61 bits, 128 in all,
// which leave it as it was), then "orr x10, x10, x10", which asks for the
// request; the result is in X3. Natively the sequence changes nothing.
// The words are checked in encoding_test.go.
TEXT ·request(SB), NOSPLIT, $0-24
	MOVD	def+8(FP), R3
	MOVD	args+0(FP), R4
	ROR	$3, R12
	ROR	$13, R12
	ROR	$51, R12
	ROR	$61, R12
	ORR	R10, R10
	MOVD	R3, ret+16(FP)
	RET
