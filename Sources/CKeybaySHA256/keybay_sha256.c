// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_sha256.c - SHA-256 (FIPS 180-4) with an x86 SHA-NI fast path.
 *
 * Why our own: linking OpenSSL's libcrypto into the CLI would cost about 2 ms of process start
 * on the development machine (a C program that links libcrypto and hashes 3 bytes runs 2.5x
 * longer than one that links libsodium), which would undo the CLI `get` vs `age` row of
 * docs/performance.md; libsodium 1.0.18's portable SHA-256 (about 200 MiB/s) bounds store reads.
 * Tests/KeybayTests/Crypto/SHA256Tests.swift cross-checks this implementation against libsodium's.
 *
 * Layout:
 *   - portable compression function (plain C, FIPS 180-4 section 6.2.2)
 *   - SHA-NI compression function (x86/x86-64 GCC/Clang only), compiled
 *     with a per-function target attribute so no global -msha is needed
 *   - runtime CPUID dispatch, cached
 *   - one-shot driver: whole blocks straight from the caller's buffer,
 *     padding built in a stack buffer that is wiped afterwards
 *
 * No pointer casts to wider integer types are used on caller data: the
 * portable path reads bytes, the SIMD path uses unaligned loads.
 */
#include "keybay_sha256.h"

#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__)) && \
    !defined(KEYBAY_SHA256_NO_SHANI)
#define KEYBAY_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KEYBAY_HAVE_SHANI 0
#endif

#if KEYBAY_HAVE_SHANI && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define KEYBAY_USE_ATOMICS 1
#else
#define KEYBAY_USE_ATOMICS 0
#endif

/* FIPS 180-4 section 4.2.2: first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes. 16-byte aligned so the SIMD path can
 * read four at a time (it uses unaligned loads anyway). */
