//! A flavour's prompts folder: per task a system and a user template, demonstrations and the
//! JSON schema of the answer, with the sampling settings and a version in `prompts.toml`.
//!
//! ```text
//!  prompts.toml ──► version, [task] temperature / max_tokens / retries
//!  every file ──► sha256 ──► "<version>+<12 hex>"      (LLM cache key, stage fingerprints)
//!
//!  <task>.md ─┬─ <FEWSHOT> ◄── <task>.fewshot.md          (at load)
//!             └─ <NAME>    ◄── the task's placeholders    (per row)   ──► system message
//!  <task>.user.md ── <NAME> ◄── the task's placeholders   (per row)   ──► user message
//!  <task>.schema.json ──► guided JSON of the request, and `validate` of every answer
//! ```
//!
//! A placeholder is `<NAME>` with `NAME` upper-case letters, digits and `_` starting with a
//! letter. Each template is split into text and placeholders once, so inserted text (a report
//! that contains `<FEWSHOT>`, say) is never searched for placeholders.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::schema::check_schema;
use crate::{GenerateError, Result};

/// The settings file of a prompts folder.
const CONFIG: &str = "prompts.toml";
/// The placeholder filled with `<task>.fewshot.md` at load.
const FEWSHOT: &str = "FEWSHOT";

/// One `[task]` table of `prompts.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSettings {
    temperature: f32,
    max_tokens: u32,
    retries: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Slot(String),
}

/// A template split into text and the placeholders left for rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template {
    file: String,
    segments: Vec<Segment>,
}

impl Template {
    /// Splits `text` (its trailing white space dropped) at its placeholders, filling those in
    /// `fixed` now.
    fn parse(file: &str, text: &str, fixed: &[(&str, &str)]) -> Template {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut rest = text.trim_end();
        while let Some(at) = rest.find('<') {
            literal.push_str(&rest[..at]);
            rest = &rest[at..];
            match placeholder_at(rest) {
                Some(name) => {
                    match fixed.iter().find(|(fixed_name, _)| *fixed_name == name) {
                        Some((_, value)) => literal.push_str(value.trim_end()),
                        None => {
                            segments.push(Segment::Text(std::mem::take(&mut literal)));
                            segments.push(Segment::Slot(name.to_string()));
                        }
                    }
                    rest = &rest[name.len() + 2..];
                }
                None => {
                    literal.push('<');
                    rest = &rest[1..];
                }
            }
        }
        literal.push_str(rest);
        segments.push(Segment::Text(literal));
        segments.retain(|segment| segment != &Segment::Text(String::new()));
        Template {
            file: file.to_string(),
            segments,
        }
    }

    /// The placeholders left, in order of first appearance.
    fn slots(&self) -> Vec<&str> {
        let mut slots: Vec<&str> = Vec::new();
        for segment in &self.segments {
            if let Segment::Slot(name) = segment
                && !slots.contains(&name.as_str())
            {
                slots.push(name);
            }
        }
        slots
    }

    /// The text with every placeholder replaced by its value (all are in `values`).
    fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Slot(name) => {
                    if let Some((_, value)) = values.iter().find(|(given, _)| given == name) {
                        out.push_str(value);
                    }
                }
            }
        }
        out
    }
}

