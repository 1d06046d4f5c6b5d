// amxnum: which arithmetic TDPBF16PS (AMX-BF16) does, found with crafted
// operands and checked on random ones against candidate models written
// in C, so that a plain-Go twin of an AMX kernel can give the same bits.
//
//   amxnum crafted            the crafted cases: hardware result and the
//                             matching model's, one a line
//   amxnum check SEED TILES   random tiles for K = 2..32 bfloat16 a row,
//                             C zero or not, several operand ranges;
//                             per model the sums that differ from AMX
//   amxnum golden SEED CASES  one case a line (K, C, a, b, AMX's result,
//                             all in hex) for bench/amxmodel's Go test
//
// The model that matches (see bench/NOTES.md, "AMX TDPBF16PS numerics"):
// per element of C, the products of the even steps of k (a[0]b[0],
// a[2]b[2], ...) are summed in one float32 chain and those of the odd
// steps in another, in order of k, each add a fused a·b + s (the product
// exact) rounded to nearest even; then the two chains are added, then C;
// every result that is denormal is flushed to zero, denormal inputs
// (bfloat16 operands and C) are read as zero.
//
// Build: see bench/amx-numerics.sh.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiles.h"

// configure sets tile 0 to C (16×16 float32), tile 1 to A (16 rows of K
// bfloat16) and tile 2 to B (K/2 rows of 16 pairs).
static void configure(int K) {
    struct tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = 16; c.colsb[0] = 64;
    c.rows[1] = 16; c.colsb[1] = 2 * K;
    c.rows[2] = K / 2; c.colsb[2] = 64;
    _tile_loadconfig(&c);
}

static float fromBits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float widen(uint16_t b) { return fromBits((uint32_t)b << 16); }
static uint16_t bf16(float x) { uint32_t u = bits(x); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }
static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0, x) : x; }

// A tile product: C[i][j] += sum over k < K of A[i][k]·B[k][j], with B
// given as K×16 and packed here as TDPBF16PS wants it.
static void amx(float C[16][16], uint16_t A[16][32], uint16_t B[32][16], int K) {
    static float c[16][16] __attribute__((aligned(64)));
    static uint16_t a[16][32] __attribute__((aligned(64)));
    static uint16_t b[16][16][2] __attribute__((aligned(64)));
    memcpy(c, C, sizeof c);
    memcpy(a, A, sizeof a);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < 16; j++) b[k / 2][j][k % 2] = B[k][j];
    configure(K);
    _tile_loadd(0, c, 64);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
    memcpy(C, c, sizeof c);
}

// The models: c + sum a[k]·b[k] over k < K, the operands already read
// (denormals as zero).
typedef float model(float c, const float *a, const float *b, int K);

// chains: the model that matches.
static float chains(float c, const float *a, const float *b, int K) {
    float even = 0, odd = 0;
    for (int k = 0; k < K; k += 2) {
        even = ftz(fmaf(a[k], b[k], even));
        odd = ftz(fmaf(a[k + 1], b[k + 1], odd));
    }
    return ftz(c + ftz(even + odd));
}

// chainsCFirst: the same chains, C added to the even one first.
static float chainsCFirst(float c, const float *a, const float *b, int K) {
    float even = c, odd = 0;
    for (int k = 0; k < K; k += 2) {
        even = ftz(fmaf(a[k], b[k], even));
        odd = ftz(fmaf(a[k + 1], b[k + 1], odd));
    }
    return ftz(even + odd);
}

// sdm: the SDM's pseudo-code, from C, per pair +a0b0 then +a1b1.
static float sdm(float c, const float *a, const float *b, int K) {
    float s = c;
    for (int k = 0; k < K; k += 2) {
        s = ftz(fmaf(a[k], b[k], s));
        s = ftz(fmaf(a[k + 1], b[k + 1], s));
    }
    return s;
}

// twin: VDPBF16PS's order (gptg's dpbf16), from C, +a1b1 then +a0b0.
static float twin(float c, const float *a, const float *b, int K) {
    float s = c;
    for (int k = 0; k < K; k += 2) {
        s = ftz(fmaf(a[k + 1], b[k + 1], s));
        s = ftz(fmaf(a[k], b[k], s));
    }
    return s;
}

