//! `cxrlake run` without a stage: every stage from the lake's source tables to graded QA pairs,
//! recomputing only what changed since each stage's last run (DESIGN 2.5).
//!
//! Each stage's last commit holds its fingerprint (input table versions, definitions, model
//! ids, thresholds, SQL hash, code version). A stage is up to date when nothing in it differs.
//! Otherwise it runs over a [`Scope`]:
//!
//! ```text
//! inputs rewritten      → the studies those commits changed (their metrics' "changed" lists)
//! refdefs edited        → old definitions (kept in the lake by fingerprint) diffed by entry:
//!   extract (rules)       studies whose report mentions a touched entry's name or synonym
//!   map                   studies with a tag text whose match changed or that mentions a
//!                         touched term (synonym-only edits); all studies otherwise
//!   localize, graph, qa   nothing for synonym-only edits; all studies otherwise
//! threshold changed     → map: studies with a tag text whose match changed
//! templates changed     → balance, qa: all studies
//! qa_balance changed    → qa: studies whose hash sample flips between the old and new
//!                         probability, and studies asking a finding whose correlated list changed
//! judge changed         → judge and grade: all studies (content hashes re-judge only the
//!                         criteria whose rendered prompt changed)
//! code or SQL changed   → all studies
//! ```
//!
//! Every scoped run up to graph compares each study's new rows with its old rows (row digests)
//! and records the studies that actually changed in its commits, which are the next stage's
//! scope; qa passes its whole scope on (its old rows carry grade's columns). The
//! result equals a full rebuild (`tests/it/incremental.rs`, one case per edit kind).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cxrlake_embed::Embedder;
use cxrlake_lake::{CommitRecord, Lake};
use cxrlake_map::{ConceptIndex, ConceptKind};
use cxrlake_qa::unit_hash;
use cxrlake_refdefs::{EntryKind, RefDefs, Sources};
use cxrlake_templates::Templates;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use serde_json::Value;

use crate::error::{PipelineError, Result};
use crate::judge::JudgeOptions;
use crate::scope::Scope;
use crate::stage::{collect, first_column_strings, sql_hash};
use crate::{balance, extract, grade, graph, judge, localize, map, qa};

/// Options of a pipeline run: every stage's options and whether to rebuild everything.
#[derive(Debug, Clone, Default)]
pub struct PipelineOptions {
    /// localize.
    pub localize: localize::LocalizeOptions,
    /// extract.
    pub extract: extract::ExtractOptions,
    /// map.
    pub map: map::MapOptions,
    /// graph.
    pub graph: graph::GraphOptions,
    /// balance and qa (templates, chunks).
    pub qa: qa::QaOptions,
    /// judge and grade.
    pub judge: JudgeOptions,
    /// Rebuild every stage over all studies.
    pub full: bool,
}

/// The stages of a pipeline run, in order.
pub const STAGES: [&str; 8] = [
    "localize", "extract", "map", "graph", "balance", "qa", "judge", "grade",
];

/// What a run does (did) in one stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// The stage.
    pub stage: &'static str,
    /// The studies it recomputes (empty: up to date).
    pub scope: Scope,
    /// Why, one line per cause.
    pub reasons: Vec<String>,
    /// After a run: the studies whose rows changed.
    pub changed: Option<Scope>,
    /// After a run: seconds.
    pub seconds: Option<f64>,
}

impl StagePlan {
    fn new(stage: &'static str) -> Self {
        Self {
            stage,
            scope: Scope::none(),
            reasons: Vec::new(),
            changed: None,
            seconds: None,
        }
    }

    fn all(&mut self, reason: impl Into<String>) {
        self.scope = Scope::All;
        self.reasons.push(reason.into());
    }

    fn add(&mut self, studies: &Scope, reason: impl Into<String>) {
        if !studies.is_empty() {
            self.scope.extend(studies);
            self.reasons.push(reason.into());
        }
    }
}

