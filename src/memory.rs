//! Hands back, once the gateway is up, the memory only its startup used: the heap pages
//! that parsing the config, opening the ledger and running its migrations freed, and the
//! mappings of the code that did it. A resident gateway then holds what serving needs.

/// Call once, when startup is over and before the first request.
pub fn release_startup_memory() {
    // SAFETY: mi_collect is mimalloc's own "return free pages to the OS" call; it takes no
    // pointers and is safe to call from any thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(target_os = "linux")]
    release_code_pages();
}

/// Drops this process's mappings of its own machine code (the executable's read-and-run
/// segment). The code is a clean, read-only file mapping: the page cache keeps it, and a
/// page that runs again is mapped back by a minor fault. Only the code that serving runs
/// comes back; config parsing, migrations and the CLI do not. Data segments are never
/// touched (their relocated pages are private copies a drop would lose).
#[cfg(target_os = "linux")]
fn release_code_pages() {
    for (start, end) in own_code_ranges() {
        // SAFETY: the range is exactly one of our own r-xp mappings of the executable file,
        // read from /proc/self/maps: private, never written (not writable), so MADV_DONTNEED
        // only unmaps pages that a later fault maps again with the same bytes.
        #[allow(unsafe_code)]
        let done =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        if done != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not release code pages");
        }
    }
}

/// This process's `r-xp` mappings of its own executable; none when /proc cannot say.
#[cfg(target_os = "linux")]
fn own_code_ranges() -> Vec<(usize, usize)> {
    let (Ok(exe), Ok(maps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/maps"),
    ) else {
        return Vec::new();
    };
    code_ranges(&maps, &exe.to_string_lossy())
}

/// The `r-xp` mappings of `exe` in a `/proc/self/maps` listing, as address ranges.
#[cfg(target_os = "linux")]
fn code_ranges(maps: &str, exe: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?;
            let path = fields.nth(3)?;
            if perms != "r-xp" || path != exe {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (end > start).then_some((start, end))
        })
        .collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn only_the_executables_code_mapping_is_chosen() {
        let maps = "\
55d0a0000000-55d0a0100000 r--p 00000000 fd:01 12 /usr/bin/trimgate
55d0a0100000-55d0a0900000 r-xp 00100000 fd:01 12 /usr/bin/trimgate
55d0a0900000-55d0a0a00000 r--p 00900000 fd:01 12 /usr/bin/trimgate
55d0a0a00000-55d0a0a10000 rw-p 00a00000 fd:01 12 /usr/bin/trimgate
7f0000000000-7f0000100000 r-xp 00028000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
";
        assert_eq!(
            code_ranges(maps, "/usr/bin/trimgate"),
            vec![(0x55d0a0100000, 0x55d0a0900000)]
        );
        assert!(code_ranges(maps, "/usr/bin/other").is_empty());
    }

    #[test]
    fn the_running_executables_code_is_found_and_released() {
        // Were the executable's mapping not found, the release would silently do nothing.
        let before = own_code_ranges();
        assert!(
            !before.is_empty(),
            "no r-xp mapping of /proc/self/exe found"
        );
        release_startup_memory();
        // The code runs on after the release, mapped back by the faults it takes, and the
        // mapping itself is still there.
        assert_eq!(own_code_ranges(), before);
    }
}
