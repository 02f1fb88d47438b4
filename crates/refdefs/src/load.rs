//! Reading the definition files (from a directory or embedded at compile time) and parsing them.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::check::{Code, Diagnostic};

/// The definition files of a refdefs directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `regions.toml`.
    Regions,
    /// `findings.toml`.
    Findings,
    /// `modifiers.toml` (modifiers and probabilities).
    Modifiers,
    /// `changes.toml`.
    Changes,
    /// `sources/cxas_classes.toml`.
    CxasClasses,
    /// `sources/imagenome_boxes.toml`.
    ImagenomeBoxes,
    /// `context.toml`: the ConText triggers of the rules extractor (optional in a directory:
    /// the built-in file stands in for a missing one).
    Context,
}

impl FileKind {
    /// All files, in load order.
    pub const ALL: [FileKind; 7] = [
        Self::Regions,
        Self::Findings,
        Self::Modifiers,
        Self::Changes,
        Self::CxasClasses,
        Self::ImagenomeBoxes,
        Self::Context,
    ];

    /// Path relative to the refdefs directory.
    pub fn path(self) -> &'static str {
        match self {
            Self::Regions => "regions.toml",
            Self::Findings => "findings.toml",
            Self::Modifiers => "modifiers.toml",
            Self::Changes => "changes.toml",
            Self::CxasClasses => "sources/cxas_classes.toml",
            Self::ImagenomeBoxes => "sources/imagenome_boxes.toml",
            Self::Context => "context.toml",
        }
    }

    /// Whether a directory may leave the file out (the built-in one is used then). Definition
    /// directories written before the file existed stay valid.
    pub fn optional(self) -> bool {
        self == Self::Context
    }

    fn embedded_text(self) -> &'static str {
        match self {
            Self::Regions => include_str!("../../../refdefs/regions.toml"),
            Self::Findings => include_str!("../../../refdefs/findings.toml"),
            Self::Modifiers => include_str!("../../../refdefs/modifiers.toml"),
            Self::Changes => include_str!("../../../refdefs/changes.toml"),
            Self::CxasClasses => include_str!("../../../refdefs/sources/cxas_classes.toml"),
            Self::ImagenomeBoxes => include_str!("../../../refdefs/sources/imagenome_boxes.toml"),
            Self::Context => include_str!("../../../refdefs/context.toml"),
        }
    }
}

/// One definition file's text and the name diagnostics use for it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Which file this is.
    pub kind: FileKind,
    /// Name shown in diagnostics (the path as given, or `<embedded>/...`).
    pub display: String,
    /// File content.
    pub text: String,
}

impl SourceFile {
    /// The file as built into this crate.
    fn embedded(kind: FileKind) -> SourceFile {
        SourceFile {
            kind,
            display: format!("<embedded>/{}", kind.path()),
            text: kind.embedded_text().to_string(),
        }
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        1 + self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
    }
}

/// The texts of all definition files.
#[derive(Debug, Clone)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    /// Reads the files under `dir`; each unreadable file becomes an `io` diagnostic, except an
    /// absent optional file, for which the built-in one is used.
    pub fn read_dir(dir: &Path) -> Result<Sources, Vec<Diagnostic>> {
        let mut files = Vec::with_capacity(FileKind::ALL.len());
        let mut problems = Vec::new();
        for kind in FileKind::ALL {
            let path = dir.join(kind.path());
            let display = path.display().to_string();
            if kind.optional() && !path.exists() {
                files.push(SourceFile::embedded(kind));
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(text) => files.push(SourceFile {
                    kind,
                    display,
                    text,
                }),
                Err(err) => problems.push(Diagnostic {
                    file: display,
                    line: 0,
                    code: Code::Io,
                    message: format!("cannot read file: {err}"),
                    hint: format!(
                        "a refdefs directory holds {}",
                        FileKind::ALL
                            .iter()
                            .filter(|k| !k.optional())
                            .map(|k| k.path())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            }
        }
        if problems.is_empty() {
            Ok(Sources { files })
        } else {
            Err(problems)
        }
    }

    /// The definitions shipped with this build (the repository's `refdefs/` at compile time).
    pub fn embedded() -> Sources {
        let files = FileKind::ALL
            .into_iter()
            .map(SourceFile::embedded)
            .collect();
        Sources { files }
    }

    /// Sources from `(file path, text)` pairs as [`Sources::texts`] lists them (e.g. a copy
    /// stored in the lake); `None` unless every file is there (an optional file left out is
    /// the built-in one).
    pub fn from_texts(texts: &[(String, String)]) -> Option<Sources> {
        let files = FileKind::ALL
            .into_iter()
            .map(|kind| {
                texts
                    .iter()
                    .find(|(path, _)| path == kind.path())
                    .map(|(path, text)| SourceFile {
                        kind,
                        display: format!("<lake>/{path}"),
                        text: text.clone(),
                    })
                    .or_else(|| kind.optional().then(|| SourceFile::embedded(kind)))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Sources { files })
    }

    /// `(file path, text)` of every file.
    pub fn texts(&self) -> Vec<(String, String)> {
        self.files
            .iter()
            .map(|f| (f.kind.path().to_string(), f.text.clone()))
            .collect()
    }

    /// One file.
    pub fn file(&self, kind: FileKind) -> &SourceFile {
        // `files` always holds all kinds in `FileKind::ALL` order (both constructors ensure it).
        &self.files[kind as usize]
    }
}

/// Parses one file, turning a TOML or shape error into a diagnostic with its line.
pub(crate) fn parse<T: DeserializeOwned>(file: &SourceFile) -> Result<T, Diagnostic> {
    toml::from_str(&file.text).map_err(|err| {
        let message = err.message().trim().to_string();
        let line = err.span().map_or(1, |span| file.line_of(span.start));
        let (code, hint) = classify(&message);
        Diagnostic {
            file: file.display.clone(),
            line,
            code,
            message,
            hint,
        }
    })
}

fn classify(message: &str) -> (Code, String) {
    if message.starts_with("missing field") {
        (
            Code::MissingField,
            "add the field to this table; refdefs/README.md lists the required fields".into(),
        )
    } else if message.starts_with("unknown field") {
        (
            Code::UnknownField,
            "check the spelling; refdefs/README.md lists every field".into(),
        )
    } else if message.starts_with("unknown variant") || message.starts_with("invalid type") {
        (
            Code::InvalidValue,
            "use one of the values listed in the message".into(),
        )
    } else {
        (Code::Syntax, "fix the TOML syntax at this line".into())
    }
}