// pairs: each pair's two products added exactly, then to s, from C.
static float pairs(float c, const float *a, const float *b, int K) {
    float s = c;
    for (int k = 0; k < K; k += 2)
        s = ftz((float)((double)s + ((double)a[k] * b[k] + (double)a[k + 1] * b[k + 1])));
    return s;
}

// once: all products and C summed exactly (long double is exact enough
// for the operand ranges where this is tried), rounded once.
static float once(float c, const float *a, const float *b, int K) {
    long double s = c;
    for (int k = 0; k < K; k++) s += (long double)a[k] * b[k];
    return ftz((float)s);
}

// productsOnce: the products summed exactly, rounded, then C added.
static float productsOnce(float c, const float *a, const float *b, int K) {
    long double s = 0;
    for (int k = 0; k < K; k++) s += (long double)a[k] * b[k];
    return ftz(c + ftz((float)s));
}

static const struct { const char *name; model *f; } models[] = {
    {"chains: even and odd k in two float32 chains, then even+odd, then +C", chains},
    {"chains, C starting the even chain", chainsCFirst},
    {"SDM pseudo-code: from C, per pair +a0b0 then +a1b1", sdm},
    {"VDPBF16PS twin: from C, per pair +a1b1 then +a0b0", twin},
    {"pairs: from C, per pair a0b0+a1b1 exact, rounded once", pairs},
    {"once: C and all products exact, rounded once", once},
    {"products exact, rounded once, then +C", productsOnce},
};
enum { nModels = sizeof models / sizeof models[0] };

static float daz(float x) { return ftz(x); }

// modelOf evaluates model f on element (i, j) of a tile product.
static float modelOf(model *f, float c, uint16_t A[16][32], uint16_t B[32][16], int i, int j, int K) {
    float a[32], b[32];
    for (int k = 0; k < K; k++) {
        a[k] = daz(widen(A[i][k]));
        b[k] = daz(widen(B[k][j]));
    }
    return f(daz(c), a, b, K);
}

// xorshift64*: the same operands from the same seed on every machine.
static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}
static double uniform(void) { return (next() >> 11) * 0x1p-53; }

// operand draws a bfloat16 in one of the ranges: 0 uniform in (-1, 1);
// 1 sign and exponent spread over 2^-20..2^20 (cancellations and
// absorptions); 2 near the bottom of the range (products and sums that
// are denormal); 3 a few large values among small ones (FPRev style);
// 4 special values among normal ones: zeros of both signs, denormal
// bfloat16, infinities, NaNs, values near the top (overflow).
static uint16_t special(void) {
    switch (next() % 8) {
    case 0: return 0x0000;
    case 1: return 0x8000;
    case 2: return (uint16_t)(next() % 0x7f + 1) | (next() & 1 ? 0x8000 : 0); // denormal
    case 3: return 0x7f80;
    case 4: return 0xff80;
    case 5: return (uint16_t)(0x7fc0 | next() % 0x40) | (next() & 1 ? 0x8000 : 0); // quiet NaN
    case 6: return (uint16_t)(0x7f81 + next() % 0x3f); // signalling NaN
    default: return bf16((float)ldexp(1 + uniform(), 100 + (int)(next() % 27))) | (next() & 1 ? 0x8000 : 0);
    }
}

static uint16_t operand(int range) {
    double x;
    if (range == 4) {
        if (next() % 4 == 0) return special();
        range = 1;
    }
    switch (range) {
    case 0: x = uniform() * 2 - 1; break;
    case 1: x = ldexp(1 + uniform(), (int)(next() % 41) - 20) * (next() & 1 ? -1 : 1); break;
    case 2: x = ldexp(1 + uniform(), -70 + (int)(next() % 20)) * (next() & 1 ? -1 : 1); break;
    default: x = (next() % 8 == 0 ? ldexp(1, 20) : 1) * (uniform() * 2 - 1); break;
    }
    return bf16((float)x);
}