/// A plan (or, after [`run`], the record of a run) over all stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One entry per stage, in order.
    pub stages: Vec<StagePlan>,
    /// Studies in the lake.
    pub studies: usize,
    /// QA pairs in the lake before the run.
    pub qa_pairs: usize,
    /// QA pairs of the studies whose QA pairs are (were) regenerated.
    pub qa_pairs_touched: usize,
    /// Judge calls an LLM judge could make at most (5 per touched QA pair); 0 for the heuristic
    /// judge, whose verdicts cost no call.
    pub llm_calls: usize,
    /// Whether this records a run (else a plan).
    pub ran: bool,
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let describe = |scope: &Scope| match scope {
            Scope::All => format!("all {} studies", self.studies),
            other => other.describe(),
        };
        for stage in &self.stages {
            if stage.scope.is_empty() {
                writeln!(f, "{:<9} up to date", stage.stage)?;
                continue;
            }
            let mut line = format!("{:<9} {}", stage.stage, describe(&stage.scope));
            if let Some(changed) = &stage.changed {
                line.push_str(&format!(", {} changed", describe(changed)));
            }
            if let Some(seconds) = stage.seconds {
                line.push_str(&format!(" in {seconds:.1} s"));
            }
            writeln!(f, "{line}")?;
            for reason in &stage.reasons {
                writeln!(f, "            {reason}")?;
            }
        }
        let verb = if self.ran {
            "regenerated"
        } else {
            "to regenerate"
        };
        write!(
            f,
            "QA pairs {verb}: {} of {}; LLM judge calls: at most {}",
            self.qa_pairs_touched, self.qa_pairs, self.llm_calls
        )
    }
}

/// What the stages read, with the stage that writes each table.
const INPUTS: [(&str, &[(&str, &str)]); 7] = [
    (
        "localize",
        &[
            ("images", "ingest"),
            ("cxas_masks", "ingest"),
            ("imagenome_boxes", "ingest"),
        ],
    ),
    ("extract", &[("reports", "ingest")]),
    ("map", &[("observations_raw", "extract")]),
    (
        "graph",
        &[
            ("sentences", "extract"),
            ("observations", "map"),
            ("indications", "extract"),
            ("region_boxes", "localize"),
            ("images", "ingest"),
        ],
    ),
    ("balance", &[("scene_graphs", "graph")]),
    ("qa", &[("scene_graphs", "graph")]),
    (
        "grade",
        &[("qa", "qa"), ("reports", "ingest"), ("images", "ingest")],
    ),
];

/// The table whose commits hold a stage's fingerprint.
fn output(stage: &str) -> &'static str {
    match stage {
        "localize" => "region_boxes",
        "extract" => "observations_raw",
        "map" => "observations",
        "graph" => "scene_graphs",
        "balance" => "qa_balance",
        _ => "qa",
    }
}

/// The SQL a stage runs (its hash is in the fingerprint).
fn sql(stage: &str) -> &'static str {
    match stage {
        "localize" => localize::SQL,
        "extract" => extract::SQL,
        "map" => map::SQL,
        "graph" => graph::SQL,
        "balance" => balance::SQL,
        "qa" => qa::SQL,
        _ => grade::SQL,
    }
}

/// Where the lake keeps the sources of the definitions `fingerprint`.
fn refdefs_meta(fingerprint: &str) -> String {
    format!("refdefs/{fingerprint}.json")
}

/// Keeps `defs`' sources in the lake, so that a later edit can be diffed against them.
pub async fn remember_refdefs(lake: &Lake, defs: &RefDefs) -> Result<()> {
    let name = refdefs_meta(defs.fingerprint());
    if lake.get_meta(&name).await?.is_none() {
        let texts = serde_json::to_vec(&defs.sources().texts())
            .map_err(|e| PipelineError::Config(format!("storing the definitions: {e}")))?;
        lake.put_meta(&name, texts).await?;
    }
    Ok(())
}

/// The definitions `fingerprint` as kept by [`remember_refdefs`].
async fn stored_refdefs(lake: &Lake, fingerprint: &str) -> Result<Option<RefDefs>> {
    let Some(bytes) = lake.get_meta(&refdefs_meta(fingerprint)).await? else {
        return Ok(None);
    };
    let texts: Vec<(String, String)> = serde_json::from_slice(&bytes)
        .map_err(|e| PipelineError::Config(format!("reading stored definitions: {e}")))?;
    Ok(Sources::from_texts(&texts).and_then(|s| RefDefs::from_sources(s).ok()))
}

