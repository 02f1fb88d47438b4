//! Helpers: the shipped refdefs directory and edited copies of it.

use std::path::{Path, PathBuf};

use cxrlake_refdefs::{Code, Diagnostic, check};

/// The repository's `refdefs/` directory.
pub fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../refdefs")
}

/// A temporary copy of the shipped definitions.
pub struct Copy {
    pub dir: tempfile::TempDir,
}

impl Copy {
    pub fn new() -> Copy {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("sources")).expect("mkdir sources");
        for file in cxrlake_refdefs::FileKind::ALL {
            std::fs::copy(
                shipped_dir().join(file.path()),
                dir.path().join(file.path()),
            )
            .expect("copy refdefs file");
        }
        Copy { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Replaces the single occurrence of `old` by `new` in `file`; returns the 1-based line of the edit.
    pub fn edit(&self, file: &str, old: &str, new: &str) -> usize {
        let path = self.path(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text.matches(old).count(),
            1,
            "{old:?} must occur exactly once in {file}"
        );
        let at = text.find(old).expect("found");
        let line = 1
            + text[..at].matches('\n').count()
            + new[..new.find(|c| c != '\n').unwrap_or(0)]
                .matches('\n')
                .count();
        std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
        line
    }

    /// Appends text to a file; returns the 1-based line where the appended text starts.
    pub fn append(&self, file: &str, extra: &str) -> usize {
        let path = self.path(file);
        let mut text = std::fs::read_to_string(&path).expect("read");
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let line = 1 + text.matches('\n').count();
        text.push_str(extra);
        std::fs::write(&path, text).expect("write");
        line
    }

    pub fn check(&self) -> Vec<Diagnostic> {
        check(self.dir.path())
    }
}

/// Asserts exactly one diagnostic with `code` at `file:line` and returns it.
pub fn expect_one(diagnostics: &[Diagnostic], code: Code, file: &str, line: usize) -> Diagnostic {
    let rendered: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(
        diagnostics.len(),
        1,
        "expected one diagnostic, got:\n{}",
        rendered.join("\n")
    );
    let d = diagnostics[0].clone();
    assert_eq!(d.code, code, "{d}");
    assert!(d.file.ends_with(file), "{d}");
    assert_eq!(d.line, line, "{d}");
    assert!(!d.hint.is_empty(), "{d}");
    d
}