static float accumulator(int range, int withC) {
    if (!withC) return 0;
    switch (range) {
    case 4:
        if (next() % 4 == 0) {
            uint16_t h = special();
            uint32_t low = (h & 0x7f80) == 0x7f80 ? 0 : (uint32_t)(next() & 0xffff);
            return fromBits((uint32_t)h << 16 | low);
        }
        return (float)(uniform() * 8 - 4);
    case 2: return (float)(ldexp(1 + uniform(), -126 + (int)(next() % 8)) * (next() & 1 ? -1 : 1));
    case 3: return (float)((uniform() * 2 - 1) * ldexp(1, (int)(next() % 50)));
    default: return (float)(uniform() * 8 - 4);
    }
}

static void randomTile(float C[16][16], uint16_t A[16][32], uint16_t B[32][16], int K, int range, int withC) {
    memset(A, 0, 16 * 32 * 2);
    memset(B, 0, 32 * 16 * 2);
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < K; k++) A[i][k] = operand(range);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < 16; j++) B[k][j] = operand(range);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) C[i][j] = accumulator(range, withC);
}

static const int Ks[] = {2, 4, 8, 16, 32};

static int check(unsigned seed, long tiles) {
    static float C[16][16], R[16][16];
    static uint16_t A[16][32], B[32][16];
    long sums = 0, differ[nModels] = {0}, nans = 0, infs = 0, zeros = 0;
    long per[5][5][2] = {{{0}}}, perDiff[5][5][2] = {{{0}}};
    rng = 0x9E3779B97F4A7C15ULL ^ seed;
    for (long t = 0; t < tiles; t++) {
        int ki = t % 5, range = (t / 5) % 5, withC = (t / 25) % 2, K = Ks[ki];
        randomTile(C, A, B, K, range, withC);
        memcpy(R, C, sizeof R);
        amx(R, A, B, K);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                sums++;
                nans += isnan(R[i][j]);
                infs += isinf(R[i][j]) != 0;
                zeros += R[i][j] == 0;
                per[ki][range][withC]++;
                for (int m = 0; m < nModels; m++) {
                    float want = modelOf(models[m].f, C[i][j], A, B, i, j, K);
                    if (bits(want) != bits(R[i][j])) {
                        differ[m]++;
                        if (m == 0) {
                            perDiff[ki][range][withC]++;
                            if (differ[0] <= 8)
                                printf("  chains differs: K=%d range %d C=%a (%08x): AMX %a (%08x), model %a (%08x)\n",
                                       K, range, C[i][j], bits(C[i][j]), R[i][j], bits(R[i][j]), want, bits(want));
                        }
                    }
                }
            }
    }
    printf("seed %u: %ld tiles, %ld sums (K = 2, 4, 8, 16, 32; 5 operand ranges; C zero and not)\n", seed, tiles, sums);
    printf("  AMX's sums: %ld NaN, %ld infinite, %ld zero\n", nans, infs, zeros);
    for (int m = 0; m < nModels; m++)
        printf("  %8ld differ (%5.1f%%)  %s\n", differ[m], 100.0 * differ[m] / sums, models[m].name);
    printf("  chains, per K / range / C: sums tested (differing)\n");
    for (int ki = 0; ki < 5; ki++) {
        printf("    K=%2d:", Ks[ki]);
        for (int r = 0; r < 5; r++)
            for (int w = 0; w < 2; w++) printf(" r%d%s %ld(%ld)", r, w ? "+C" : "", per[ki][r][w], perDiff[ki][r][w]);
        printf("\n");
    }
    // Long products, as a kernel runs them: k = 512 in 16 instructions of
    // 32 steps, C carrying the sum from one to the next (the model applied
    // per block, c its sum so far), operands uniform in (-1, 1).
    long longSums = 0, longDiffer = 0;
    for (long t = 0; t < tiles / 100 + 1; t++) {
        static uint16_t LA[16][512], LB[512][16];
        for (int i = 0; i < 16; i++)
            for (int k = 0; k < 512; k++) LA[i][k] = operand(0);
        for (int k = 0; k < 512; k++)
            for (int j = 0; j < 16; j++) LB[k][j] = operand(0);
        float want[16][16] = {{0}};
        memset(R, 0, sizeof R);
        for (int kk = 0; kk < 512; kk += 32) {
            for (int i = 0; i < 16; i++)
                for (int k = 0; k < 32; k++) A[i][k] = LA[i][kk + k];
            for (int k = 0; k < 32; k++)
                for (int j = 0; j < 16; j++) B[k][j] = LB[kk + k][j];
            amx(R, A, B, 32);
            for (int i = 0; i < 16; i++)
                for (int j = 0; j < 16; j++) want[i][j] = modelOf(chains, want[i][j], A, B, i, j, 32);
        }
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                longSums++;
                longDiffer += bits(want[i][j]) != bits(R[i][j]);
            }
    }
    printf("  k = 512 in 16 instructions: %ld of %ld sums differ from chains\n", longDiffer, longSums);
    return differ[0] != 0 || longDiffer != 0;
}