/// How two sets of definitions differ, as the stages see it.
#[derive(Debug, Clone)]
struct RefdefsChange {
    /// The old definitions.
    old: RefDefs,
    /// `kind: name` of every added, removed or changed entry.
    touched: Vec<String>,
    /// Whether anything besides synonyms changed (names, hierarchy, categories, recipes, …).
    structural: bool,
    /// Lower-case names and synonyms of the touched entries, old and new.
    terms: BTreeSet<String>,
}

impl RefdefsChange {
    fn between(old: RefDefs, new: &RefDefs) -> Self {
        let (mut touched, mut structural, mut terms) = (Vec::new(), false, BTreeSet::new());
        let strip = |v: &Option<Value>| {
            v.clone().map(|mut v| {
                if let Some(object) = v.as_object_mut() {
                    object.remove("synonyms");
                }
                v
            })
        };
        for (kind, name) in RefDefs::diff(&old, new).touched() {
            touched.push(format!("{} {name}", kind_name(kind)));
            let (before, after) = (old.entry_json(kind, name), new.entry_json(kind, name));
            if before.is_none() || after.is_none() || strip(&before) != strip(&after) {
                structural = true;
            }
            for entry in [before, after].into_iter().flatten() {
                terms.extend(terms_of(&entry));
            }
        }
        RefdefsChange {
            old,
            touched,
            structural,
            terms,
        }
    }

    fn describe(&self) -> String {
        let kind = if self.structural {
            "entries"
        } else {
            "synonyms only"
        };
        format!("refdefs edited ({kind}): {}", self.touched.join(", "))
    }
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Region => "region",
        EntryKind::Finding => "finding",
        EntryKind::Modifier => "modifier",
        EntryKind::Probability => "probability",
        EntryKind::Change => "change",
        EntryKind::CxasClass => "cxas class",
        EntryKind::ImagenomeBox => "imagenome box",
    }
}

/// An entry's name and synonyms, lower case.
fn terms_of(entry: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(name) = entry.get("name").and_then(Value::as_str) {
        out.push(name.to_lowercase());
    }
    if let Some(synonyms) = entry.get("synonyms").and_then(Value::as_array) {
        out.extend(
            synonyms
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_lowercase),
        );
    }
    out
}

/// Whether `text` (lower case) mentions `term` with any separators between its words.
fn mentions(text: &str, term: &str) -> bool {
    let words: Vec<&str> = term
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let Some(first) = words.first() else {
        return false;
    };
    text.match_indices(first).any(|(at, _)| {
        let mut rest = &text[at + first.len()..];
        for word in &words[1..] {
            let trimmed = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
            match trimmed.strip_prefix(word) {
                Some(after) => rest = after,
                None => return false,
            }
        }
        true
    })
}

/// Everything a run compares the stored fingerprints with.
struct Current<'a> {
    lake: &'a Lake,
    defs: &'a RefDefs,
    templates: &'a Templates,
    options: &'a PipelineOptions,
    judge_id: String,
    extractor: String,
    embedder: std::sync::Arc<dyn Embedder>,
}

/// The newest commit of `stage` on its output table, if any.
async fn last_commit(lake: &Lake, stage: &str) -> Result<Option<CommitRecord>> {
    let history = lake.history(output(stage), Some(2_000)).await?;
    Ok(history
        .into_iter()
        .find(|c| c.stage.as_ref().is_some_and(|s| s.stage == stage)))
}

/// The studies `producer` changed in `table` after `since` (from its commits' "changed").
async fn changes_since(lake: &Lake, table: &str, since: u64, producer: &str) -> Result<Scope> {
    let mut scope = Scope::none();
    for commit in lake.history(table, Some(2_000)).await? {
        if commit.version <= since {
            break;
        }
        let Some(stage) = commit.stage.filter(|s| s.stage == producer) else {
            continue;
        };
        match stage.metrics.get("changed") {
            Some(Value::String(s)) if s == "pending" => {}
            Some(changed @ Value::Array(_)) => scope.extend(&Scope::from_json(changed)),
            _ => return Ok(Scope::All),
        }
    }
    Ok(scope)
}

