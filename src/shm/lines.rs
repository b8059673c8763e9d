//! A few cache lines of atomic words in a file of their own that the
//! processes of a job map: what a measurement needs to run the minimal
//! ring of the latency floor between two ranks (`examples/layers.rs`),
//! beside, not inside, the job segment.
//!
//! Every access is atomic (the words are only reached as [`AtomicU64`]),
//! so two processes, or threads, may use them at once in safe code.

use crate::error::{Error, ErrorClass, Result};
use crate::sync::AtomicU64;
use memmap2::MmapRaw;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Bytes of one line here: two cache lines, so that no adjacent-line
/// prefetch pulls a neighbour in (as crossbeam's `CachePadded`).
pub const LINE: usize = 128;

/// Words of one line.
pub const WORDS: usize = LINE / 8;

/// `lines` lines of [`WORDS`] atomic words each, mapped from a file.
#[derive(Debug)]
pub struct SharedLines {
    map: MmapRaw,
    _file: File,
    path: PathBuf,
    lines: usize,
}

impl SharedLines {
    /// Creates the file (`O_EXCL`, mode 0600) with `lines` zeroed lines
    /// and maps it.
    ///
    /// # Errors
    /// `NoMem` when it cannot be made.
    pub fn create(path: &Path, lines: usize) -> Result<SharedLines> {
        let file = super::os::create_private_file(path, lines.max(1) * LINE).map_err(nomem)?;
        SharedLines::map(file, path, lines)
    }

    /// Maps the file another process created with `lines` lines.
    ///
    /// # Errors
    /// `Other` when it cannot be opened or is not of that size.
    pub fn attach(path: &Path, lines: usize) -> Result<SharedLines> {
        let file = super::os::open_sized_file(path, lines.max(1) * LINE).map_err(other)?;
        SharedLines::map(file, path, lines)
    }

    fn map(file: File, path: &Path, lines: usize) -> Result<SharedLines> {
        let map = MmapRaw::map_raw(&file)
            .map_err(|e| nomem(format!("cannot map {}: {e}", path.display())))?;
        Ok(SharedLines {
            map,
            _file: file,
            path: path.to_path_buf(),
            lines,
        })
    }

    /// Removes the file's name (the mappings stay).
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// The number of lines.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Word `k` of line `line`.
    ///
    /// # Panics
    /// If `line >= lines()` or `k >= WORDS`.
    pub fn word(&self, line: usize, k: usize) -> &AtomicU64 {
        assert!(
            line < self.lines && k < WORDS,
            "word {k} of line {line} is outside"
        );
        let p = self.map.as_mut_ptr().wrapping_add(line * LINE + k * 8);
        // SAFETY: the mapping (page-aligned, so every word is 8-aligned)
        // holds `lines * LINE` bytes (checked at create / attach) and
        // lives as long as `self`; the bounds are asserted above; its bytes
        // are only ever reached as atomic words, here or in other
        // processes doing the same.
        unsafe { AtomicU64::from_ptr(p.cast::<u64>()) }
    }
}

fn nomem(what: String) -> Error {
    Error::new(ErrorClass::NoMem, what)
}

fn other(what: String) -> Error {
    Error::new(ErrorClass::Other, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    #[test]
    fn two_mappings_see_each_others_words_and_bad_shapes_are_refused() {
        let path = std::env::temp_dir().join(format!("shmpi-lines-test-{}", std::process::id()));
        let a = SharedLines::create(&path, 3).unwrap();
        assert!(SharedLines::create(&path, 3).is_err(), "O_EXCL");
        assert_eq!(
            SharedLines::attach(&path, 4).unwrap_err().class(),
            ErrorClass::Other
        );
        let b = SharedLines::attach(&path, 3).unwrap();
        a.unlink();
        assert_eq!(b.word(2, WORDS - 1).load(Ordering::Relaxed), 0, "zeroed");
        a.word(2, WORDS - 1).store(7, Ordering::Release);
        assert_eq!(b.word(2, WORDS - 1).load(Ordering::Acquire), 7);
        assert_eq!(b.lines(), 3);
        let outside = std::panic::catch_unwind(|| b.word(3, 0).load(Ordering::Relaxed));
        assert!(outside.is_err(), "line 3 of 3");
    }
}