// golden prints one case a line: K, then C, the K a and K b of element
// (0, 0) of a tile whose other elements are random too, and AMX's result.
static int golden(unsigned seed, long cases) {
    static float C[16][16];
    static uint16_t A[16][32], B[32][16];
    rng = 0x9E3779B97F4A7C15ULL ^ seed;
    printf("# bench/amx/amxnum golden %u %ld: K c a[0..K) b[0..K) amx, hex bits\n", seed, cases);
    for (long t = 0; t < cases; t++) {
        int K = Ks[t % 5], range = (t / 5) % 5, withC = (t / 25) % 2;
        randomTile(C, A, B, K, range, withC);
        float c = C[0][0];
        amx(C, A, B, K);
        printf("%d %08x", K, bits(c));
        for (int k = 0; k < K; k++) printf(" %04x", A[0][k]);
        for (int k = 0; k < K; k++) printf(" %04x", B[k][0]);
        printf(" %08x\n", bits(C[0][0]));
    }
    return 0;
}

// The crafted cases: products placed at steps of k of element (0, 0).
static uint16_t ca[32], cb[32];
static void clear(void) { memset(ca, 0, sizeof ca); memset(cb, 0, sizeof cb); }

// put places the product v at step k, its exponent split over a and b.
static void put(int k, double v) {
    int e;
    double m = frexp(v, &e);
    ca[k] = bf16((float)ldexp(m, e / 2));
    cb[k] = bf16((float)ldexp(1, e - e / 2));
    if ((double)widen(ca[k]) * widen(cb[k]) != v) {
        fprintf(stderr, "amxnum: product %a is not one of two bfloat16\n", v);
        exit(2);
    }
}