/// The name of the placeholder `<NAME>` that `text` starts with.
fn placeholder_at(text: &str) -> Option<&str> {
    let body = text.strip_prefix('<')?;
    let end = body.find('>')?;
    let name = &body[..end];
    let mut chars = name.chars();
    let first = chars.next()?;
    (first.is_ascii_uppercase()
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
    .then_some(name)
}

/// The prompt of one task: its templates, sampling settings and answer schema.
#[derive(Debug, Clone)]
pub struct TaskPrompt {
    name: String,
    temperature: f32,
    max_tokens: u32,
    retries: u32,
    schema: Value,
    system: Template,
    user: Template,
}

impl TaskPrompt {
    /// The task's name (its table in `prompts.toml`, the stem of its files).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sampling temperature of its requests.
    pub fn temperature(&self) -> f32 {
        self.temperature
    }

    /// The most tokens of an answer.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// How many more times an invalid answer is asked again.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The JSON schema of an answer (`<task>.schema.json`).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The system and user messages with each placeholder replaced by its value in `values`
    /// (names with or without the angle brackets: `REPORT` or `<REPORT>`). Substitution is one
    /// pass over each template, so a value is never searched for placeholders.
    ///
    /// Fails with [`GenerateError::Placeholder`] naming the file when a template has a
    /// placeholder that `values` lacks, when `values` names a placeholder neither template has,
    /// or names one twice.
    pub fn render(&self, values: &[(&str, String)]) -> Result<(String, String)> {
        let given: Vec<(&str, &str)> = values
            .iter()
            .map(|(name, value)| {
                let name = name.strip_prefix('<').unwrap_or(name);
                (name.strip_suffix('>').unwrap_or(name), value.as_str())
            })
            .collect();
        let names: Vec<&str> = given.iter().map(|(name, _)| *name).collect();
        let both = format!("{}, {}", self.system.file, self.user.file);
        for (index, name) in names.iter().enumerate() {
            if names[..index].contains(name) {
                return Err(GenerateError::Placeholder {
                    file: both,
                    reason: format!("the task gives <{name}> twice"),
                });
            }
            if !self.system.slots().contains(name) && !self.user.slots().contains(name) {
                let mut slots = self.system.slots();
                slots.extend(self.user.slots());
                return Err(GenerateError::Placeholder {
                    file: both,
                    reason: format!(
                        "the task gives <{name}>, which neither template has (they have: {})",
                        tokens(&slots)
                    ),
                });
            }
        }
        for template in [&self.system, &self.user] {
            if let Some(missing) = template.slots().into_iter().find(|s| !names.contains(s)) {
                return Err(GenerateError::Placeholder {
                    file: template.file.clone(),
                    reason: format!(
                        "the template has <{missing}>, which the task does not give (it gives: \
                         {})",
                        tokens(&names)
                    ),
                });
            }
        }
        Ok((self.system.render(&given), self.user.render(&given)))
    }
}

/// `<A>, <B>` (or `nothing`).
fn tokens(names: &[&str]) -> String {
    if names.is_empty() {
        return "nothing".into();
    }
    names
        .iter()
        .map(|name| format!("<{name}>"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A flavour's prompts folder: its tasks' prompts and a version that changes whenever any file
/// changes.
#[derive(Debug, Clone)]
pub struct PromptSet {
    version: String,
    tasks: BTreeMap<String, TaskPrompt>,
    changelog: Vec<ChangelogEntry>,
}

/// One `[[changelog]]` entry of `prompts.toml`: a dated version of the prompts and what changed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangelogEntry {
    /// The version (`0.4`).
    pub version: String,
    /// When (`2024-09`).
    pub date: String,
    /// What changed.
    pub change: String,
}

impl PromptSet {
    /// Reads every file of `dir` (hidden files and folders are skipped).
    ///
    /// Fails with [`GenerateError::Prompt`] naming the file as [`PromptSet::from_files`] does,
    /// or when the folder or a file cannot be read.
    pub fn load(dir: &Path) -> Result<PromptSet> {
        let unreadable = |file: &str, error: std::io::Error| GenerateError::Prompt {
            file: file.to_string(),
            reason: format!("cannot read {}: {error}", dir.join(file).display()),
        };
        let entries = std::fs::read_dir(dir).map_err(|error| unreadable(".", error))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| unreadable(".", error))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
            if name.starts_with('.') || !is_file {
                continue;
            }
            let text =
                std::fs::read_to_string(entry.path()).map_err(|error| unreadable(&name, error))?;
            files.push((name, text));
        }
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        Self::from_files(&borrowed)
    }

    /// The prompts of a folder given as `(file name, text)` pairs (a flavour embeds its folder
    /// with `include_str!`): `prompts.toml` with `version = "…"` and one table per task
    /// (`temperature`, `max_tokens`, `retries`), and per task `<task>.md` (system),
    /// `<task>.user.md` (user), `<task>.schema.json` and, when the system template has
    /// `<FEWSHOT>`, `<task>.fewshot.md`.
    ///
    /// Fails with [`GenerateError::Prompt`] naming the file when a file is missing, repeated or
    /// belongs to no task, `prompts.toml` is malformed, a schema is not JSON or uses a keyword
    /// [`crate::validate`] does not check, or `<FEWSHOT>` and the fewshot file do not come
    /// together.
    pub fn from_files(files: &[(&str, &str)]) -> Result<PromptSet> {
        let mut texts: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, text) in files {
            if texts.insert(name, text).is_some() {
                return Err(prompt_error(name, "the file is given twice"));
            }
        }
        let config = texts
            .get(CONFIG)
            .ok_or_else(|| prompt_error(CONFIG, "the file is missing"))?;
        let (declared, settings, changelog) = read_config(config)?;
        let task_names: Vec<&str> = settings.keys().map(String::as_str).collect();
        for name in texts.keys().filter(|name| **name != CONFIG) {
            let owned = task_names
                .iter()
                .any(|task| task_files(task).iter().any(|file| file == name));
            if !owned {
                return Err(prompt_error(
                    name,
                    format!(
                        "not a file of any task in {CONFIG} (a task <task> has <task>.md, \
                         <task>.user.md, <task>.schema.json and <task>.fewshot.md; tasks: {})",
                        task_names.join(", ")
                    ),
                ));
            }
        }
        let mut tasks = BTreeMap::new();
        for (name, settings) in settings {
            let prompt = task_prompt(&name, settings, &texts)?;
            tasks.insert(name, prompt);
        }
        let mut hasher = Sha256::new();
        for (name, text) in &texts {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update((text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
        let digest = hex::encode(hasher.finalize());
        Ok(PromptSet {
            version: format!("{declared}+{}", &digest[..12]),
            tasks,
            changelog,
        })
    }

    /// `"<declared version>+<first 12 hex of sha256 over all files>"`: changes when any file
    /// changes, even if the declared version was not bumped.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `[[changelog]]` entries of `prompts.toml`, in file order (empty when it has none).
    pub fn changelog(&self) -> &[ChangelogEntry] {
        &self.changelog
    }

    /// The prompt of task `name`.
    pub fn task(&self, name: &str) -> Option<&TaskPrompt> {
        self.tasks.get(name)
    }

    /// The prompt of task `name`, or an error naming `prompts.toml` and the tasks it has.
    pub fn require(&self, name: &str) -> Result<&TaskPrompt> {
        self.task(name).ok_or_else(|| {
            prompt_error(
                CONFIG,
                format!(
                    "no [{name}] task (it has: {})",
                    self.tasks.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }
}

fn prompt_error(file: &str, reason: impl Into<String>) -> GenerateError {
    GenerateError::Prompt {
        file: file.to_string(),
        reason: reason.into(),
    }
}

/// The files of task `task`: system, user, schema, demonstrations.
fn task_files(task: &str) -> [String; 4] {
    [
        format!("{task}.md"),
        format!("{task}.user.md"),
        format!("{task}.schema.json"),
        format!("{task}.fewshot.md"),
    ]
}

type Config = (String, BTreeMap<String, TaskSettings>, Vec<ChangelogEntry>);

/// The declared version, the tasks' settings and the changelog of `prompts.toml`.
fn read_config(text: &str) -> Result<Config> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| prompt_error(CONFIG, e.to_string()))?;
    let mut version = None;
    let mut tasks = BTreeMap::new();
    let mut changelog = Vec::new();
    for (key, value) in table {
        if key == "changelog" {
            changelog = value.try_into().map_err(|e: toml::de::Error| {
                prompt_error(
                    CONFIG,
                    format!(
                        "[[changelog]] entries need version, date and change, nothing else: {}",
                        e.to_string().trim_end()
                    ),
                )
            })?;
            continue;
        }
        if key == "version" {
            let declared = value.as_str().map(str::trim).unwrap_or_default();
            if declared.is_empty() {
                return Err(prompt_error(
                    CONFIG,
                    "`version` must be a non-empty string such as \"1\"",
                ));
            }
            version = Some(declared.to_string());
            continue;
        }
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'))
        {
            return Err(prompt_error(
                CONFIG,
                format!("task name '{key}': use lower-case letters, digits, '_' and '-'"),
            ));
        }
        let settings: TaskSettings = value.try_into().map_err(|e| {
            prompt_error(
                CONFIG,
                format!(
                    "[{key}] needs temperature, max_tokens and retries, nothing else: {}",
                    e.to_string().trim_end()
                ),
            )
        })?;
        tasks.insert(key, settings);
    }
    let version = version.ok_or_else(|| prompt_error(CONFIG, "`version = \"…\"` is missing"))?;
    if tasks.is_empty() {
        return Err(prompt_error(CONFIG, "no task table such as [generate]"));
    }
    Ok((version, tasks, changelog))
}

/// Task `name`'s prompt from the folder's `texts`.
fn task_prompt(
    name: &str,
    settings: TaskSettings,
    texts: &BTreeMap<&str, &str>,
) -> Result<TaskPrompt> {
    let [system_file, user_file, schema_file, fewshot_file] = task_files(name);
    let text = |file: &str| {
        texts
            .get(file)
            .copied()
            .ok_or_else(|| prompt_error(file, format!("the file of task [{name}] is missing")))
    };
    let system_text = text(&system_file)?;
    let has_fewshot_slot = Template::parse(&system_file, system_text, &[])
        .slots()
        .contains(&FEWSHOT);
    let fewshot = match (texts.get(fewshot_file.as_str()), has_fewshot_slot) {
        (Some(fewshot), true) => *fewshot,
        (None, false) => "",
        (Some(_), false) => {
            return Err(prompt_error(
                &system_file,
                format!("the template lacks <{FEWSHOT}>, where {fewshot_file} goes"),
            ));
        }
        (None, true) => {
            return Err(prompt_error(
                &fewshot_file,
                format!("the file is missing; {system_file} has <{FEWSHOT}>"),
            ));
        }
    };
    let schema: Value = serde_json::from_str(text(&schema_file)?)
        .map_err(|e| prompt_error(&schema_file, format!("not JSON: {e}")))?;
    check_schema(&schema).map_err(|reason| prompt_error(&schema_file, reason))?;
    if !settings.temperature.is_finite() || settings.temperature < 0.0 {
        return Err(prompt_error(
            CONFIG,
            format!("[{name}] temperature must be 0 or more"),
        ));
    }
    Ok(TaskPrompt {
        name: name.to_string(),
        temperature: settings.temperature,
        max_tokens: settings.max_tokens,
        retries: settings.retries,
        schema,
        system: Template::parse(&system_file, system_text, &[(FEWSHOT, fewshot)]),
        user: Template::parse(&user_file, text(&user_file)?, &[]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's `prompts/gemex/` folder.
    fn gemex_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts/gemex")
    }

    /// The `prompts/gemex/` files as a flavour embeds them (read once, kept for the test run),
    /// in file-name order.
    fn gemex() -> Vec<(&'static str, &'static str)> {
        let mut files: Vec<(&'static str, &'static str)> = std::fs::read_dir(gemex_dir())
            .expect("prompts/gemex")
            .map(|entry| {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .to_string();
                let text = std::fs::read_to_string(&path).expect("text");
                (
                    &*Box::leak(name.into_boxed_str()),
                    &*Box::leak(text.into_boxed_str()),
                )
            })
            .collect();
        files.sort();
        files
    }

    /// A one-task folder `t` with these templates.
    fn toy(system: &str, user: &str, fewshot: Option<&str>) -> Result<PromptSet> {
        let mut files = vec![
            (
                "prompts.toml",
                "version = \"3\"\n[t]\ntemperature = 0.5\nmax_tokens = 64\nretries = 2\n",
            ),
            ("t.md", system),
            ("t.user.md", user),
            ("t.schema.json", r#"{"type": "object"}"#),
        ];
        if let Some(fewshot) = fewshot {
            files.push(("t.fewshot.md", fewshot));
        }
        PromptSet::from_files(&files)
    }

    fn values(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        pairs
            .iter()
            .map(|(name, value)| (*name, value.to_string()))
            .collect()
    }

    #[test]
    fn the_gemex_folder_loads_from_disk_and_embedded_alike() {
        let loaded = PromptSet::load(&gemex_dir()).expect("prompts/gemex loads");
        let embedded = PromptSet::from_files(&gemex()).expect("embedded prompts/gemex");
        assert_eq!(loaded.version(), embedded.version());
        let (declared, hash) = loaded.version().split_once('+').expect("version+hash");
        assert_eq!(declared, "1");
        assert_eq!(hash.len(), 12);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));

        let reground = loaded.task("reground").expect("reground");
        assert_eq!(
            (
                reground.temperature(),
                reground.max_tokens(),
                reground.retries()
            ),
            (0.0, 400, 1)
        );
        assert_eq!(reground.schema()["type"], "object");
        let (system, user) = reground
            .render(&values(&[
                ("REGIONS", "left lung, right lung"),
                ("SENTENCE", "Small left effusion."),
            ]))
            .expect("render reground");
        assert!(system.contains("from a predefined list [left lung, right lung]"));
        assert!(system.contains("(6) Input: \"A right-sided PICC line"));
        assert!(!system.contains("<FEWSHOT>"));
        assert_eq!(user, "Input: \"Small left effusion.\"");

        let generate = loaded.require("generate").expect("generate");
        assert_eq!(generate.max_tokens(), 3000);
        assert_eq!(
            generate.schema()["properties"]["questions"]["items"]["required"][0],
            "question_type"
        );
        let (system, user) = generate
            .render(&values(&[(
                "REPORT",
                "No effusion. [visual location: bilateral lung]",
            )]))
            .expect("render generate");
        assert!(
            system.ends_with("\"regions\": [\"left lower lung zone\", \"cardiac silhouette\"]}")
        );
        assert_eq!(
            user,
            "Chest X-ray: No effusion. [visual location: bilateral lung]"
        );
        assert!(loaded.task("judge").is_none());
        assert!(loaded.require("judge").is_err());
    }

    #[test]
    fn the_gemex_schemas_are_json_of_the_subset() {
        for (name, text) in gemex().iter().filter(|(name, _)| name.ends_with(".json")) {
            let schema: Value = serde_json::from_str(text).expect(name);
            assert_eq!(check_schema(&schema), Ok(()), "{name}");
        }
    }

    #[test]
    fn placeholders_are_substituted_once_never_inside_values() {
        let set = toy(
            "Rules. <FEWSHOT>\nKeep <KEEP> and <KEEP>; <lowercase> and a < b stay.",
            "Report: <REPORT>",
            Some("Example with <REPORT> inside.\n"),
        )
        .expect("toy");
        let task = set.task("t").expect("t");
        let (system, user) = task
            .render(&values(&[
                ("<KEEP>", "x"),
                ("REPORT", "has <FEWSHOT> and <KEEP> and <REPORT>"),
            ]))
            .expect("render");
        assert_eq!(
            system,
            "Rules. Example with <REPORT> inside.\nKeep x and x; <lowercase> and a < b stay."
        );
        assert_eq!(user, "Report: has <FEWSHOT> and <KEEP> and <REPORT>");
        assert_eq!(
            (
                task.name(),
                task.temperature(),
                task.max_tokens(),
                task.retries()
            ),
            ("t", 0.5, 64, 2)
        );
    }

    #[test]
    fn missing_extra_and_repeated_placeholders_name_the_file() {
        let set = toy("System <A>.", "User <B>.", None).expect("toy");
        let task = set.task("t").expect("t");
        let message = |pairs: &[(&'static str, &str)]| {
            task.render(&values(pairs))
                .expect_err("placeholder error")
                .to_string()
        };
        let missing = message(&[("A", "a")]);
        assert!(
            missing.starts_with("prompt t.user.md: the template has <B>"),
            "{missing}"
        );
        let missing = message(&[("B", "b")]);
        assert!(
            missing.starts_with("prompt t.md: the template has <A>"),
            "{missing}"
        );
        let extra = message(&[("A", "a"), ("B", "b"), ("C", "c")]);
        assert!(
            extra.starts_with("prompt t.md, t.user.md: the task gives <C>, which neither"),
            "{extra}"
        );
        let twice = message(&[("A", "a"), ("<A>", "a"), ("B", "b")]);
        assert!(twice.contains("gives <A> twice"), "{twice}");
        assert!(task.render(&values(&[("A", "a"), ("B", "b")])).is_ok());
    }

    #[test]
    fn fewshot_file_and_placeholder_come_together() {
        let error = toy("No slot.", "u", Some("example")).expect_err("unused fewshot");
        assert!(
            error
                .to_string()
                .starts_with("prompt t.md: the template lacks <FEWSHOT>")
        );
        let error = toy("<FEWSHOT>", "u", None).expect_err("missing fewshot");
        assert!(
            error
                .to_string()
                .starts_with("prompt t.fewshot.md: the file is missing")
        );
    }

    #[test]
    fn broken_folders_name_the_file() {
        let message = |files: &[(&str, &str)]| {
            PromptSet::from_files(files)
                .expect_err("broken folder")
                .to_string()
        };
        let mut files: Vec<(&str, &str)> = gemex();
        files.push(("generate.fewshots.md", "typo"));
        assert!(message(&files).starts_with("prompt generate.fewshots.md: not a file of any task"));

        let without = |skip: &str| -> Vec<(&str, &str)> {
            gemex()
                .iter()
                .copied()
                .filter(|(name, _)| *name != skip)
                .collect()
        };
        for file in ["prompts.toml", "generate.user.md", "reground.schema.json"] {
            let error = message(&without(file));
            assert!(error.starts_with(&format!("prompt {file}: ")), "{error}");
        }

        let replace = |file: &str, text: &'static str| -> Vec<(&str, &str)> {
            gemex()
                .iter()
                .map(|(name, old)| (*name, if *name == file { text } else { *old }))
                .collect()
        };
        let error = message(&replace("generate.schema.json", "{\"type\": "));
        assert!(
            error.starts_with("prompt generate.schema.json: not JSON"),
            "{error}"
        );
        let error = message(&replace("generate.schema.json", r#"{"oneOf": []}"#));
        assert!(
            error.contains("keyword 'oneOf' is not supported"),
            "{error}"
        );
        let error = message(&replace(
            "prompts.toml",
            "version = \"1\"\n[generate]\ntemperature = 0.2\n",
        ));
        assert!(
            error.starts_with("prompt prompts.toml: [generate] needs"),
            "{error}"
        );
        let error = message(&replace(
            "prompts.toml",
            "[generate]\ntemperature = 0.2\nmax_tokens = 1\nretries = 0\n",
        ));
        assert!(error.contains("`version"), "{error}");
        let error = message(&replace(
            "prompts.toml",
            "version = \"1\"\n[generate]\ntemperature = 0.2\nmax_tokens = 1\nretries = 0\n\
             seed = 3\n",
        ));
        assert!(error.contains("unknown field"), "{error}");
        let mut twice = gemex();
        twice.push(gemex()[1]);
        assert!(message(&twice).contains("given twice"));

        let error = PromptSet::load(Path::new("/nonexistent/prompts")).expect_err("no folder");
        assert!(
            error
                .to_string()
                .contains("cannot read /nonexistent/prompts")
        );
    }

    #[test]
    fn the_version_changes_with_any_file() {
        let base = PromptSet::from_files(&gemex()).expect("gemex");
        for (index, (name, _)) in gemex().iter().enumerate() {
            let mut files: Vec<(&str, String)> = gemex()
                .iter()
                .map(|(name, text)| (*name, text.to_string()))
                .collect();
            // A change that keeps every file valid: white space at the end.
            files[index].1.push('\n');
            let borrowed: Vec<(&str, &str)> = files
                .iter()
                .map(|(name, text)| (*name, text.as_str()))
                .collect();
            let changed = PromptSet::from_files(&borrowed).expect("still valid");
            assert_ne!(changed.version(), base.version(), "{name}");
            assert!(changed.version().starts_with("1+"));
        }
        // The order files are given in does not matter.
        let mut reversed = gemex();
        reversed.reverse();
        assert_eq!(
            PromptSet::from_files(&reversed)
                .expect("reversed")
                .version(),
            base.version()
        );
    }
}
