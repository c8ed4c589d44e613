//! What the fuzz targets share: a global allocator that counts live heap bytes, so a target can fail
//! when an input makes an engine hold more than its documented limits (libFuzzer's `-malloc_limit_mb`
//! catches one huge allocation, `-rss_limit_mb` the process; this catches many moderate ones per input,
//! whatever the allocator returns to the system).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

/// The largest single allocation allowed, as libFuzzer's `-malloc_limit_mb=256`. libFuzzer enforces
/// that flag through the sanitizers' malloc hooks, so a build without a sanitizer (`-s none`, 3-20x
/// faster) would not; this allocator refuses instead, and the refusal aborts the input as a crash
/// (`handle_alloc_error`: "memory allocation of N bytes failed").
pub const MAX_SINGLE_ALLOCATION: usize = 256 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_SINGLE_ALLOCATION {
            return std::ptr::null_mut();
        }
        let p = System.alloc(layout);
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_SINGLE_ALLOCATION {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_SINGLE_ALLOCATION {
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let live =
                    LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

/// Starts measuring: the peak is reset to what is live now.
pub fn reset_peak() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

/// Heap bytes allocated above `base` at the highest point since [`reset_peak`].
pub fn peak_above(base: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(base)
}

/// Fails the input if it made the code under test hold more than `limit` bytes at once.
pub fn check_peak(base: usize, limit: usize, what: &str) {
    let peak = peak_above(base);
    assert!(
        peak <= limit,
        "{what}: {peak} heap bytes held at once, over the bound of {limit}"
    );
}
