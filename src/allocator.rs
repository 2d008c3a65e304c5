//! mimalloc as the process's allocator, asked the cheapest way for each allocation.
//!
//! The `mimalloc` crate's adapter passes every request to `mi_malloc_aligned`, whose fast
//! path covers only small blocks that happen to be aligned: every allocation over 1 KiB
//! (hyper's buffers, header maps, bodies) took the over-allocating generic path, about 13
//! of a proxied request's 56 allocations. Every mimalloc block is aligned to at least a
//! word, so an allocation that asks no more than that goes through plain `mi_malloc`;
//! larger alignments (tokio's cache-padded cells) still go through the aligned calls.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// What every mimalloc block is aligned to, whatever its size.
const WORD: usize = std::mem::size_of::<usize>();

pub struct Mimalloc;

// SAFETY: each method hands mimalloc a layout's size (and, past a word, its alignment);
// mimalloc returns null or a block of at least that size aligned to at least a word, and
// `mi_free`/`mi_realloc*` take any block mimalloc gave out, whichever call made it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_malloc(layout.size()).cast()
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_zalloc(layout.size()).cast()
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr.cast::<c_void>());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
        }
    }
}

#[cfg(test)]
mod tests {
    /// The binary's tests run on this allocator (it is the global one): every size and
    /// alignment asked comes back aligned, and kept bytes survive a reallocation.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes() {
        for size in [1usize, 7, 8, 24, 40, 1000, 1025, 4096, 70_000, 3 << 20] {
            for align in [1usize, 2, 4, 8, 16, 64, 128, 4096] {
                let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is written within it and freed once.
                #[allow(unsafe_code)]
                unsafe {
                    let p = std::alloc::alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xa5, size);
                    let grown = std::alloc::realloc(p, layout, size * 2 + 8);
                    assert_eq!(grown as usize % align, 0, "size {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == 0xa5));
                    std::alloc::dealloc(
                        grown,
                        std::alloc::Layout::from_size_align(size * 2 + 8, align).unwrap(),
                    );
                    let zeroed = std::alloc::alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0);
                    assert!((0..size).all(|i| *zeroed.add(i) == 0));
                    std::alloc::dealloc(zeroed, layout);
                }
            }
        }
    }
}
