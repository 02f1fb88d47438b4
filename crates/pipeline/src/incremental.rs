//! `cxrlake run` without a stage: every stage of the graph from the lake's source tables to
//! graded QA pairs, recomputing only what changed since each stage's last run (DESIGN 2.5).
//!
//! Each stage's commits hold its [`Fingerprint`] (input table versions, definitions and
//! settings, SQL hash, code version, run id). A stage is up to date when nothing in it differs.
//! Otherwise it runs over a [`Scope`]; the generic rules are
//!
//! ```text
//! --full, never run, stopped after chunk k of n,      → all studies
//! stopped between its tables' commits, older format,
//! code or SQL changed
//! an input table rewritten since                      → the studies its producer's commits name
//!                                                       (a stage may say more: qa's samples)
//! a definition or setting changed                     → all studies, unless the stage says
//!                                                       which (Stage::rescope)
//! a dataset-wide stage (balance) with any change      → all studies
//! ```
//!
//! and the stages add what their definitions mean (`rescope`):
//!
//! ```text
//! refdefs edited → extract (rules): studies whose report mentions a touched name or synonym
//!                  map: studies with a tag text whose match changed or that mentions a touched
//!                  term (synonym-only edits); all studies otherwise
//!                  localize, graph, qa: nothing for synonym-only edits; all studies otherwise
//! match_threshold → map: studies with a tag text whose match changed
//! qa_balance      → qa: studies whose hash sample flips between the old and new probability,
//!                   and studies asking a finding whose correlated list changed
//! judge           → judge and grade: all studies (content hashes re-judge only the criteria
//!                   whose rendered prompt changed)
//! ```
//!
//! Every scoped run of a stage that detects changes (localize … graph) compares each study's
//! new rows with its old rows (row digests) and records the studies that actually changed in
//! its commits, which are the next stage's scope. The result equals a full rebuild
//! (`tests/it/incremental.rs`, one case per edit kind).

use std::collections::{BTreeSet, HashMap};

use cxrlake_lake::CommitRecord;

use crate::error::Result;
use crate::fingerprint::{CODE_VERSION, CommitMetrics, FINGERPRINT_FORMAT, Fingerprint};
use crate::pipeline::Pipeline;
use crate::refdefs::RefdefsChange;
use crate::runner;
use crate::scope::Scope;
use crate::sql::{count, sql_hash};
use crate::stage::{Coverage, RunMode, Stage, StageDef, StageReport};

/// What a run does (did) in one stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// The stage.
    pub stage: &'static str,
    /// The studies it recomputes (empty: up to date).
    pub scope: Scope,
    /// Why, one line per cause.
    pub reasons: Vec<String>,
    /// After a run: what it did.
    pub report: Option<StageReport>,
}

impl StagePlan {
    fn new(stage: &'static str) -> Self {
        Self {
            stage,
            scope: Scope::none(),
            reasons: Vec::new(),
            report: None,
        }
    }

    /// Recompute every study, because of `reason`.
    pub fn all(&mut self, reason: impl Into<String>) {
        self.scope = Scope::All;
        self.reasons.push(reason.into());
    }

    /// Recompute `studies` too, because of `reason` (nothing when there are none).
    pub fn add(&mut self, studies: &Scope, reason: impl Into<String>) {
        if !studies.is_empty() {
            self.scope.extend(studies);
            self.reasons.push(reason.into());
        }
    }

    /// Adds a note that changes no scope.
    pub fn note(&mut self, note: impl Into<String>) {
        self.reasons.push(note.into());
    }

    /// After a run: the studies whose rows changed.
    pub fn changed(&self) -> Option<&Scope> {
        self.report.as_ref().map(|r| &r.changed)
    }

    /// After a run: seconds.
    pub fn seconds(&self) -> Option<f64> {
        self.report.as_ref().map(|r| r.seconds)
    }

    /// The stage's lines in a plan or run record, `all` naming the study count when known.
    pub fn lines(&self, studies: Option<usize>) -> Vec<String> {
        let describe = |scope: &Scope| match (scope, studies) {
            (Scope::All, Some(studies)) => format!("all {studies} studies"),
            (other, _) => other.describe(),
        };
        if self.scope.is_empty() {
            return vec![format!("{:<9} up to date", self.stage)];
        }
        let mut line = format!("{:<9} {}", self.stage, describe(&self.scope));
        if let Some(changed) = self.changed() {
            line.push_str(&format!(", {} changed", describe(changed)));
        }
        if let Some(seconds) = self.seconds() {
            line.push_str(&format!(" in {seconds:.1} s"));
        }
        let mut lines = vec![line];
        lines.extend(self.reasons.iter().map(|r| format!("            {r}")));
        lines
    }
}

