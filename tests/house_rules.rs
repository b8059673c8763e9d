//! The house rules that a compiler does not check: `unsafe` only in the
//! low layers, each `unsafe` block with a SAFETY comment, and atomics only
//! through `crate::sync`.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn unsafe_lives_only_in_shm_ring_transport_and_capi() {
    let allowed = ["src/shm/", "src/ring/", "src/transport/", "src/capi/"];
    for (path, text) in sources() {
        if allowed.iter().any(|a| path.starts_with(a)) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("unsafe {")
                    && !code.contains("unsafe fn")
                    && !code.contains("unsafe impl"),
                "{path}:{}: unsafe outside the low layers",
                i + 1
            );
        }
    }
}

#[test]
fn every_unsafe_block_has_a_safety_comment_just_above() {
    for (path, text) in sources() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if !code.contains("unsafe {") && !code.contains("unsafe impl") {
                continue;
            }
            // The comment may sit up to a few lines above (multi-line
            // comments, a `let` split over lines, an attribute).
            let from = i.saturating_sub(8);
            let has = lines[from..=i].iter().any(|l| l.contains("SAFETY:"));
            assert!(has, "{path}:{}: unsafe without a // SAFETY: comment", i + 1);
        }
    }
}

#[test]
fn atomics_come_only_from_crate_sync() {
    for (path, text) in sources() {
        if path == "src/sync.rs" {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("std::sync::atomic") && !code.contains("core::sync::atomic"),
                "{path}:{}: atomics must come from crate::sync",
                i + 1
            );
        }
    }
}
