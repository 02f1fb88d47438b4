//! The user guide cannot rot: every command of README.md and `docs/**/*.md` in a fenced block
//! tagged `sh` runs here, page by page, as a user would run it from a clone's root after
//! `./scripts/run` (blocks tagged `sh no-run` need what a test machine lacks: an LLM server, a
//! cluster, an object store, hours; their `cxrlake` commands are parsed as the binary parses
//! them, their `--set` keys checked and the scripts they name found, so a renamed flag or key
//! fails here too). Each page runs its blocks in order, as one bash script with `set -e`, in its
//! own copy of one working folder built once per test process:
//!
//! - `corpus/`, `lake/`, `release/`, `flavours/`: `cxrlake demo` on a small synthetic corpus
//!   (every stage, the four flavours, the release and the flavours' exports);
//! - `refdefs/`, `templates/`, `prompts/`: copies of the repository's folders;
//! - `data/`: what the guide calls the user's own files, `/data/…` in its commands:
//!   `mimic-cxr` (the reports), `mimic-cxr-jpg` (the CSVs), `chest-imagenome`, `cxas` (the
//!   corpus's files split as the real datasets are) and `mimic-ext-cxr-qba/1.0.0` (the release).
//!
//! The configuration reference of `docs/configuration.md` is compared with the one the code
//! renders (`cxrlake::reference::settings_table`); `CXRLAKE_BLESS=1` rewrites it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{copy_dir, ok};

/// The repository's root.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Studies in the guide's synthetic corpus: enough for every split and subset the guide's
/// commands select to be non-empty.
const STUDIES: &str = "24";

/// The working folder every page starts from (built once per process).
fn fixture() -> &'static Path {
    static FIXTURE: OnceLock<tempfile::TempDir> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let work = dir.path();
            ok(crate::command()
                .current_dir(work)
                .args(["--lake", "lake", "-q", "demo", "--studies", STUDIES])
                .args(["--corpus", "corpus", "--release", "release"])
                .args(["--flavours", "flavours"])
                .output()
                .expect("run cxrlake demo"));
            for folder in ["refdefs", "templates", "prompts"] {
                copy_dir(&repository().join(folder), &work.join(folder));
            }
            let corpus = work.join("corpus");
            let data = work.join("data");
            copy_dir(&corpus.join("files"), &data.join("mimic-cxr/files"));
            for entry in std::fs::read_dir(&corpus).expect("corpus") {
                let path = entry.expect("entry").path();
                if path.to_string_lossy().ends_with(".csv.gz") {
                    let name = path.file_name().expect("name");
                    std::fs::create_dir_all(data.join("mimic-cxr-jpg")).expect("mkdir");
                    std::fs::copy(&path, data.join("mimic-cxr-jpg").join(name)).expect("copy");
                }
            }
            copy_dir(&corpus.join("imagenome"), &data.join("chest-imagenome"));
            copy_dir(&corpus.join("cxas"), &data.join("cxas"));
            copy_dir(&work.join("release"), &data.join("mimic-ext-cxr-qba/1.0.0"));
            dir
        })
        .path()
}

/// A fenced block of a page: its info string and its text.
struct Block {
    info: String,
    text: String,
    line: usize,
}

