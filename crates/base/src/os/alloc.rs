//! The allocator's tuning for the long-lived service.

/// A query at 10^5 memories allocates megabytes of per-memory scores and frees them. By default
/// glibc maps blocks that large afresh each time and hands freed heap back to the system, so
/// every query paid page faults and zeroing (measured: docs/performance.md, "2026-11-27, midday:
/// 10^5 memories, second session", "Freed query buffers kept"). Keep up to 64 MB freed. Other
/// allocators (macOS's, musl's) are left as they are: their defaults do not unmap such blocks on
/// every free, and their tuning knobs are not these.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before the service's threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Hand the memory kept freed (see [`keep_freed_memory`]) back to the system, from every arena:
/// the service calls it once it has been quiet a while, so what a burst of work (an import, a
/// query at 10^5) freed stays for the burst and does not stay for the day.
pub fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system; any thread may call it.
    unsafe {
        libc::malloc_trim(0);
    }
}