/// A plan (or, after [`run`], the record of a run) over all stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Settings given explicitly that differ from the lake's stored ones: `key: old → new
    /// (source)`.
    pub settings: Vec<String>,
    /// One entry per stage, in order.
    pub stages: Vec<StagePlan>,
    /// Studies in the lake.
    pub studies: usize,
    /// QA pairs in the lake before the run.
    pub qa_pairs: usize,
    /// QA pairs of the studies whose QA pairs are (were) regenerated.
    pub qa_pairs_touched: usize,
    /// LLM requests a run could send at most, by stage (only stages that send any): the LLM
    /// judge's 5 per touched QA pair, and one per row of every other LLM-backed stage's
    /// [`Stage::llm_requests`] over the studies it recomputes (retries aside).
    pub llm_calls: Vec<(&'static str, usize)>,
    /// Whether this records a run (else a plan).
    pub ran: bool,
}

impl Plan {
    /// The stage `name`'s entry.
    pub fn stage(&self, name: &str) -> Option<&StagePlan> {
        self.stages.iter().find(|s| s.stage == name)
    }

    /// The last line: QA pairs and judge calls.
    pub fn footer(&self) -> String {
        let verb = if self.ran {
            "regenerated"
        } else {
            "to regenerate"
        };
        let calls: usize = self.llm_calls.iter().map(|(_, n)| n).sum();
        let by_stage = if self.llm_calls.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = self
                .llm_calls
                .iter()
                .map(|(stage, n)| format!("{stage} {n}"))
                .collect();
            format!(" ({})", parts.join(", "))
        };
        format!(
            "QA pairs {verb}: {} of {}; LLM calls: at most {calls}{by_stage}",
            self.qa_pairs_touched, self.qa_pairs
        )
    }

    /// LLM requests in all.
    pub fn total_llm_calls(&self) -> usize {
        self.llm_calls.iter().map(|(_, n)| n).sum()
    }

    /// The settings lines (empty when no setting changed).
    pub fn settings_lines(&self) -> Vec<String> {
        if self.settings.is_empty() {
            return Vec::new();
        }
        let mut lines = vec!["settings changed since the lake's last run:".to_string()];
        lines.extend(self.settings.iter().map(|s| format!("  {s}")));
        lines
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in self.settings_lines() {
            writeln!(f, "{line}")?;
        }
        for stage in &self.stages {
            for line in stage.lines(Some(self.studies)) {
                writeln!(f, "{line}")?;
            }
        }
        write!(f, "{}", self.footer())
    }
}