/// The fenced blocks of a Markdown text (``` fences; the info string is what follows them).
fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (number, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match (&mut open, trimmed.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    text: String::new(),
                    line: number + 1,
                })
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => {
                out.extend(open.take());
            }
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed ``` fence");
    out
}

/// Runs the `sh` blocks of the page `page` (relative to the repository) in a copy of the
/// fixture; returns how many blocks ran.
fn run_page(page: &str) -> usize {
    let markdown = std::fs::read_to_string(repository().join(page)).expect("page");
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    copy_dir(fixture(), &work);
    let data = format!("{}/data/", work.display());
    let mut script = String::from(
        "set -eo pipefail\nset -x\n\
         trap 'echo \"guide command failed (exit $?) at line $LINENO: $BASH_COMMAND\" >&2' ERR\n",
    );
    let mut ran = 0;
    for block in blocks(&markdown) {
        match block.info.as_str() {
            "sh" => {
                script.push_str(&format!("# {page}:{}\n", block.line));
                script.push_str(&block.text.replace("/data/", &data));
                ran += 1;
            }
            "sh no-run" => {}
            info if info.starts_with("sh") || info == "bash" || info == "shell" => {
                panic!(
                    "{page}:{}: a shell block is tagged `sh` (run by this test) or `sh no-run`, not `{info}`",
                    block.line
                )
            }
            _ => {}
        }
    }
    if ran == 0 {
        return 0;
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_cxrlake"));
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .env_remove("CXRLAKE_ENGINE")
        .output()
        .expect("run bash");
    assert!(
        output.status.success(),
        "{page}: a command of the guide failed\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    ran
}

/// Every Markdown page of the guide: README.md and `docs/**/*.md`.
fn pages() -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("docs") {
            let entry = entry.expect("entry");
            let name = format!("{prefix}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().expect("type").is_dir() {
                walk(&entry.path(), &name, out);
            } else if name.ends_with(".md") {
                out.push(name);
            }
        }
    }
    let mut out = vec!["README.md".to_string()];
    walk(&repository().join("docs"), "docs", &mut out);
    out.sort();
    out
}

/// One test per page (the pages run in parallel); `all_pages_are_tested` keeps the list whole.
macro_rules! page_tests {
    ($($name:ident => $page:literal,)*) => {
        $(#[test]
        fn $name() {
            run_page($page);
        })*
        const TESTED: &[&str] = &[$($page),*];
    };
}

page_tests! {
    readme => "README.md",
    docs_index => "docs/README.md",
    concepts => "docs/concepts.md",
    stages => "docs/stages.md",
    mimic_cxr => "docs/mimic-cxr.md",
    release => "docs/release.md",
    definitions_and_templates => "docs/definitions-and-templates.md",
    flavours => "docs/flavours/README.md",
    flavour_gemex => "docs/flavours/gemex.md",
    flavour_mimic_cxr_vqa => "docs/flavours/mimic-cxr-vqa.md",
    flavour_rexvqa => "docs/flavours/rexvqa.md",
    flavour_givcxr => "docs/flavours/givcxr.md",
    evaluation => "docs/evaluation.md",
    llm => "docs/llm.md",
    distributed => "docs/distributed.md",
    configuration => "docs/configuration.md",
    troubleshooting => "docs/troubleshooting.md",
    testing => "docs/testing.md",
    architecture => "docs/architecture.md",
    design => "docs/design.md",
}

/// The words of a shell command line: whitespace-separated, `'…'` and `"…"` quoting, no
/// expansion (the guide's commands need no more).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    assert!(quote.is_none(), "an unclosed quote in: {line}");
    out.extend(word);
    out
}

/// The commands of a block: lines joined over `\` continuations, comments (` #…`) and a
/// trailing `&` removed, leading `NAME=value` assignments dropped.
fn commands(block: &str) -> Vec<Vec<String>> {
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(|line| {
            let line = line.split(" #").next().unwrap_or("").trim();
            let line = line.strip_suffix('&').unwrap_or(line).trim();
            let mut words = words(line);
            let assignments = words
                .iter()
                .take_while(|w| w.contains('=') && !w.starts_with('-'))
                .count();
            words.drain(..assignments);
            words
        })
        .filter(|words| !words.is_empty() && !words[0].starts_with('#'))
        .collect()
}

