//! The wall clock as the ledger, the cache and the window count it: Unix milliseconds.

use std::time::SystemTime;

/// A time as Unix milliseconds; 0 before 1970.
pub fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Now, as Unix milliseconds.
pub fn now_ms() -> i64 {
    unix_ms(SystemTime::now())
}
