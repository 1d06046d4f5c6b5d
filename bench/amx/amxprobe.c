// amxprobe: what an AMX kernel would give gptg's bfloat16 products, on a
// CPU with AMX-BF16 (Intel Sapphire Rapids and later). Two questions:
//
//  1. peak: TDPBF16PS on four independent 16×16 float32 accumulator tiles
//     (16×16×32 multiply-adds an instruction), GFLOP/s of one thread;
//  2. bits: a 16×16 product over k = 512 from the same bfloat16 operands,
//     by AMX tiles and by the sum gptg's kernels compute (graph/internal/
//     gemm/bf16.go: per element, per pair of k steps q in order,
//     s += a[2q+1]·b[2q+1] then s += a[2q]·b[2q], each add rounded to
//     float32, nearest even, denormals flushed, as VDPBF16PS does), each
//     against the exact sum (long double of exact products, rounded once).
//
// gptg's rule is that every kernel of a product gives the same bits as
// its plain-Go twin (the tests compare them bit for bit), so an AMX kernel
// could be used only if its sums were reproducible in Go. This prints how
// far they are from the twin's, in float32 units in the last place.
//
// VDPBF16PS computes the twin's sums on the same operands (checked here
// too), AMX does not: amxnum.c finds the arithmetic AMX does (two float32
// chains, even and odd steps of k, then C), bench/amxmodel its Go model.
//
// Build and run: bench/amx.sh (gcc -O2 -mamx-tile -mamx-bf16 -mavx512bf16).
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tiles.h"

static void configure(void) {
    struct tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) { // every tile 16 rows of 64 bytes
        c.rows[t] = 16;
        c.colsb[t] = 64;
    }
    _tile_loadconfig(&c);
}

static uint16_t bf16(float x) { // nearest even; the inputs are normal numbers
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static float widen(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0, x) : x; }

static uint32_t bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

// ulps is the distance between two float32 of one sign, in units in the
// last place.
static long ulps(float x, float y) {
    int32_t a = (int32_t)bits(x), b = (int32_t)bits(y);
    if (a < 0) a = (int32_t)0x80000000 - a;
    if (b < 0) b = (int32_t)0x80000000 - b;
    return labs((long)a - (long)b);
}

static double now(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { M = 16, N = 16, K = 512 };

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 20000000;
    unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    if (request_tiles()) {
        perror("arch_prctl(ARCH_REQ_XCOMP_PERM): no AMX here");
        return 1;
    }
    configure();

    // 1. Peak: four accumulators, two A and two B tiles, as a 32×32 block.
    static uint16_t zeros[16 * 32] __attribute__((aligned(64)));
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, zeros, 64); _tile_loadd(5, zeros, 64);
    _tile_loadd(6, zeros, 64); _tile_loadd(7, zeros, 64);
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_THREAD_CPUTIME_ID) - c0;
    double flops = 4.0 * iters * 2 * M * N * 32;
    printf("peak: TDPBF16PS, 4 tiles × %ld: %.0f GFLOP/s wall, %.0f GFLOP/cpu-s (%.2f s)\n",
           iters, flops / wall / 1e9, flops / cpu / 1e9, wall);

    // 2. Bits. A is M×K row-major; B is K×N stored as AMX wants it: per
    // pair of k steps a row of N pairs (b[2q][j], b[2q+1][j]).
    static uint16_t a[M][K], b[K][N], bpack[K / 2][N][2];
    static float amx[M][N] __attribute__((aligned(64)));
    srand(seed);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            a[i][k] = bf16((float)rand() / RAND_MAX * 2 - 1);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            b[k][j] = bf16((float)rand() / RAND_MAX * 2 - 1);
    for (int q = 0; q < K / 2; q++)
        for (int j = 0; j < N; j++) {
            bpack[q][j][0] = b[2 * q][j];
            bpack[q][j][1] = b[2 * q + 1][j];
        }
    _tile_zero(0);
    for (int kk = 0; kk < K; kk += 32) { // 32 k steps a tile: 16 pairs
        _tile_loadd(4, &a[0][kk], K * 2);
        _tile_loadd(6, &bpack[kk / 2][0][0], N * 4);
        _tile_dpbf16ps(0, 4, 6);
    }
    _tile_stored(0, amx, N * 4);
    _tile_release();

    // VDPBF16PS on the same operands, one row of C a vector, A's pairs
    // broadcast as gptg's kernel does: its sums must be the twin's.
    static float avx[M][N] __attribute__((aligned(64)));
    for (int i = 0; i < M; i++) {
        __m512 acc = _mm512_setzero_ps();
        for (int q = 0; q < K / 2; q++) {
            uint32_t pair = (uint32_t)a[i][2 * q] | (uint32_t)a[i][2 * q + 1] << 16;
            __m512i bq = _mm512_loadu_si512(&bpack[q][0][0]);
            acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32((int)pair), (__m512bh)bq);
        }
        _mm512_store_ps(avx[i], acc);
    }

    // The twin's sum, and one other order a hardware adder might take:
    // each pair's two products added exactly, then to s, rounded once.
    long differ = 0, differFused = 0, differAVX = 0, maxTwin = 0, maxAMXExact = 0, maxTwinExact = 0;
    double maxRel = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0, f = 0;
            long double exact = 0, scale = 0;
            for (int q = 0; q < K / 2; q++) {
                float p0 = widen(a[i][2 * q]) * widen(b[2 * q][j]); // exact: 8×8 bits
                float p1 = widen(a[i][2 * q + 1]) * widen(b[2 * q + 1][j]);
                s = ftz(s + p1);
                s = ftz(s + p0);
                f = ftz((float)((double)f + ((double)p0 + (double)p1)));
                exact += (long double)p0 + p1;
                scale += fabsl(p0) + fabsl(p1);
            }
            float e = (float)exact;
            long d = ulps(amx[i][j], s);
            if (d) differ++;
            if (bits(amx[i][j]) != bits(f)) differFused++;
            if (bits(avx[i][j]) != bits(s)) differAVX++;
            if (d > maxTwin) maxTwin = d;
            if (ulps(amx[i][j], e) > maxAMXExact) maxAMXExact = ulps(amx[i][j], e);
            if (ulps(s, e) > maxTwinExact) maxTwinExact = ulps(s, e);
            // The difference against the size of what was summed, in
            // float32's unit roundoff (2^-24): what an error analysis bounds.
            double rel = fabs((double)amx[i][j] - s) / (double)scale * 16777216.0;
            if (rel > maxRel) maxRel = rel;
        }
    printf("bits: %d×%d×%d, operands from seed %u: %ld of %d AMX sums differ from the twin's, "
           "by up to %ld ulp of the sum (%.1f units of 2^-24 of the sum of |products|); "
           "to the exact sum, AMX up to %ld ulp, the twin up to %ld; "
           "%ld differ from pairs added exactly then rounded once; "
           "VDPBF16PS's differ from the twin's in %ld\n",
           M, N, K, seed, differ, M * N, maxTwin, maxRel, maxAMXExact, maxTwinExact, differFused, differAVX);
    return 0;
}