static _Alignas(16) const uint32_t K256[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u,
    0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u,
    0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u,
    0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

/* FIPS 180-4 section 5.3.3: initial hash value H(0). */
static const uint32_t H256_INIT[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

typedef void (*keybay_compress_fn)(uint32_t state[8],
                                   const unsigned char *blocks,
                                   size_t nblocks);

/* ------------------------------------------------------------------------
 * Portable compression function
 * ---------------------------------------------------------------------- */

static inline uint32_t load32_be(const unsigned char *p)
{
    /* Cast before shifting: unsigned char promotes to int and p[0] << 24
     * could otherwise overflow a signed int. */
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void store32_be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* n is always a constant in 1..31 here, so neither shift is by 32. */
#define ROTR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

/* FIPS 180-4 section 4.1.2 functions. Ch and Maj are written in their
 * usual branch-free bitwise forms. */
#define CH(x, y, z)  (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (ROTR32(x, 2) ^ ROTR32(x, 13) ^ ROTR32(x, 22))
#define BSIG1(x) (ROTR32(x, 6) ^ ROTR32(x, 11) ^ ROTR32(x, 25))
#define SSIG0(x) (ROTR32(x, 7) ^ ROTR32(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR32(x, 17) ^ ROTR32(x, 19) ^ ((x) >> 10))

/* One round with the working variables passed by name: instead of shifting
 * h<-g<-f<-...<-a every round, the caller rotates the argument order, so
 * only the two variables that really change (d -> e', h -> a') are
 * written. */
#define PROUND(a, b, c, d, e, f, g, h, t, wt)                                \
    do {                                                                     \
        uint32_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + K256[t] + (wt);        \
        (d) += t1_;                                                          \
        (h) = t1_ + BSIG0(a) + MAJ(a, b, c);                                 \
    } while (0)

/* Message schedule, kept as a 16-word ring buffer: W[t] (t >= 16)
 * overwrites W[t-16], which is its last use. */
#define WLOAD(i)  (w[i] = load32_be(blocks + 4 * (i)))
#define WSCHED(t)                                                            \
    (w[(t) & 15] += SSIG1(w[((t) - 2) & 15]) + w[((t) - 7) & 15] +           \
                    SSIG0(w[((t) - 15) & 15]))

#define PROUNDS8(t, W)                                                       \
    do {                                                                     \
        PROUND(a, b, c, d, e, f, g, h, (t) + 0, W((t) + 0));                 \
        PROUND(h, a, b, c, d, e, f, g, (t) + 1, W((t) + 1));                 \
        PROUND(g, h, a, b, c, d, e, f, (t) + 2, W((t) + 2));                 \
        PROUND(f, g, h, a, b, c, d, e, (t) + 3, W((t) + 3));                 \
        PROUND(e, f, g, h, a, b, c, d, (t) + 4, W((t) + 4));                 \
        PROUND(d, e, f, g, h, a, b, c, (t) + 5, W((t) + 5));                 \
        PROUND(c, d, e, f, g, h, a, b, (t) + 6, W((t) + 6));                 \
        PROUND(b, c, d, e, f, g, h, a, (t) + 7, W((t) + 7));                 \
    } while (0)

static void compress_portable(uint32_t state[8], const unsigned char *blocks,
                              size_t nblocks)
{
    uint32_t w[16];

    while (nblocks--) {
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];

        /* After 8 rounds the names are back in their original roles. */
        for (int t = 0; t < 16; t += 8)
            PROUNDS8(t, WLOAD);
        for (int t = 16; t < 64; t += 8)
            PROUNDS8(t, WSCHED);

        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
        blocks += 64;
    }

    /* Schedule words are derived from the message; don't leave them on
     * the stack. */
    volatile uint32_t *vw = w;
    for (size_t i = 0; i < 16; i++)
        vw[i] = 0;
}

#undef PROUND
#undef PROUNDS8
#undef WLOAD
#undef WSCHED

/* ------------------------------------------------------------------------
 * SHA-NI compression function
 * ---------------------------------------------------------------------- */
#if KEYBAY_HAVE_SHANI

#define KEYBAY_SHANI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/*
 * SHA256RNDS2 does two rounds and wants the eight working variables split
 * across two registers in a specific order (dword 3 .. dword 0):
 *
 *     ABEF = { A, B, E, F }      CDGH = { C, D, G, H }
 *
 * i.e. the variables each round reads as "x" for Sigma/Ch/Maj (A, B, E, F)
 * go in the "current" register, and the ones that only shift along
 * (C, D, G, H) in the other. After two rounds the old {A,B,E,F} have moved
 * exactly into the {C,D,G,H} positions, so the two registers simply swap
 * roles every call: new_ABEF = rnds2(CDGH, ABEF, WK); new_CDGH = old ABEF.
 *
 * The WK operand's low two dwords hold W[t]+K[t] (bits 31:0) and
 * W[t+1]+K[t+1] (bits 63:32); the upper half is ignored.
 *
 * The caller's state[8] = {a,b,c,d,e,f,g,h} is converted to that layout
 * once per call and back at the end.
 */

/* Four rounds 4g..4g+3 using message vector M = W[4g..4g+3]. */
#define SHANI_QROUND(g, M)                                                   \
    do {                                                                     \
        __m128i wk_ = _mm_add_epi32((M),                                     \
            _mm_loadu_si128((const __m128i *)(const void *)&K256[4 * (g)])); \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk_);  /* now ABEF */       \
        wk_ = _mm_shuffle_epi32(wk_, 0x0E);  /* W/K[2,3] -> low half */      \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, wk_);  /* now ABEF */       \
    } while (0)

/*
 * Message schedule for the next four words, written into M0's register.
 * On entry M0..M3 hold W[t-16..t-13], W[t-12..t-9], W[t-8..t-5],
 * W[t-4..t-1].
 *   msg1(M0, M1)      = W[t-16+i] + s0(W[t-15+i])          i = 0..3
 *   alignr(M3, M2, 4) = W[t-7 .. t-4]
 *   msg2(x, M3)       = x[i] + s1(W[t-2+i]), feeding W[t], W[t+1] back in
 *                       for i = 2, 3 (hence it takes W[t-4..t-1]).
 */
#define SHANI_SCHED(M0, M1, M2, M3)                                          \
    (M0) = _mm_sha256msg2_epu32(                                             \
        _mm_add_epi32(_mm_sha256msg1_epu32((M0), (M1)),                      \
                      _mm_alignr_epi8((M3), (M2), 4)),                       \
        (M3))