/// Decides what `stage` must recompute; `planned` holds the scopes of the stages before it
/// when planning without running.
async fn decide(
    current: &Current<'_>,
    stage: &'static str,
    planned: &HashMap<&'static str, Scope>,
) -> Result<StagePlan> {
    let lake = current.lake;
    let mut plan = StagePlan::new(stage);
    if current.options.full {
        plan.all("--full");
        return Ok(plan);
    }
    let fingerprint_stage = if stage == "judge" { "grade" } else { stage };
    let Some(commit) = last_commit(lake, fingerprint_stage).await? else {
        plan.all("never run");
        return Ok(plan);
    };
    let Some(last) = commit.stage else {
        plan.all("never run");
        return Ok(plan);
    };
    let fp = &last.fingerprint;
    let metrics = &last.metrics;
    if metrics.get("changed").and_then(Value::as_str) == Some("pending")
        || metrics["chunk"].as_u64() < metrics["chunks"].as_u64()
    {
        plan.all(format!(
            "the last run stopped after chunk {}",
            metrics["chunk"]
        ));
        return Ok(plan);
    }
    if fp["code"].as_str() != Some(env!("CARGO_PKG_VERSION")) {
        plan.all(format!(
            "code {} → {}",
            fp["code"].as_str().unwrap_or("?"),
            env!("CARGO_PKG_VERSION")
        ));
        return Ok(plan);
    }
    if fp["sql"].as_str() != Some(sql_hash(sql(fingerprint_stage)).as_str()) {
        plan.all(format!("sql/{fingerprint_stage}.sql changed"));
        return Ok(plan);
    }
    // Input tables rewritten since.
    let inputs = INPUTS
        .iter()
        .find(|(s, _)| *s == fingerprint_stage)
        .map(|(_, inputs)| *inputs)
        .unwrap_or_default();
    for (table, producer) in inputs {
        let since = fp["inputs"][*table].as_u64();
        let now = lake.table(table).await?.version().unwrap_or(0) as u64;
        let mut changed = match since {
            Some(since) if since == now => Scope::none(),
            Some(since) => changes_since(lake, table, since, producer).await?,
            None => Scope::All,
        };
        if let Some(pending) = planned.get(producer) {
            changed.extend(pending);
        }
        plan.add(&changed, format!("{table} changed: {}", changed.describe()));
    }
    let refdefs_change = match fp["refdefs"].as_str() {
        Some(old) if old != current.defs.fingerprint() => {
            Some(match stored_refdefs(lake, old).await? {
                Some(old) => Ok(RefdefsChange::between(old, current.defs)),
                None => Err(format!(
                    "refdefs {old} → {} (the old definitions are not in the lake)",
                    current.defs.fingerprint()
                )),
            })
        }
        _ => None,
    };
    match stage {
        "localize" => {
            if let Some(change) = refdefs_change {
                match change {
                    Ok(c) if !c.structural => {}
                    Ok(c) => plan.all(c.describe()),
                    Err(reason) => plan.all(reason),
                }
            }
            if fp["min_area"].as_f64() != Some(current.options.localize.min_area) {
                plan.all("min_area changed");
            }
        }
        "extract" => {
            if fp["extractor"].as_str() != Some(current.extractor.as_str()) {
                plan.all(format!(
                    "extractor {} → {}",
                    fp["extractor"].as_str().unwrap_or("?"),
                    current.extractor
                ));
            } else if current.extractor.starts_with("rules") {
                match refdefs_change {
                    Some(Ok(c)) => {
                        let studies = reports_mentioning(lake, &c.terms).await?;
                        let reason =
                            format!("{}: {} mentioning them", c.describe(), studies.describe());
                        plan.add(&studies, reason);
                    }
                    Some(Err(reason)) => plan.all(reason),
                    None => {}
                }
            }
        }
        "map" => {
            if fp["embedder"].as_str() != Some(current.embedder.id()) {
                plan.all("embedder changed");
                return Ok(plan);
            }
            let old_threshold = fp["threshold"].as_f64().unwrap_or(f64::NAN) as f32;
            let threshold_changed = old_threshold != current.options.map.threshold;
            let old_defs = match &refdefs_change {
                Some(Ok(c)) if c.structural => {
                    plan.all(c.describe());
                    return Ok(plan);
                }
                Some(Err(reason)) => {
                    plan.all(reason.clone());
                    return Ok(plan);
                }
                Some(Ok(c)) => Some(&c.old),
                None => None,
            };
            if threshold_changed || old_defs.is_some() {
                let old_defs = old_defs.unwrap_or(current.defs);
                let terms = match &refdefs_change {
                    Some(Ok(c)) => c.terms.clone(),
                    _ => BTreeSet::new(),
                };
                let studies = remapped_studies(current, old_defs, old_threshold, &terms).await?;
                let mut why = Vec::new();
                if threshold_changed {
                    why.push(format!(
                        "match threshold {old_threshold} → {}",
                        current.options.map.threshold
                    ));
                }
                if let Some(Ok(c)) = &refdefs_change {
                    why.push(c.describe());
                }
                plan.reasons.push(format!(
                    "{}: {} with a tag whose match changed",
                    why.join("; "),
                    studies.describe()
                ));
                plan.scope.extend(&studies);
            }
        }
        "graph" => match refdefs_change {
            Some(Ok(c)) if c.structural => plan.all(c.describe()),
            Some(Err(reason)) => plan.all(reason),
            _ => {}
        },
        "balance" => {
            if fp["templates"].as_str() != Some(current.templates.version()) {
                plan.all("templates changed");
            }
            // qa_balance is dataset-wide: any changed scene graph recounts it.
            if !plan.scope.is_empty() {
                plan.scope = Scope::All;
            }
        }
        "qa" => {
            if fp["templates"].as_str() != Some(current.templates.version()) {
                plan.all(format!(
                    "templates {} → {}",
                    fp["templates"].as_str().unwrap_or("?"),
                    current.templates.version()
                ));
            }
            match refdefs_change {
                Some(Ok(c)) if c.structural => plan.all(c.describe()),
                Some(Err(reason)) => plan.all(reason),
                _ => {}
            }
            let balance_now = lake.table("qa_balance").await?.version().unwrap_or(0) as u64;
            match fp["qa_balance"].as_u64() {
                Some(old) if old != balance_now => {
                    let flips = sampling_flips(current, old).await?;
                    plan.add(
                        &flips,
                        format!(
                            "qa_balance v{old} → v{balance_now}: {} whose samples flip",
                            flips.describe()
                        ),
                    );
                }
                Some(_) => {}
                None => plan.all("qa_balance version unknown"),
            }
            if planned.get("balance").is_some_and(|s| !s.is_empty()) {
                plan.reasons.push(
                    "(and the studies whose samples flip when qa_balance is recounted)".into(),
                );
            }
        }
        "judge" | "grade"
            if fp["judge"].as_str() != Some(current.judge_id.as_str()) => {
                plan.all(format!(
                    "judge {} → {}",
                    fp["judge"].as_str().unwrap_or("?"),
                    current.judge_id
                ));
            }
        _ => {}
    }
    Ok(plan)
}

