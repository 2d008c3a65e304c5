//! A full disk under the ledger, for real: the gateway runs in its own mount namespace
//! (`unshare -rm`) with the ledger on a small tmpfs, which the test fills and frees
//! through `/proc/<pid>/root`. Requests are served throughout; lost rows are reported
//! and counted; writing resumes once there is space again. A disk that is already full
//! at start gives the startup warning and a gateway that serves without a ledger.
//!
//! Needs unprivileged user namespaces. Where they are not allowed the tests say so and
//! pass, unless `TRIMGATE_REQUIRE_DISK_FULL=1` (set by `scripts/test.sh`) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use gateway_core::ledger;
use gateway_core::mock::MockConfig;
use serde_json::json;

fn namespaces_work() -> bool {
    let works = Command::new("unshare")
        .args(["-rm", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        assert!(
            std::env::var("TRIMGATE_REQUIRE_DISK_FULL").as_deref() != Ok("1"),
            "unshare -rm is not allowed here, and TRIMGATE_REQUIRE_DISK_FULL=1"
        );
        eprintln!("SKIPPED: unshare -rm is not allowed on this machine");
    }
    works
}

/// The gateway with its ledger on a fresh tmpfs of `size` at `<dir>/disk`, filled first
/// when `full`.
fn spawn_on_tmpfs(mock_url: &str, size: &str, full: bool) -> (Gateway, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let fill = if full {
        r#" && (dd if=/dev/zero of="$0/filler" bs=64k 2>/dev/null || true)"#
    } else {
        ""
    };
    let script = format!(r#"mount -t tmpfs -o size={size} tmpfs "$0"{fill} && exec "$@""#);
    let url = ledger::sqlite_url(&disk.join("ledger.sqlite"));
    let config = mock_config(mock_url, "", &format!("[ledger]\nurl = \"{url}\"\n"));
    let disk_arg = disk.to_str().unwrap().to_owned();
    let gw = Gateway::spawn_wrapped(
        &config,
        &[],
        &["unshare", "-rm", "sh", "-c", &script, &disk_arg],
        "127.0.0.1:0",
        dir,
    );
    (gw, disk)
}

/// The tmpfs as the test sees it: through the gateway's own root.
fn inside(gw: &Gateway, disk: &Path) -> PathBuf {
    PathBuf::from(format!("/proc/{}/root", gw.child.id())).join(disk.strip_prefix("/").unwrap())
}

/// A copy of the ledger's files, opened from this namespace. (SQLite resolves the
/// `/proc/<pid>/root` link to a path in the caller's namespace, so the live file cannot be
/// opened through it.)
fn snapshot(root: &Path) -> (tempfile::TempDir, String) {
    let copy = tempfile::tempdir().unwrap();
    for name in ["ledger.sqlite", "ledger.sqlite-wal"] {
        let from = root.join(name);
        if from.exists() {
            std::fs::copy(&from, copy.path().join(name)).unwrap();
        }
    }
    let url = ledger::sqlite_url(&copy.path().join("ledger.sqlite"));
    (copy, url)
}

fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while f.write_all(&block).is_ok() {}
    let _ = f.flush();
}

async fn chat(gw: &Gateway, text: &str) {
    let body = json!({"model": "gpt-5", "messages": [{"role": "user", "content": text}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let _ = res.text().await.unwrap();
}

async fn metric(gw: &Gateway, name: &str) -> f64 {
    let text = metrics_text(&gw.url).await;
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_disk_that_fills_up_loses_rows_loudly_and_writing_resumes_when_freed() {
    if !namespaces_work() {
        return;
    }
    let mock = start_mock(MockConfig::default()).await;
    let (mut gw, disk) = spawn_on_tmpfs(&mock.url, "4m", false);
    let root = inside(&gw, &disk);
    chat(&gw, "before the disk fills").await;

    let filler = root.join("filler");
    fill(&filler);
    // Every request is still served while rows cannot be written.
    for i in 0..40 {
        chat(
            &gw,
            &format!("while the disk is full {i} {}", "x".repeat(4000)),
        )
        .await;
    }
    assert!(
        eventually(Duration::from_secs(10), || gw
            .stderr()
            .contains("ledger write failed"))
        .await,
        "{}",
        gw.stderr()
    );
    assert!(
        gw.stderr().contains("disk"),
        "the warning names the cause: {}",
        gw.stderr()
    );
    assert!(metric(&gw, "trimgate_ledger_write_errors_total").await >= 1.0);

    // Space again: new rows are written by the same gateway, no restart.
    std::fs::remove_file(&filler).unwrap();
    let mut rows = 0;
    for _ in 0..50 {
        chat(&gw, "after the disk was freed").await;
        // Past the writer's gathering time, then read a copy of the files.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let (copy, url) = snapshot(&root);
        let pool = ledger::open(&url).await.unwrap();
        rows = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM requests")
            .fetch_one(&pool)
            .await
            .unwrap();
        let check: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(check, "ok");
        pool.close().await;
        drop(copy);
        if rows >= 1 {
            break;
        }
    }
    assert!(rows >= 1, "rows are written again: {}", gw.stderr());
    gw.signal("TERM");
    assert!(gw.wait_exit(Duration::from_secs(15)).is_some());
}

#[tokio::test]
async fn a_disk_full_at_start_serves_without_a_ledger() {
    if !namespaces_work() {
        return;
    }
    let mock = start_mock(MockConfig::default()).await;
    let (gw, _disk) = spawn_on_tmpfs(&mock.url, "1m", true);
    chat(&gw, "served anyway").await;
    let stderr = gw.stderr();
    assert!(stderr.contains("WARNING"), "{stderr}");
    assert!(stderr.contains("the ledger is disabled"), "{stderr}");
}