KEYBAY_SHANI_TARGET
static void compress_shani(uint32_t state[8], const unsigned char *blocks,
                           size_t nblocks)
{
    /* pshufb mask reversing the bytes of each 32-bit lane: SHA-256 words
     * are big-endian, x86 is little-endian. */
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL,
                                         0x0405060700010203LL);
    __m128i abef, cdgh, tmp;

    /* state -> ABEF/CDGH.
     *   tmp  = {d,c,b,a} (dword3..0)  -> shuffle 0xB1 -> {c,d,a,b}
     *   cdgh = {h,g,f,e}              -> shuffle 0x1B -> {e,f,g,h}
     *   abef = alignr(tmp, cdgh, 8)   =  {a,b,e,f}
     *   cdgh = blend(cdgh, tmp, 0xF0) =  {c,d,g,h}                    */
    tmp  = _mm_loadu_si128((const __m128i *)(const void *)&state[0]);
    cdgh = _mm_loadu_si128((const __m128i *)(const void *)&state[4]);
    tmp  = _mm_shuffle_epi32(tmp, 0xB1);
    cdgh = _mm_shuffle_epi32(cdgh, 0x1B);
    abef = _mm_alignr_epi8(tmp, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, tmp, 0xF0);

    while (nblocks--) {
        const __m128i abef_save = abef, cdgh_save = cdgh;
        __m128i m0, m1, m2, m3;

        m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(blocks +  0)), bswap);
        m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(blocks + 16)), bswap);
        m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(blocks + 32)), bswap);
        m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(blocks + 48)), bswap);

        SHANI_QROUND(0, m0);
        SHANI_QROUND(1, m1);
        SHANI_QROUND(2, m2);
        SHANI_QROUND(3, m3);

        /* Rounds 16..63: the four registers rotate roles. */
        SHANI_SCHED(m0, m1, m2, m3); SHANI_QROUND(4, m0);
        SHANI_SCHED(m1, m2, m3, m0); SHANI_QROUND(5, m1);
        SHANI_SCHED(m2, m3, m0, m1); SHANI_QROUND(6, m2);
        SHANI_SCHED(m3, m0, m1, m2); SHANI_QROUND(7, m3);
        SHANI_SCHED(m0, m1, m2, m3); SHANI_QROUND(8, m0);
        SHANI_SCHED(m1, m2, m3, m0); SHANI_QROUND(9, m1);
        SHANI_SCHED(m2, m3, m0, m1); SHANI_QROUND(10, m2);
        SHANI_SCHED(m3, m0, m1, m2); SHANI_QROUND(11, m3);
        SHANI_SCHED(m0, m1, m2, m3); SHANI_QROUND(12, m0);
        SHANI_SCHED(m1, m2, m3, m0); SHANI_QROUND(13, m1);
        SHANI_SCHED(m2, m3, m0, m1); SHANI_QROUND(14, m2);
        SHANI_SCHED(m3, m0, m1, m2); SHANI_QROUND(15, m3);

        /* Davies-Meyer feed-forward; lane-wise add is layout-agnostic. */
        abef = _mm_add_epi32(abef, abef_save);
        cdgh = _mm_add_epi32(cdgh, cdgh_save);
        blocks += 64;
    }

    /* ABEF/CDGH -> state (inverse of the above).
     *   tmp  = shuffle(abef, 0x1B)     = {f,e,b,a}
     *   cdgh = shuffle(cdgh, 0xB1)     = {d,c,h,g}
     *   abef = blend(tmp, cdgh, 0xF0)  = {d,c,b,a}  -> state[0..3]
     *   cdgh = alignr(cdgh, tmp, 8)    = {h,g,f,e}  -> state[4..7]    */
    tmp  = _mm_shuffle_epi32(abef, 0x1B);
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);
    abef = _mm_blend_epi16(tmp, cdgh, 0xF0);
    cdgh = _mm_alignr_epi8(cdgh, tmp, 8);
    _mm_storeu_si128((__m128i *)(void *)&state[0], abef);
    _mm_storeu_si128((__m128i *)(void *)&state[4], cdgh);
}

