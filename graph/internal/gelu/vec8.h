// Constants of the AVX2 loops (exact_amd64.s, gelu_amd64.s) are stored
// eight times, one 256-bit vector, so that each can be an operand of a
// vector instruction straight from memory.

// VEC8 stores the float32 with the given bits eight times as name<>.
#define VEC8(name, bits) \
	DATA name<>+0(SB)/4, bits; \
	DATA name<>+4(SB)/4, bits; \
	DATA name<>+8(SB)/4, bits; \
	DATA name<>+12(SB)/4, bits; \
	DATA name<>+16(SB)/4, bits; \
	DATA name<>+20(SB)/4, bits; \
	DATA name<>+24(SB)/4, bits; \
	DATA name<>+28(SB)/4, bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32