/// Studies whose report mentions one of `terms`.
async fn reports_mentioning(lake: &Lake, terms: &BTreeSet<String>) -> Result<Scope> {
    if terms.is_empty() {
        return Ok(Scope::none());
    }
    let ctx = lake.session().await?;
    let batches = collect(&ctx, "extract", "SELECT study_id, text FROM reports").await?;
    let mut studies = BTreeSet::new();
    for batch in &batches {
        let ids = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("extract", e.into()))?;
        let texts = cast(batch.column(1), &DataType::Utf8)
            .map_err(|e| PipelineError::query("extract", e.into()))?;
        let (ids, texts) = (ids.as_string::<i32>(), texts.as_string::<i32>());
        for row in 0..batch.num_rows() {
            if texts.is_null(row) {
                continue;
            }
            let text = texts.value(row).to_lowercase();
            if terms.iter().any(|t| mentions(&text, t)) {
                studies.insert(ids.value(row).to_string());
            }
        }
    }
    Ok(Scope::Studies(studies))
}

/// Studies with a tag text whose match differs between the old definitions and threshold and
/// the current ones, or that mentions one of `terms`.
async fn remapped_studies(
    current: &Current<'_>,
    old_defs: &RefDefs,
    old_threshold: f32,
    terms: &BTreeSet<String>,
) -> Result<Scope> {
    let ctx = current.lake.session().await?;
    let texts = first_column_strings("map", &collect(&ctx, "map", &map::texts_sql()).await?)?;
    let index = |defs: &RefDefs, threshold: f32| {
        ConceptIndex::new(defs, current.embedder.clone(), threshold, HashMap::new())
            .map_err(PipelineError::Embed)
    };
    let old = index(old_defs, old_threshold)?;
    let new = index(current.defs, current.options.map.threshold)?;
    // Kinds defined alike under one threshold map every text alike.
    let threshold_changed = old_threshold != current.options.map.threshold;
    let kinds: Vec<ConceptKind> = ConceptKind::ALL
        .into_iter()
        .filter(|kind| threshold_changed || !kind.defined_alike(old_defs, current.defs))
        .collect();
    let mut changed = Vec::new();
    for text in &texts {
        let lower = text.to_lowercase();
        let mut differs = terms.iter().any(|t| mentions(&lower, t));
        for &kind in &kinds {
            if differs {
                break;
            }
            let a = old.best(kind, text).map_err(PipelineError::Embed)?;
            let b = new.best(kind, text).map_err(PipelineError::Embed)?;
            let key =
                |h: Option<cxrlake_map::Hit<'_>>| h.map(|h| (h.tag.to_string(), h.score.to_bits()));
            differs = key(a) != key(b);
        }
        if differs {
            changed.push(text.clone());
        }
    }
    if changed.is_empty() {
        return Ok(Scope::none());
    }
    let list = changed
        .iter()
        .map(|t| format!("'{}'", t.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT DISTINCT study_id FROM ({}) WHERE text IN ({list})",
        map::TEXTS_BY_STUDY_SQL
    );
    let studies = first_column_strings("map", &collect(&ctx, "map", &sql).await?)?;
    Ok(Scope::Studies(studies.into_iter().collect()))
}

/// Studies whose QA sampling differs between qa_balance at `old` and now: a region or finding
/// whose probability changed samples the studies hashed between the two probabilities, and a
/// finding whose correlated list changed affects every study that may ask about it.
async fn sampling_flips(current: &Current<'_>, old: u64) -> Result<Scope> {
    let lake = current.lake;
    let read = |ctx: datafusion::prelude::SessionContext| async move {
        let batches = collect(
            &ctx,
            "qa",
            "SELECT kind, name, sample_probability, correlated FROM qa_balance",
        )
        .await?;
        let mut out: BTreeMap<(String, String), (f64, Vec<String>)> = BTreeMap::new();
        for batch in &batches {
            let kinds = cast(batch.column(0), &DataType::Utf8)
                .map_err(|e| PipelineError::query("qa", e.into()))?;
            let names = cast(batch.column(1), &DataType::Utf8)
                .map_err(|e| PipelineError::query("qa", e.into()))?;
            let p = batch.column(2).as_primitive::<Float64Type>();
            let correlated = batch.column(3).as_list::<i32>();
            for row in 0..batch.num_rows() {
                let list = if correlated.is_valid(row) {
                    let values = cast(&correlated.value(row), &DataType::Utf8)
                        .map_err(|e| PipelineError::query("qa", e.into()))?;
                    values
                        .as_string::<i32>()
                        .iter()
                        .flatten()
                        .map(str::to_string)
                        .collect()
                } else {
                    Vec::new()
                };
                out.insert(
                    (
                        kinds.as_string::<i32>().value(row).to_string(),
                        names.as_string::<i32>().value(row).to_string(),
                    ),
                    (p.value(row), list),
                );
            }
        }
        Ok::<_, PipelineError>(out)
    };
    let before = read(
        lake.session_with(&HashMap::from([("qa_balance".to_string(), old)]))
            .await?,
    )
    .await?;
    let after = read(lake.session().await?).await?;
    let keys: BTreeSet<_> = before.keys().chain(after.keys()).cloned().collect();
    let mut moved = Vec::new();
    let mut correlated = BTreeSet::new();
    for key in keys {
        let (p0, c0) = before.get(&key).cloned().unwrap_or_default();
        let (p1, c1) = after.get(&key).cloned().unwrap_or_default();
        if p0 != p1 {
            moved.push((key.1.clone(), p0.min(p1), p0.max(p1)));
        }
        if c0 != c1 && key.0 == "finding" {
            correlated.insert(key.1.clone());
        }
    }
    if moved.is_empty() && correlated.is_empty() {
        return Ok(Scope::none());
    }
    let settings = &current.templates.strategies;
    if correlated.iter().any(|f| {
        settings.finding.default_findings.contains(f)
            || settings.finding.default_devices.contains(f)
    }) {
        return Ok(Scope::All);
    }
    let ctx = lake.session().await?;
    // Which studies mention which findings matters only for a changed correlated list.
    let batches = if correlated.is_empty() {
        Vec::new()
    } else {
        collect(
            &ctx,
            "qa",
            "SELECT DISTINCT study_id, e FROM (SELECT study_id, \
             unnest(array_concat(obs_entities, obs_entities_parents)) AS e FROM observations)",
        )
        .await?
    };
    let mut mentioned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for batch in &batches {
        let ids = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("qa", e.into()))?;
        let names = cast(batch.column(1), &DataType::Utf8)
            .map_err(|e| PipelineError::query("qa", e.into()))?;
        for (id, name) in ids
            .as_string::<i32>()
            .iter()
            .zip(names.as_string::<i32>().iter())
        {
            if let (Some(id), Some(name)) = (id, name) {
                mentioned
                    .entry(id.to_string())
                    .or_default()
                    .insert(name.to_string());
            }
        }
    }
    let all = first_column_strings(
        "qa",
        &collect(&ctx, "qa", "SELECT study_id FROM scene_graphs").await?,
    )?;
    let seed = settings.seed;
    let mut studies = BTreeSet::new();
    for study in all {
        let names = mentioned.get(&study);
        let flips = moved.iter().any(|(item, lo, hi)| {
            let u = unit_hash(seed, &study, item);
            u >= *lo && u < *hi
        });
        // Asked when mentioned, or sampled under the old or the new probability.
        let asks_correlated = correlated.iter().any(|f| {
            let key = ("finding".to_string(), f.clone());
            names.is_some_and(|n| n.contains(f))
                || [&before, &after].iter().any(|balance| {
                    balance
                        .get(&key)
                        .is_some_and(|(p, _)| unit_hash(seed, &study, f) < *p)
                })
        });
        if flips || asks_correlated {
            studies.insert(study);
        }
    }
    Ok(Scope::Studies(studies))
}