#undef SHANI_QROUND
#undef SHANI_SCHED

static int detect_shani(void)
{
    unsigned int eax, ebx, ecx, edx;

    /* Leaf 1: ECX bit 9 = SSSE3, bit 19 = SSE4.1 (EDX bit 26 = SSE2, which
     * is implied on x86-64 but worth checking on i386). */
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ecx & (1u << 9)) || !(ecx & (1u << 19)) || !(edx & (1u << 26)))
        return 0;

    /* Leaf 7 subleaf 0: EBX bit 29 = SHA. __get_cpuid_count returns 0 if
     * the CPU's maximum basic leaf is below 7. */
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ebx & (1u << 29)))
        return 0;

    /* SHA-NI only uses XMM registers, whose save/restore is part of the
     * baseline SSE context (FXSAVE), so no XCR0/OSXSAVE check is needed
     * as it would be for AVX. */
    return 1;
}

#endif /* KEYBAY_HAVE_SHANI */

/* ------------------------------------------------------------------------
 * Dispatch
 * ---------------------------------------------------------------------- */

int keybay_sha256_accelerated(void)
{
#if KEYBAY_HAVE_SHANI
    /* -1 = not yet probed. Concurrent first callers may both probe; they
     * compute and store the same value, so the race is benign, and the
     * atomic makes it well-defined. */
#if KEYBAY_USE_ATOMICS
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect_shani();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
#else
    static volatile int cached = -1;
    int v = cached;
    if (v < 0) {
        v = detect_shani();
        cached = v;
    }
    return v;
#endif
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------------
 * One-shot driver
 * ---------------------------------------------------------------------- */

static void sha256_oneshot(keybay_compress_fn compress,
                           unsigned char out[32],
                           const unsigned char *in, size_t len)
{
    uint32_t state[8];
    unsigned char tail[128];
    const size_t full = len / 64;
    const size_t rem = len % 64;

    memcpy(state, H256_INIT, sizeof state);

    /* Whole blocks straight from the caller's buffer (any alignment).
     * Guarded so `in` may be NULL when len == 0 (no NULL arithmetic). */
    if (full != 0)
        compress(state, in, full);

    /* Padding (FIPS 180-4 section 5.1.1): the remaining rem bytes, 0x80,
     * zeros, then the 64-bit big-endian bit length, making one block if
     * rem <= 55 and two otherwise. Branching on the length is fine: it is
     * public. */
    memset(tail, 0, sizeof tail);
    if (rem != 0)
        memcpy(tail, in + full * 64, rem);
    tail[rem] = 0x80;

    const size_t tail_blocks = (rem < 56) ? 1 : 2;
    /* Message length in bits, modulo 2^64 as the standard specifies. */
    const uint64_t bits = (uint64_t)len << 3;
    unsigned char *lenp = tail + tail_blocks * 64 - 8;
    store32_be(lenp, (uint32_t)(bits >> 32));
    store32_be(lenp + 4, (uint32_t)bits);

    compress(state, tail, tail_blocks);

    /* Write the digest only now, so `out` may alias `in`. */
    for (size_t i = 0; i < 8; i++)
        store32_be(out + 4 * i, state[i]);

    /* Wipe the tail buffer (it holds the last input bytes) and the chaining
     * state. Volatile stores so the compiler cannot drop them as dead. */
    volatile unsigned char *vt = tail;
    for (size_t i = 0; i < sizeof tail; i++)
        vt[i] = 0;
    volatile uint32_t *vs = state;
    for (size_t i = 0; i < 8; i++)
        vs[i] = 0;
}

void keybay_sha256_portable(unsigned char out[32],
                            const unsigned char *in, size_t len)
{
    sha256_oneshot(compress_portable, out, in, len);
}

void keybay_sha256(unsigned char out[32], const unsigned char *in, size_t len)
{
#if KEYBAY_HAVE_SHANI
    if (keybay_sha256_accelerated()) {
        sha256_oneshot(compress_shani, out, in, len);
        return;
    }
#endif
    sha256_oneshot(compress_portable, out, in, len);
}
