//! Hands back, once the gateway is up, the memory only its startup used: the heap pages
//! that parsing the config, opening the ledger and running its migrations freed, and the
//! mappings of the code and read-only data that did it. A resident gateway then holds what
//! serving needs.

/// Call once, when startup is over and before the first request.
pub fn release_startup_memory() {
    // SAFETY: mi_collect is mimalloc's own "return free pages to the OS" call; it takes no
    // pointers and is safe to call from any thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(target_os = "linux")]
    release_clean_pages();
}

/// Drops this process's mappings of its own machine code and read-only data (the
/// executable's read-and-run segment, and its read-only segments: constants, the tables
/// the loader read to relocate it). They are clean, read-only file mappings: the page
/// cache keeps them, and a page used again is mapped back by a minor fault. Only what
/// serving uses comes back; config parsing, migrations and the CLI do not. A mapping that
/// holds any page of the process's own (the relocated data the loader then made read-only,
/// resident or swapped) is never touched: a drop would lose it.
#[cfg(target_os = "linux")]
fn release_clean_pages() {
    for (start, end) in own_clean_ranges() {
        // SAFETY: the range is exactly one of our own read-only, private mappings of the
        // executable file, read from /proc/self/smaps with no anonymous or swapped page:
        // every page is the file's own bytes, so MADV_DONTNEED only unmaps pages that a
        // later access maps again with the same bytes.
        #[allow(unsafe_code)]
        let done =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        if done != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not release clean pages");
        }
    }
}

/// This process's clean read-only mappings of its own executable; none when /proc cannot say.
#[cfg(target_os = "linux")]
fn own_clean_ranges() -> Vec<(usize, usize)> {
    let (Ok(exe), Ok(smaps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/smaps"),
    ) else {
        return Vec::new();
    };
    clean_ranges(&smaps, &exe.to_string_lossy())
}

/// The `r-xp` and `r--p` mappings of `exe` in a `/proc/self/smaps` listing with no page of
/// the process's own (`Anonymous` and `Swap` both 0 kB), as address ranges.
#[cfg(target_os = "linux")]
fn clean_ranges(smaps: &str, exe: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    // The mapping being read: its range, and whether it is still a candidate.
    let mut current: Option<(usize, usize)> = None;
    let mut clean = true;
    let mut close = |current: &mut Option<(usize, usize)>, clean: bool| {
        if let Some(range) = current.take().filter(|_| clean) {
            found.push(range);
        }
    };
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some(field) = first.strip_suffix(':') {
            if matches!(field, "Anonymous" | "Swap") && fields.next() != Some("0") {
                clean = false;
            }
            continue;
        }
        // A mapping's header: `start-end perms offset dev inode path`.
        close(&mut current, clean);
        clean = true;
        let Some((start, end)) = first.split_once('-') else {
            continue;
        };
        let perms = fields.next();
        let path = fields.nth(3);
        if !matches!(perms, Some("r-xp" | "r--p")) || path != Some(exe) {
            continue;
        }
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        current = (end > start).then_some((start, end));
    }
    close(&mut current, clean);
    found
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn only_the_executables_clean_read_only_mappings_are_chosen() {
        let smaps = "\
55d0a0000000-55d0a0100000 r--p 00000000 fd:01 12 /usr/bin/trimgate
Rss:                 812 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0a0100000-55d0a0900000 r-xp 00100000 fd:01 12 /usr/bin/trimgate
Rss:                8456 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0a0900000-55d0a0980000 r--p 00900000 fd:01 12 /usr/bin/trimgate
Rss:                 500 kB
Anonymous:           500 kB
Swap:                  0 kB
55d0a0980000-55d0a0990000 r--p 00980000 fd:01 12 /usr/bin/trimgate
Rss:                   0 kB
Anonymous:             0 kB
Swap:                 64 kB
55d0a0a00000-55d0a0a10000 rw-p 00a00000 fd:01 12 /usr/bin/trimgate
Anonymous:             0 kB
7f0000000000-7f0000100000 r-xp 00028000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
Anonymous:            12 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
";
        assert_eq!(
            clean_ranges(smaps, "/usr/bin/trimgate"),
            vec![
                (0x55d0a0000000, 0x55d0a0100000),
                (0x55d0a0100000, 0x55d0a0900000)
            ]
        );
        assert!(clean_ranges(smaps, "/usr/bin/other").is_empty());
    }

    #[test]
    fn the_running_executables_code_is_found_and_released() {
        // Were the executable's mapping not found, the release would silently do nothing.
        let code = |ranges: Vec<(usize, usize)>| {
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            ranges
                .into_iter()
                .filter(|(start, _)| {
                    maps.lines().any(|l| {
                        l.starts_with(&format!("{start:x}-"))
                            && l.split_whitespace().nth(1) == Some("r-xp")
                    })
                })
                .collect::<Vec<_>>()
        };
        let before = code(own_clean_ranges());
        assert!(
            !before.is_empty(),
            "no r-xp mapping of /proc/self/exe found"
        );
        release_startup_memory();
        // The code runs on after the release, mapped back by the faults it takes, and the
        // mapping itself is still there.
        assert_eq!(code(own_clean_ranges()), before);
    }
}
