//! A hint to the CPU to start reading memory the dense list will score
//! soon: the rescored rows are scattered over the mapped vectors, and the
//! codes' scan crosses a 4 KiB page every four blocks, where the hardware's
//! own stream prefetcher stops. Hints change no result.

/// Bytes per cache line, the unit a hint fetches.
const LINE: usize = 64;

/// Asks for every cache line `values` touches (nothing where the target
/// has no hint).
#[inline(always)]
pub(super) fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start = values.as_ptr().cast::<i8>();
        let end = start.wrapping_add(std::mem::size_of_val(values));
        // From the line holding the first byte: `values` may start mid-line.
        let mut line = start.wrapping_sub(start as usize % LINE);
        while line < end {
            // SAFETY: every x86_64 CPU has SSE, and a prefetch reads
            // nothing: it cannot fault, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line) };
            line = line.wrapping_add(LINE);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}
