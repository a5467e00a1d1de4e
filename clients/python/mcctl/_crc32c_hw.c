/* CRC-32C (Castagnoli, reflected, the checksum the mcctl master records per object) with x86 instructions.
 *
 * mcctl._crc32c compiles this file on first use with the system C compiler and calls it through ctypes,
 * which releases the GIL for the call, so threads verify in parallel. No Python header is needed.
 *
 * Two implementations, chosen once per process from cpuid:
 *   - SSE4.2: the crc32 instruction, 8 bytes at a time, three interleaved streams combined with pclmulqdq
 *     (the instruction's 3-cycle latency otherwise leaves two thirds of its throughput unused);
 *   - AVX-512 with VPCLMULQDQ: buffers of 256 bytes and more are folded 256 bytes a step with carry-less
 *     multiplies, the last 16 folded bytes and the tail go through the crc32 instruction.
 * Every function is compiled for its own target, so the library loads on any x86-64 CPU and
 * mcctl_crc32c_features() tells the caller what this CPU can run; mcctl_crc32c needs at least SSE4.2.
 */
#if !defined(__x86_64__)
#error "mcctl's accelerated CRC32C is for x86-64 only"
#endif

#include <cpuid.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u
#define FEATURE_SSE42 1
#define FEATURE_AVX512_VPCLMUL 2

/* x^n mod P, reflected (bit 31 is x^0). Plain C: runs before any feature check. */
static uint32_t x_pow_mod(uint64_t n) {
    uint32_t v = 0x80000000u;
    while (n--)
        v = (v & 1) ? (v >> 1) ^ CRC32C_POLY_REFLECTED : v >> 1;
    return v;
}

/* Combining streams: a register r advanced over n zero bytes is crc32(0, clmul(r, x^(8n-33) mod P)). */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static uint64_t shift_long, shift_long2, shift_short, shift_short2;

/* Folding 128-bit lanes forward by F bits: the lane's first 8 bytes are multiplied by x^(F+63) mod P,
 * the last 8 by x^(F-1) mod P (the -1: a reflected carry-less product comes out multiplied by x). */
typedef struct { uint64_t first, second; } fold_constants;
static fold_constants fold_2048, fold_1536, fold_1024, fold_512, fold_384, fold_256, fold_128;

static int features;

static fold_constants fold_by(uint64_t bits) {
    fold_constants k = {(uint64_t)x_pow_mod(bits + 63) << 32, (uint64_t)x_pow_mod(bits - 1) << 32};
    return k;
}

static int detect_features(void) {
    unsigned a, b, c, d;
    int found = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int sse42 = (c >> 20) & 1, pclmul = (c >> 1) & 1, osxsave = (c >> 27) & 1;
    if (sse42 && pclmul)
        found |= FEATURE_SSE42;
    if (!(found & FEATURE_SSE42) || !osxsave || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return found;
    int avx512 = ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1); /* F, BW, VL */
    int vpclmul = (c >> 10) & 1;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if (avx512 && vpclmul && (lo & 0xE6) == 0xE6) /* the OS saves SSE, AVX, opmask and ZMM state */
        found |= FEATURE_AVX512_VPCLMUL;
    return found;
}

__attribute__((constructor)) static void init(void) {
    features = detect_features();
    shift_long = x_pow_mod(8ull * LONG_BLOCK - 33);
    shift_long2 = x_pow_mod(16ull * LONG_BLOCK - 33);
    shift_short = x_pow_mod(8ull * SHORT_BLOCK - 33);
    shift_short2 = x_pow_mod(16ull * SHORT_BLOCK - 33);
    fold_2048 = fold_by(2048);
    fold_1536 = fold_by(1536);
    fold_1024 = fold_by(1024);
    fold_512 = fold_by(512);
    fold_384 = fold_by(384);
    fold_256 = fold_by(256);
    fold_128 = fold_by(128);
}

int mcctl_crc32c_features(void) { return features; }

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2,pclmul")))
static inline uint32_t shift_register(uint32_t r, uint64_t constant) {
    __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)r), _mm_cvtsi64_si128((long long)constant), 0x00);
    return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(product));
}

/* Three streams of `block` bytes each, `rounds` times; `r` is the raw (not inverted) register. */
__attribute__((target("sse4.2,pclmul")))
static uint32_t three_streams(uint32_t r, const uint8_t **pp, size_t *lenp, size_t block, uint64_t k1, uint64_t k2) {
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len >= 3 * block) {
        uint64_t c0 = r, c1 = 0, c2 = 0;
        const uint8_t *end = p + block;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + block));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
            p += 8;
        } while (p < end);
        r = shift_register((uint32_t)c0, k2) ^ shift_register((uint32_t)c1, k1) ^ (uint32_t)c2;
        p += 2 * block;
        len -= 3 * block;
    }
    *pp = p;
    *lenp = len;
    return r;
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t raw_sse42(uint32_t r, const uint8_t *p, size_t len) {
    r = three_streams(r, &p, &len, LONG_BLOCK, shift_long, shift_long2);
    r = three_streams(r, &p, &len, SHORT_BLOCK, shift_short, shift_short2);
    uint64_t c = r;
    for (; len >= 8; p += 8, len -= 8)
        c = _mm_crc32_u64(c, load64(p));
    r = (uint32_t)c;
    for (; len; p++, len--)
        r = _mm_crc32_u8(r, *p);
    return r;
}

uint32_t mcctl_crc32c_sse42(uint32_t crc, const void *buf, size_t len) {
    return ~raw_sse42(~crc, (const uint8_t *)buf, len);
}

#define AVX512_TARGET __attribute__((target("sse4.2,pclmul,avx512f,avx512bw,avx512vl,vpclmulqdq")))

AVX512_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

AVX512_TARGET static inline __m128i fold128(__m128i x, fold_constants k, __m128i next) {
    __m128i kk = _mm_set_epi64x((long long)k.second, (long long)k.first);
    return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11), next, 0x96);
}

AVX512_TARGET static inline __m512i broadcast(fold_constants k) {
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k.second, (long long)k.first));
}

/* len >= 256. */
AVX512_TARGET static uint32_t raw_avx512(uint32_t r, const uint8_t *p, size_t len) {
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)r))); /* the register enters the first 4 bytes */
    p += 256;
    len -= 256;
    __m512i k = broadcast(fold_2048);
    for (; len >= 256; p += 256, len -= 256) {
        x0 = fold512(x0, k, _mm512_loadu_si512(p));
        x1 = fold512(x1, k, _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k, _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k, _mm512_loadu_si512(p + 192));
    }
    __m512i x = fold512(x0, broadcast(fold_1536), fold512(x1, broadcast(fold_1024), fold512(x2, broadcast(fold_512), x3)));
    k = broadcast(fold_512);
    for (; len >= 64; p += 64, len -= 64)
        x = fold512(x, k, _mm512_loadu_si512(p));
    __m128i y = fold128(_mm512_extracti32x4_epi32(x, 0), fold_384,
                        fold128(_mm512_extracti32x4_epi32(x, 1), fold_256,
                                fold128(_mm512_extracti32x4_epi32(x, 2), fold_128, _mm512_extracti32x4_epi32(x, 3))));
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(y));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(y, 1));
    return raw_sse42((uint32_t)c, p, len);
}

uint32_t mcctl_crc32c(uint32_t crc, const void *buf, size_t len) {
    if ((features & FEATURE_AVX512_VPCLMUL) && len >= 256)
        return ~raw_avx512(~crc, (const uint8_t *)buf, len);
    return ~raw_sse42(~crc, (const uint8_t *)buf, len);
}
