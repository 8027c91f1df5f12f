//! The heap of a process that writes an index many times (`memidx mcp`,
//! `--watch`): what it freed goes back to the system.
//!
//! A write allocates hundreds of megabytes across the pool's threads (the
//! sparse writer's arena, the tables it builds) and frees them at its end.
//! glibc keeps what a thread freed in that thread's arena, and each time a
//! large block is freed it raises its mmap threshold (up to 32 MB), so the
//! next large blocks land in the arenas too. A trim after each write
//! returns free pages, and a fixed threshold keeps large blocks in mappings
//! of their own: 200 `remember` calls took a server from 19 MB to 350 MB
//! with neither, 160 MB with the trim alone, 28 MB with both (its live heap
//! was 2 MB). bench/mcp_load.py shows no throughput lost.

/// Blocks from this size up get a mapping of their own, unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 4 << 20;

/// Fixes the allocator's mmap threshold: call it once, at the start of a
/// process that will write many times, before it starts threads.
pub fn keep_small() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning parameter of the allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Returns the free pages of every thread's arena to the system: call it
/// after a write.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory; it touches no live
    // allocation and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