/// The newest commit of `stage` on `table`, if any.
async fn last_commit(
    pipeline: &Pipeline,
    table: &str,
    stage: &str,
) -> Result<Option<CommitRecord>> {
    let history = match pipeline.lake().history(table, Some(2_000)).await {
        Ok(history) => history,
        // A stage's own table that no run created yet.
        Err(cxrlake_lake::LakeError::NoSuchTable { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(history
        .into_iter()
        .find(|c| c.stage.as_ref().is_some_and(|s| s.stage == stage)))
}

/// The studies the stage's last run left unfinished (LLM answers it could not use), from that
/// run's commits on the stage's first output table (the next run asks them again).
pub(crate) async fn unfinished_studies(
    pipeline: &Pipeline,
    def: &StageDef,
) -> Result<BTreeSet<String>> {
    let mut studies = BTreeSet::new();
    let Some(table) = def.outputs.first() else {
        return Ok(studies);
    };
    let history = match pipeline.lake().history(table, Some(2_000)).await {
        Ok(history) => history,
        Err(cxrlake_lake::LakeError::NoSuchTable { .. }) => return Ok(studies),
        Err(e) => return Err(e.into()),
    };
    let mut last_run = None;
    for commit in history {
        let Some(stage) = commit.stage.filter(|s| s.stage == def.name) else {
            continue;
        };
        let Some(run) = Fingerprint::from_json(&stage.fingerprint).map(|f| f.run) else {
            break;
        };
        if *last_run.get_or_insert_with(|| run.clone()) != run {
            break;
        }
        if let Some(metrics) = CommitMetrics::from_json(&stage.metrics) {
            studies.extend(metrics.unfinished);
        }
    }
    Ok(studies)
}

/// The studies `producer` changed in `table` after version `since` (its commits' `changed`).
pub(crate) async fn changes_since(
    pipeline: &Pipeline,
    table: &str,
    since: u64,
    producer: Option<&str>,
) -> Result<Scope> {
    let Some(producer) = producer else {
        // A source table rewritten (ingest): its commits do not name studies.
        return Ok(Scope::All);
    };
    let mut scope = Scope::none();
    for commit in pipeline.lake().history(table, Some(2_000)).await? {
        if commit.version <= since {
            break;
        }
        let Some(stage) = commit.stage.filter(|s| s.stage == producer) else {
            continue;
        };
        match CommitMetrics::from_json(&stage.metrics).map(|m| m.changed.scope()) {
            Some(None) => {}
            Some(Some(changed)) => scope.extend(&changed),
            None => return Ok(Scope::All),
        }
    }
    Ok(scope)
}

/// How the definitions changed since `last` (`None`: unchanged; `Err`: the old ones are not in
/// the lake).
pub(crate) async fn refdefs_change(
    pipeline: &Pipeline,
    last: &Fingerprint,
) -> Result<Option<std::result::Result<RefdefsChange, String>>> {
    let now = pipeline.defs().fingerprint();
    match last.definitions.get("refdefs") {
        Some(old) if old != now => Ok(Some(
            RefdefsChange::since(pipeline.lake(), old, pipeline.defs()).await?,
        )),
        Some(_) => Ok(None),
        None => Ok(Some(Err("refdefs not in the last fingerprint".into()))),
    }
}

/// The rescope of stages whose rows change only with structural edits of the definitions
/// (localize, graph, qa): a synonym-only edit recomputes nothing, any other edit everything,
/// and so does any other changed definition.
pub(crate) async fn rescope_structural(
    pipeline: &Pipeline,
    last: &Fingerprint,
    now: &std::collections::BTreeMap<String, String>,
    plan: &mut StagePlan,
) -> Result<()> {
    match refdefs_change(pipeline, last).await? {
        Some(Ok(change)) if change.structural => plan.all(change.describe()),
        Some(Err(reason)) => plan.all(reason),
        _ => {}
    }
    rescope_other_definitions(last, now, plan, &["refdefs"]);
    Ok(())
}

/// The definitions other than `refdefs` (and `handled`) that changed since `last`, each
/// recomputing all; a changed `refdefs` too where no stage rule handles it.
pub(crate) fn rescope_other_definitions(
    last: &Fingerprint,
    now: &std::collections::BTreeMap<String, String>,
    plan: &mut StagePlan,
    handled: &[&str],
) {
    for (key, old, new) in last.changed_definitions(now) {
        if handled.contains(&key) {
            continue;
        }
        plan.all(format!(
            "{key} {} → {}",
            old.unwrap_or("(none)"),
            new.unwrap_or("(none)")
        ));
    }
}

/// Decides what `stage` must recompute; `planned` holds the scopes of the stages before it
/// when planning without running.
async fn decide(
    pipeline: &Pipeline,
    stage: &dyn Stage,
    full: bool,
    planned: &HashMap<&'static str, Scope>,
) -> Result<StagePlan> {
    let def = stage.def();
    let mut plan = StagePlan::new(def.name);
    if full {
        plan.all("--full");
        return Ok(plan);
    }
    // The newest commit of the stage on each of its tables: one run wrote them all.
    let mut last: Option<(Fingerprint, CommitMetrics)> = None;
    let mut runs = BTreeSet::new();
    for table in def.outputs {
        let Some(commit) = last_commit(pipeline, table, def.name).await? else {
            plan.all(format!("never run (no commit on {table})"));
            return Ok(plan);
        };
        let Some(stage_commit) = commit.stage else {
            plan.all("never run");
            return Ok(plan);
        };
        let (Some(fingerprint), Some(metrics)) = (
            Fingerprint::from_json(&stage_commit.fingerprint),
            CommitMetrics::from_json(&stage_commit.metrics),
        ) else {
            plan.all(format!(
                "{table} was written by an older cxrlake (fingerprint format before \
                 {FINGERPRINT_FORMAT})"
            ));
            return Ok(plan);
        };
        runs.insert(fingerprint.run.clone());
        if metrics.chunk < metrics.chunks || metrics.changed == crate::fingerprint::Changed::Pending
        {
            plan.all(format!(
                "the last run stopped after chunk {} of {} ({table})",
                metrics.chunk, metrics.chunks
            ));
            return Ok(plan);
        }
        last.get_or_insert((fingerprint, metrics));
    }
    if runs.len() > 1 {
        plan.all(format!(
            "the last run stopped between its tables' commits ({})",
            def.outputs.join(", ")
        ));
        return Ok(plan);
    }
    let Some((fingerprint, _)) = last else {
        plan.all("never run");
        return Ok(plan);
    };
    if fingerprint.code != CODE_VERSION {
        plan.all(format!("code {} → {CODE_VERSION}", fingerprint.code));
        return Ok(plan);
    }
    if fingerprint.sql != sql_hash(def.sql) {
        plan.all(format!("{} changed", def.file));
        return Ok(plan);
    }
    let unfinished = Scope::Studies(unfinished_studies(pipeline, def).await?);
    plan.add(
        &unfinished,
        format!(
            "{} whose LLM answers the last run could not use",
            unfinished.describe()
        ),
    );
    // Input tables rewritten since.
    for table in def.inputs {
        let producer = pipeline.producer(def.name, table);
        let now = pipeline.input_version(def.name, table).await?;
        let dataset_producer = producer
            .and_then(|p| pipeline.stage(p).ok())
            .is_some_and(|p| p.def().coverage == Coverage::Dataset);
        match fingerprint.inputs.get(*table) {
            None => plan.all(format!("{table} was not an input of the last run")),
            Some(&since) if since == now => {}
            Some(&since) => match stage.input_changes(pipeline, table, since, now).await? {
                Some((studies, reason)) => plan.add(&studies, reason),
                None => {
                    let changed = changes_since(pipeline, table, since, producer).await?;
                    plan.add(&changed, format!("{table} changed: {}", changed.describe()));
                }
            },
        }
        if let Some(pending) = producer.and_then(|p| planned.get(p)) {
            if dataset_producer {
                if !pending.is_empty() {
                    plan.note(format!(
                        "(and the studies that the recount of {table} changes)"
                    ));
                }
            } else {
                plan.add(
                    pending,
                    format!("{table} to be recomputed: {}", pending.describe()),
                );
            }
        }
    }
    let now = crate::stage::identity(stage, pipeline).await?;
    stage
        .rescope(pipeline, &fingerprint, &now, &mut plan)
        .await?;
    if def.coverage == Coverage::Dataset && !plan.scope.is_empty() {
        plan.scope = Scope::All;
    }
    Ok(plan)
}

/// Studies, QA pairs, and QA pairs of the studies of `scope`: `written` when the qa stage just
/// wrote them (so they are not counted again).
async fn counts(
    pipeline: &Pipeline,
    scope: &Scope,
    written: Option<usize>,
) -> Result<(usize, usize, usize)> {
    let ctx = pipeline.lake().session().await?;
    let studies = count(&ctx, "qa", "SELECT count(*) FROM scene_graphs").await?;
    let qa_pairs = count(&ctx, "qa", "SELECT count(*) FROM qa").await?;
    let touched = match (scope, written) {
        (Scope::All, _) => qa_pairs,
        (Scope::Studies(ids), _) if ids.is_empty() => 0,
        (Scope::Studies(_), Some(written)) => written,
        (Scope::Studies(ids), None) => {
            count(
                &ctx,
                "qa",
                &format!(
                    "SELECT count(*) FROM qa WHERE study_id IN ({})",
                    sql_list(ids)
                ),
            )
            .await?
        }
    };
    Ok((studies, qa_pairs, touched))
}

/// `ids` as a SQL list of string literals (`'a', 'b'`).
fn sql_list(ids: &BTreeSet<String>) -> String {
    ids.iter()
        .map(|s| format!("'{}'", s.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn settings_lines(pipeline: &Pipeline) -> Vec<String> {
    pipeline
        .setting_changes()
        .into_iter()
        .map(|(key, old, new, source)| {
            let show = |v: &str| {
                if v.is_empty() {
                    "(built-in)".to_string()
                } else {
                    v.to_string()
                }
            };
            format!("cxrlake.{key}: {} → {} ({source})", show(&old), show(&new))
        })
        .collect()
}

/// What a run would recompute, without running anything. Scopes after the first stage that
/// runs are upper bounds: a run passes on only the studies whose rows actually change.
pub(crate) async fn plan(pipeline: &Pipeline, full: bool) -> Result<Plan> {
    let mut planned: HashMap<&'static str, Scope> = HashMap::new();
    let mut stages = Vec::new();
    // A lake imported from the release: the core stages are not rebuilt (`Pipeline::run` runs
    // only the flavours'), so they pass nothing on.
    let imported = pipeline.imported("scene_graphs").await;
    for stage in pipeline.stages() {
        let name = stage.def().name;
        if imported && crate::flavours::owning(pipeline.flavours(), name).is_none() {
            planned.insert(name, Scope::none());
            stages.push(StagePlan::new(name));
            continue;
        }
        let mut decision = decide(pipeline, stage.as_ref(), full, &planned).await?;
        if pipeline.is_held(name)
            && !decision.scope.is_empty()
            && let Some(flavour) = crate::flavours::owning(pipeline.flavours(), name)
        {
            decision.note(format!(
                "not run: flavour {0} is no longer kept (cxrlake.flavours); `cxrlake run \
                 --flavour {0}` updates it, and `cxrlake export` refuses it while stale",
                flavour.name
            ));
        }
        planned.insert(name, decision.scope.clone());
        stages.push(decision);
    }
    let qa_scope = planned.get("qa").cloned().unwrap_or_default();
    let (studies, qa_pairs, touched) = counts(pipeline, &qa_scope, None).await?;
    Ok(Plan {
        studies,
        qa_pairs,
        qa_pairs_touched: touched,
        llm_calls: llm_calls(pipeline, &stages, touched).await?,
        settings: settings_lines(pipeline),
        stages,
        ran: false,
    })
}

/// The LLM requests of `stages` (their scopes), by stage: at most 5 judge calls per touched QA
/// pair with an LLM judge, and for every other stage whose backend is `llm`, the rows of its
/// [`Stage::llm_requests`] query over its scope.
async fn llm_calls(
    pipeline: &Pipeline,
    stages: &[StagePlan],
    touched: usize,
) -> Result<Vec<(&'static str, usize)>> {
    let mut out = Vec::new();
    let ctx = pipeline.lake().session().await?;
    // A flavour no longer kept is planned but not run.
    let runs = stages
        .iter()
        .filter(|s| !s.scope.is_empty() && !pipeline.is_held(s.stage));
    for plan in runs {
        if plan.stage == "judge" {
            if pipeline.config().judge == "llm" && touched > 0 {
                out.push((plan.stage, 5 * touched));
            }
            continue;
        }
        let Some(requests) = pipeline.stage(plan.stage)?.llm_requests() else {
            continue;
        };
        if pipeline.settings().get(requests.backend).as_deref() != Some("llm") {
            continue;
        }
        let filter = match &plan.scope {
            Scope::All => String::new(),
            Scope::Studies(ids) => format!(" WHERE study_id IN ({})", sql_list(ids)),
        };
        let sql = format!(
            "SELECT count(*) FROM ({}) AS requests{filter}",
            requests.rows
        );
        let calls = count(&ctx, plan.stage, &sql).await?;
        if calls > 0 {
            out.push((plan.stage, calls));
        }
    }
    Ok(out)
}

/// Runs every stage of `names` that is not up to date over the studies it must recompute (all
/// of them with `full`); `observe` sees each stage when it is done. Returns the record of what
/// ran.
pub(crate) async fn run(
    pipeline: &Pipeline,
    full: bool,
    names: &[&'static str],
    observe: &mut dyn FnMut(&StagePlan),
) -> Result<Plan> {
    tracing::debug!("incremental run started");
    let settings = settings_lines(pipeline);
    let mut stages: Vec<StagePlan> = Vec::new();
    let mut qa_scope = Scope::none();
    let mut qa_written = None;
    for stage in pipeline.stages() {
        let def = stage.def();
        if !names.contains(&def.name) {
            continue;
        }
        let deciding = std::time::Instant::now();
        let mut decision = decide(pipeline, stage.as_ref(), full, &HashMap::new()).await?;
        tracing::debug!(
            stage = def.name,
            seconds = deciding.elapsed().as_secs_f64(),
            "scope decided"
        );
        if !decision.scope.is_empty() {
            let scope = decision.scope.clone();
            tracing::info!(
                stage = def.name,
                scope = scope.describe(),
                "incremental run"
            );
            let detect = !full && def.detects_changes;
            let report =
                runner::run(pipeline, stage.as_ref(), &scope, detect, RunMode::Write).await?;
            if def.name == "qa" {
                qa_scope = scope;
                qa_written = Some(report.rows("qa"));
            }
            decision.report = Some(report);
        }
        observe(&decision);
        stages.push(decision);
    }
    let counting = std::time::Instant::now();
    let (studies, qa_pairs, touched) = counts(pipeline, &qa_scope, qa_written).await?;
    tracing::debug!(
        seconds = counting.elapsed().as_secs_f64(),
        "QA pairs counted"
    );
    Ok(Plan {
        settings,
        llm_calls: llm_calls(pipeline, &stages, touched).await?,
        stages,
        studies,
        qa_pairs,
        qa_pairs_touched: touched,
        ran: true,
    })
}

/// The value of `key` in a fingerprint's definitions as a number.
pub(crate) fn number(
    definitions: &std::collections::BTreeMap<String, String>,
    key: &str,
) -> Option<f64> {
    definitions.get(key).and_then(|v| v.parse().ok())
}