async fn current<'a>(
    lake: &'a Lake,
    defs: &'a RefDefs,
    templates: &'a Templates,
    options: &'a PipelineOptions,
) -> Result<Current<'a>> {
    Ok(Current {
        lake,
        defs,
        templates,
        options,
        judge_id: options.judge.judge()?.id(),
        extractor: extract::extractor_id(&options.extract),
        embedder: options.map.embedder.load()?,
    })
}

/// Studies, QA pairs, and QA pairs of the studies of `scope`: `written` when the qa stage just
/// wrote them (so they are not counted again).
async fn counts(
    lake: &Lake,
    scope: &Scope,
    written: Option<usize>,
) -> Result<(usize, usize, usize)> {
    let ctx = lake.session().await?;
    let studies = crate::stage::count(&ctx, "qa", "SELECT count(*) FROM scene_graphs").await?;
    let qa_pairs = crate::stage::count(&ctx, "qa", "SELECT count(*) FROM qa").await?;
    let touched = match (scope, written) {
        (Scope::All, _) => qa_pairs,
        (Scope::Studies(ids), _) if ids.is_empty() => 0,
        (Scope::Studies(_), Some(written)) => written,
        (Scope::Studies(ids), None) => {
            let list = ids
                .iter()
                .map(|s| format!("'{}'", s.replace('\'', "''")))
                .collect::<Vec<_>>()
                .join(", ");
            crate::stage::count(
                &ctx,
                "qa",
                &format!("SELECT count(*) FROM qa WHERE study_id IN ({list})"),
            )
            .await?
        }
    };
    Ok((studies, qa_pairs, touched))
}