static int crafted(void) {
    static float C[16][16];
    static uint16_t A[16][32], B[32][16];
    int mismatches = 0, cases = 0, wrong[nModels] = {0};
#define CASE(what, c, body)                                                               \
    do {                                                                                  \
        clear();                                                                          \
        body;                                                                             \
        memset(C, 0, sizeof C); memset(A, 0, sizeof A); memset(B, 0, sizeof B);           \
        C[0][0] = (c);                                                                    \
        for (int k = 0; k < 32; k++) { A[0][k] = ca[k]; B[k][0] = cb[k]; }                \
        amx(C, A, B, 32);                                                                 \
        float m = modelOf(chains, (c), A, B, 0, 0, 32), s = modelOf(sdm, (c), A, B, 0, 0, 32); \
        if (bits(m) != bits(C[0][0])) mismatches++;                                       \
        cases++;                                                                          \
        for (int i = 0; i < nModels; i++)                                                 \
            wrong[i] += bits(modelOf(models[i].f, (c), A, B, 0, 0, 32)) != bits(C[0][0]); \
        printf("%-58s AMX %-15a %08x chains %-15a SDM %a\n", what, C[0][0], bits(C[0][0]), m, s); \
    } while (0)
    double u = 0x1p-24; // half an ulp of 1
    puts("# rounding and width, against C = 1 (u = 2^-24, half an ulp of 1)");
    CASE("1 + u at k0 (a tie)", 1, put(0, u));
    CASE("(1+2u) + u at k0 (a tie, to even)", 1 + 2 * u, put(0, u));
    CASE("1 + 1.5u", 1, put(0, 1.5 * u));
    CASE("1 - u/2 (toward zero would give 1-u)", 1, put(0, -u / 2));
    CASE("1 + u at k0 + u at k1", 1, {put(0, u); put(1, u);});
    CASE("1 + u at k0 + u at k2", 1, {put(0, u); put(2, u);});
    puts("# the products among themselves, C = 0");
    CASE("1 at k0, u at k1 and k2", 0, {put(0, 1); put(1, u); put(2, u);});
    CASE("1 at k0, u at k1 and k3 (both odd: one chain)", 0, {put(0, 1); put(1, u); put(3, u);});
    CASE("1 at k0, u at k2 and k4 (both even, one chain with the 1)", 0, {put(0, 1); put(2, u); put(4, u);});
    CASE("1 at k0, u at k1..k31", 0, {for (int k = 1; k < 32; k++) put(k, u); put(0, 1);});
    CASE("1 at k31, u at k0..k30", 0, {for (int k = 0; k < 31; k++) put(k, u); put(31, 1);});
    puts("# FPRev: M = 2^30 and -M, ones elsewhere: the ones that survive are outside the subtree where M and -M meet");
    CASE("M at k0, -M at k2, 30 ones", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(0, 0x1p30); put(2, -0x1p30);});
    CASE("M at k0, -M at k16, 30 ones (7 ones between on the even chain)", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(0, 0x1p30); put(16, -0x1p30);});
    CASE("M at k0, -M at k30, 30 ones", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(0, 0x1p30); put(30, -0x1p30);});
    CASE("M at k1, -M at k31, 30 ones", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(1, 0x1p30); put(31, -0x1p30);});
    CASE("M at k0, -M at k1, 30 ones (the chains meet at the end)", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(0, 0x1p30); put(1, -0x1p30);});
    CASE("C = M, -M at k0, 31 ones (C comes last)", 0x1p30, {for (int k = 0; k < 32; k++) put(k, 1); put(0, -0x1p30);});
    CASE("M at k0, -M at k31, 30 ones, M = 2^25 (ties)", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(0, 0x1p25); put(31, -0x1p25);});
    CASE("M at k30, -M at k31, 30 ones, M = 2^24", 0, {for (int k = 0; k < 32; k++) put(k, 1); put(30, 0x1p24); put(31, -0x1p24);});
    puts("# denormals (2^-126 is float32's smallest normal)");
    CASE("bfloat16 denormal a (2^-128) times 2^100", 0, {ca[0] = 0x0040; cb[0] = bf16(0x1p100f);});
    CASE("C denormal (2^-130), no products", 0x1p-130f, {});
    CASE("product 2^-140 alone", 0, put(0, 0x1p-140));
    CASE("2^-126 at k0 + 2^-140 at k2 (a denormal product, exact)", 0, {put(0, 0x1p-126); put(2, 0x1p-140);});
    CASE("2^-140 at k0 + 2^-126 at k2 (0 + 2^-140 flushed first)", 0, {put(0, 0x1p-140); put(2, 0x1p-126);});
    CASE("2^-126 at k0 + 2^-140 at k1 (other chain: flushed)", 0, {put(0, 0x1p-126); put(1, 0x1p-140);});
    CASE("2^-125 at k0 - 1.5*2^-126 at k1 (chains' sum denormal)", 0, {put(0, 0x1p-125); put(1, -0x1.8p-126);});
    CASE("same, C = 2^-125", 0x1p-125, {put(0, 0x1p-125); put(1, -0x1.8p-126);});
    CASE("2^-126 + 2^-149 - 1.25*2^-149 on one chain: rounds up to 2^-126", 0, {put(0, 0x1p-126); put(2, 0x1p-149); put(4, -0x1.4p-149);});
    CASE("C = -0, no products", -0.0f, {});
    CASE("C = -0, product -2^-140 (flushed)", -0.0f, put(0, -0x1p-140));
    CASE("C = -0, products -1 at k0, +1 at k2", -0.0f, {put(0, -1); put(2, 1);});
    CASE("C = -1, products 1 at k0", -1, put(0, 1));
    CASE("C = 0, products -1 at k0 and -1 at k1, +2 at k2", 0, {put(0, -1); put(1, -1); put(2, 2);});
    puts("# infinities and NaNs (bfloat16 7fc1 and 7fc2: quiet NaNs of two payloads)");
    CASE("inf at k0, -inf at k2 (one chain)", 0, {ca[0] = 0x7f80; cb[0] = 0x3f80; ca[2] = 0xff80; cb[2] = 0x3f80;});
    CASE("inf at k0, -inf at k1 (the chains' sum)", 0, {ca[0] = 0x7f80; cb[0] = 0x3f80; ca[1] = 0xff80; cb[1] = 0x3f80;});
    CASE("C = -inf, inf at k0", -INFINITY, {ca[0] = 0x7f80; cb[0] = 0x3f80;});
    CASE("inf times 0 at k0", 0, {ca[0] = 0x7f80; cb[0] = 0;});
    CASE("2^127 * 2 * 1.5 at k0 (overflow)", 0, {ca[0] = 0x7f00; cb[0] = 0x4040;});
    CASE("NaN 7fc1 at a0, NaN 7fc2 at b0", 0, {ca[0] = 0x7fc1; cb[0] = 0x7fc2;});
    CASE("NaN 7fc1 at b0, NaN 7fc2 at a0", 0, {cb[0] = 0x7fc1; ca[0] = 0x7fc2;});
    CASE("NaN 7fc1 at k0, NaN 7fc2 at k2 (one chain)", 0, {ca[0] = 0x7fc1; cb[0] = 0x3f80; ca[2] = 0x7fc2; cb[2] = 0x3f80;});
    CASE("NaN 7fc1 at k0, NaN 7fc2 at k1 (two chains)", 0, {ca[0] = 0x7fc1; cb[0] = 0x3f80; ca[1] = 0x7fc2; cb[1] = 0x3f80;});
    CASE("NaN 7fc1 at k1, NaN 7fc2 at k0 (two chains)", 0, {ca[1] = 0x7fc1; cb[1] = 0x3f80; ca[0] = 0x7fc2; cb[0] = 0x3f80;});
    CASE("C = NaN 7fc10000, NaN 7fc2 at k0", fromBits(0x7fc10000), {ca[0] = 0x7fc2; cb[0] = 0x3f80;});
    CASE("C = NaN 7fc10000, 1 at k0", fromBits(0x7fc10000), {ca[0] = 0x3f80; cb[0] = 0x3f80;});
    CASE("signalling NaN 7f81 at a0", 0, {ca[0] = 0x7f81; cb[0] = 0x3f80;});
    CASE("C = signalling NaN 7f810000", fromBits(0x7f810000), {});
    CASE("C = NaN ffc12345 (low payload bits)", fromBits(0xffc12345), {});
    printf("%d of %d crafted cases differ from the chains model; per model:\n", mismatches, cases);
    for (int i = 0; i < nModels; i++) printf("  %2d differ  %s\n", wrong[i], models[i].name);
    return mismatches != 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "crafted") && argc != 4) ||
        (strcmp(argv[1], "crafted") && strcmp(argv[1], "check") && strcmp(argv[1], "golden"))) {
        fprintf(stderr, "usage: amxnum crafted | amxnum check SEED TILES | amxnum golden SEED CASES\n");
        return 2;
    }
    if (request_tiles()) {
        perror("amxnum: arch_prctl(ARCH_REQ_XCOMP_PERM): no AMX here");
        return 2;
    }
    if (!strcmp(argv[1], "crafted")) return crafted();
    long n = atol(argv[3]);
    if (n <= 0) {
        fprintf(stderr, "amxnum: %s is not a positive count\n", argv[3]);
        return 2;
    }
    unsigned seed = (unsigned)strtoul(argv[2], 0, 10);
    return !strcmp(argv[1], "check") ? check(seed, n) : golden(seed, n);
}
