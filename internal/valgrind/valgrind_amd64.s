#include "textflag.h"

// func request(args *[6]uintptr, def uintptr) uintptr
//
// valgrind.h's VALGRIND_DO_CLIENT_REQUEST_EXPR for PLAT_amd64_linux: the
// address of the request block in RAX, the default result in RDX, the
// special preamble (rotations of RDI by 3, 13, 61 and 51 bits, 128 in all,
// which leave it as it was), then "xchgq %rbx,%rbx", which asks for the
// request; the result is in RDX. Natively the sequence changes nothing but
// the flags. The bytes are checked in encoding_test.go.
TEXT ·request(SB), NOSPLIT, $0-24
	MOVQ	args+0(FP), AX
	MOVQ	def+8(FP), DX
	ROLQ	$3, DI
	ROLQ	$13, DI
	ROLQ	$61, DI
	ROLQ	$51, DI
	XCHGQ	BX, BX
	MOVQ	DX, ret+16(FP)
	RET