fn llm_judge(options: &PipelineOptions) -> bool {
    matches!(options.judge.backend, judge::JudgeBackend::Llm(_))
}

/// What a run would recompute, without running anything. Scopes after the first stage that
/// runs are upper bounds: a run passes on only the studies whose rows actually change.
pub async fn plan(lake: &Lake, defs: &RefDefs, options: &PipelineOptions) -> Result<Plan> {
    let templates = options.qa.load_templates(defs)?;
    let current = current(lake, defs, &templates, options).await?;
    let mut planned: HashMap<&'static str, Scope> = HashMap::new();
    let mut stages = Vec::new();
    for stage in STAGES {
        let mut decision = decide(&current, stage, &planned).await?;
        if stage == "grade"
            && let Some(judged) = planned.get("judge") {
                decision.scope.extend(judged);
            }
        planned.insert(stage, decision.scope.clone());
        stages.push(decision);
    }
    let qa_scope = planned.get("qa").cloned().unwrap_or_default();
    let (studies, qa_pairs, touched) = counts(lake, &qa_scope, None).await?;
    Ok(Plan {
        stages,
        studies,
        qa_pairs,
        qa_pairs_touched: touched,
        llm_calls: if llm_judge(options) { 5 * touched } else { 0 },
        ran: false,
    })
}