/// The `sh no-run` blocks cannot run here, but their `cxrlake` commands must still be ones the
/// binary accepts: each parses with the CLI's own parser, each `--set KEY=VALUE` names a setting
/// that takes the value, and each script named is in `scripts/` and executable.
#[test]
fn commands_that_do_not_run_here_still_parse() {
    use clap::Parser;
    use std::os::unix::fs::PermissionsExt;
    let mut checked = 0;
    for page in pages() {
        let markdown = std::fs::read_to_string(repository().join(&page)).expect("page");
        for block in blocks(&markdown).iter().filter(|b| b.info == "sh no-run") {
            for command in commands(&block.text) {
                let at = format!("{page}:{}: `{}`", block.line, command.join(" "));
                let program = command[0].trim_start_matches("./");
                if program == "cxrlake" {
                    if let Err(e) = cxrlake::cli::Cli::try_parse_from(&command) {
                        panic!("{at} does not parse:\n{e}");
                    }
                    let mut settings = cxrlake_lake::Settings::default();
                    for pair in command.windows(2).filter(|w| w[0] == "--set") {
                        let (key, value) = pair[1]
                            .split_once('=')
                            .unwrap_or_else(|| panic!("{at}: --set {} is not KEY=VALUE", pair[1]));
                        if let Err(e) = settings.set(key, value) {
                            panic!("{at}: --set {key}={value}: {e}");
                        }
                    }
                    checked += 1;
                } else if program.starts_with("scripts/") {
                    let mode = std::fs::metadata(repository().join(program))
                        .unwrap_or_else(|e| panic!("{at}: {program}: {e}"))
                        .permissions()
                        .mode();
                    assert!(mode & 0o111 != 0, "{at}: {program} is not executable");
                    checked += 1;
                }
            }
        }
    }
    assert!(
        checked >= 30,
        "only {checked} commands checked: did the blocks move?"
    );
}

#[test]
fn a_command_with_a_renamed_flag_does_not_parse() {
    use clap::Parser;
    let good =
        &commands("cxrlake run --llm-endpoint http://127.0.0.1:8080/v1 \\\n  --model m &  # x\n")
            [0];
    assert_eq!(good.len(), 6, "{good:?}");
    assert!(cxrlake::cli::Cli::try_parse_from(good).is_ok());
    let renamed = &commands("cxrlake run --llm-url http://127.0.0.1:8080/v1")[0];
    assert!(cxrlake::cli::Cli::try_parse_from(renamed).is_err());
    assert_eq!(
        commands(r#"LLM=1 cxrlake sql "SELECT 'a b'""#)[0],
        ["cxrlake", "sql", "SELECT 'a b'"]
    );
}

#[test]
fn all_pages_are_tested() {
    let mut tested: Vec<String> = TESTED.iter().map(|p| p.to_string()).collect();
    tested.sort();
    assert_eq!(
        tested,
        pages(),
        "add the new page to page_tests! in guide.rs"
    );
}

#[test]
fn readme_stays_short() {
    let readme = std::fs::read_to_string(repository().join("README.md")).expect("README");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: the README is the quick start and six recipes; move the rest to docs/"
    );
}

#[test]
fn configuration_reference_is_generated() {
    const BEGIN: &str = "<!-- settings:begin -->\n";
    const END: &str = "<!-- settings:end -->";
    let path = repository().join("docs/configuration.md");
    let page = std::fs::read_to_string(&path).expect("configuration.md");
    let start = page.find(BEGIN).expect("the settings:begin marker") + BEGIN.len();
    let end = page.find(END).expect("the settings:end marker");
    let expected = cxrlake::reference::settings_table();
    if std::env::var_os("CXRLAKE_BLESS").is_some() {
        let blessed = format!("{}{expected}{}", &page[..start], &page[end..]);
        std::fs::write(&path, blessed).expect("write configuration.md");
        return;
    }
    assert_eq!(
        &page[start..end],
        expected.as_str(),
        "docs/configuration.md's settings table differs from the code's; \
         CXRLAKE_BLESS=1 cargo test -p cxrlake --test it guide regenerates it"
    );
}
