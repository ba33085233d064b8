// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_sha256.h - self-contained SHA-256 (FIPS 180-4) for Keybay.
 *
 * Uses the x86 SHA extensions (SHA-NI) when the running CPU has them and
 * falls back to a portable C implementation otherwise. No external
 * dependencies. C11.
 */
#ifndef KEYBAY_SHA256_H
#define KEYBAY_SHA256_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEYBAY_SHA256_DIGEST_LENGTH 32

/*
 * Returns 1 if keybay_sha256() will use the SHA-NI code path on this CPU
 * (SHA + SSE4.1 + SSSE3 reported by CPUID), 0 otherwise. The answer is
 * computed once and cached; safe to call from any thread.
 */
int keybay_sha256_accelerated(void);

/*
 * One-shot SHA-256 of in[0..len). `in` may be NULL only if len == 0.
 * `out` may overlap `in`: the digest is written only after all input has
 * been read. No alignment requirement on either pointer.
 */
void keybay_sha256(unsigned char out[KEYBAY_SHA256_DIGEST_LENGTH],
                   const unsigned char *in, size_t len);

/*
 * Internal / test hook: always uses the portable C compression function,
 * regardless of CPU features. Same contract as keybay_sha256().
 */
void keybay_sha256_portable(unsigned char out[KEYBAY_SHA256_DIGEST_LENGTH],
                            const unsigned char *in, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* KEYBAY_SHA256_H */
