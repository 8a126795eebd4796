/* kernel.h: BL_KERNEL, for a numeric inner loop that the sanitizer build leaves uninstrumented so it still vectorises. */
#ifndef BL_BASE_KERNEL_H
#define BL_BASE_KERNEL_H

/*
 * A BL_KERNEL function is a plain loop over buffers its caller sized from
 * the very counts it passes (w, h, channels, n): no allocation, no early
 * exit, and no index read from the data unless the loop itself clamps it to
 * its table's size (the simulated camera's shading: its table lookups are
 * AVX gathers, which AddressSanitizer does not check in any case). Under
 * AddressSanitizer every element access of such a loop is checked, which
 * stops it vectorising: the kernels marked so (image blur, frame averaging,
 * the shading) were about a third of a sanitized run's CPU time and check
 * nothing the bounds their callers state. Their callers, the allocations
 * and the code around them stay sanitized, and so does every other loop.
 */
#if defined(__SANITIZE_ADDRESS__)
#define BL_KERNEL __attribute__((no_sanitize("address,undefined")))
#else
#define BL_KERNEL
#endif

#endif
