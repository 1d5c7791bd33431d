//! The `aam` binary: parse arguments, set up logging, run, exit with the right code.

fn main() {
    std::process::exit(aam::cli::main());
}

/// jemalloc instead of the system's malloc. `source add` hands each artifact
/// from the thread that reads git to the one writing the catalog and on to the
/// search index's: glibc's malloc made every free of another thread's block wait
/// for that thread's arena lock, and kept freed space in several arenas.
/// jemalloc returns such blocks through a per-thread cache (`source add`:
/// 12% faster at 10,000 artifacts, 16% at 100,000, with less memory at the peak).
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts: one arena (the threads' own caches
/// keep them from waiting on each other), and freed pages handed back to the
/// system within 200 ms instead of 10 s, so peak memory stays what the process
/// is using (a `source add` of 100,000 artifacts peaked 37 MB lower than with
/// jemalloc's defaults, and no slower).
#[cfg(unix)]
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_SETTINGS: &[u8; 46] = b"narenas:1,dirty_decay_ms:200,muzzy_decay_ms:0\0";