/// Runs every stage that is not up to date over the studies it must recompute (all of them
/// with `options.full`). Returns the record of what ran.
pub async fn run(lake: &Lake, defs: &RefDefs, options: &PipelineOptions) -> Result<Plan> {
    tracing::debug!("incremental run started");
    remember_refdefs(lake, defs).await?;
    let templates = options.qa.load_templates(defs)?;
    let current = current(lake, defs, &templates, options).await?;
    let detect = !options.full;
    let mut stages: Vec<StagePlan> = Vec::new();
    let mut qa_scope = Scope::none();
    let mut grade_scope = Scope::none();
    let mut qa_written = None;
    for stage in STAGES {
        let deciding = std::time::Instant::now();
        let mut decision = if stage == "judge" {
            // Judge and grade go together: what grade must recompute is judged first.
            let mut d = decide(&current, "grade", &HashMap::new()).await?;
            d.stage = "judge";
            d
        } else if stage == "grade" {
            let mut d = StagePlan::new("grade");
            d.scope = grade_scope.clone();
            d.reasons.push("the judged studies".into());
            d
        } else {
            decide(&current, stage, &HashMap::new()).await?
        };
        tracing::debug!(
            stage,
            seconds = deciding.elapsed().as_secs_f64(),
            "scope decided"
        );
        if decision.scope.is_empty() {
            stages.push(decision);
            continue;
        }
        let started = std::time::Instant::now();
        let scope = decision.scope.clone();
        tracing::info!(stage, scope = scope.describe(), "incremental run");
        let changed = match stage {
            "localize" => {
                localize::run_scoped(lake, defs, &options.localize, &scope, detect)
                    .await?
                    .1
            }
            "extract" => {
                extract::run_scoped(lake, defs, &options.extract, &scope, detect)
                    .await?
                    .1
            }
            "map" => {
                map::run_scoped(lake, defs, &options.map, &scope, detect)
                    .await?
                    .1
            }
            "graph" => {
                graph::run_scoped(lake, defs, &options.graph, &scope, detect)
                    .await?
                    .1
            }
            "balance" => {
                balance::run(lake, &templates).await?;
                Scope::All
            }
            "qa" => {
                qa_scope = scope.clone();
                let summary = qa::run_scoped(lake, defs, &options.qa, &scope).await?;
                qa_written = Some(summary.questions);
                scope.clone()
            }
            "judge" => {
                judge::run_scoped(lake, &options.judge, &scope).await?;
                grade_scope = scope.clone();
                scope.clone()
            }
            _ => grade::run_scoped(lake, &options.judge, &scope).await?.1,
        };
        decision.changed = Some(changed);
        decision.seconds = Some(started.elapsed().as_secs_f64());
        stages.push(decision);
    }
    let counting = std::time::Instant::now();
    let (studies, qa_pairs, touched) = counts(lake, &qa_scope, qa_written).await?;
    tracing::debug!(
        seconds = counting.elapsed().as_secs_f64(),
        "QA pairs counted"
    );
    Ok(Plan {
        stages,
        studies,
        qa_pairs,
        qa_pairs_touched: touched,
        llm_calls: if llm_judge(options) { 5 * touched } else { 0 },
        ran: true,
    })
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn mentions_terms_across_separators() {
        assert!(mentions(
            "small left pleural\n effusion.",
            "pleural effusion"
        ));
        assert!(mentions("pleural-effusions", "pleural effusion"));
        assert!(!mentions(
            "pleural thickening; effusion",
            "pleural effusion"
        ));
        assert!(!mentions("anything", ""));
    }
}
