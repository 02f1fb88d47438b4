//! [`Pipeline`]: a lake, its resolved settings (the lake's stored ones reused), the definitions
//! they name (loaded once per run), and the stage graph. Every stage receives it; `plan`,
//! `status`, `run` and a single stage's run go through it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cxrlake_embed::Embedder;
use cxrlake_extract::prompts::Prompts;
use cxrlake_judge::{Judge, JudgePrompts};
use cxrlake_lake::{CxrlakeConfig, Lake, Settings};
use cxrlake_llm::LlmConfig;
use cxrlake_refdefs::RefDefs;
use cxrlake_templates::Templates;

use crate::error::{PipelineError, Result};
use crate::flavours::Flavours;
use crate::incremental::{self, Plan, StagePlan};
use crate::runner;
use crate::scope::Scope;
use crate::settings::{self, StoredRun};
use crate::stage::{RunMode, Stage, StageReport};

/// A pipeline over one lake.
pub struct Pipeline {
    lake: Lake,
    settings: Settings,
    stored: Option<StoredRun>,
    run_id: String,
    stages: Vec<Arc<dyn Stage>>,
    /// The flavours it knows.
    flavours: Flavours,
    /// The stages of flavours the lake holds tables of but no longer keeps.
    held: Vec<&'static str>,
    progress: bool,
    defs: RefDefs,
    templates: OnceLock<Arc<Templates>>,
    embedder: OnceLock<Arc<dyn Embedder>>,
    prompts: OnceLock<Arc<Prompts>>,
    judge_prompts: OnceLock<Arc<JudgePrompts>>,
    /// The reading judge's reader (its rules lexicon is compiled once per pipeline).
    reader: OnceLock<Arc<crate::reading::RulesReader>>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("lake", &self.lake.root().as_str())
            .field("run_id", &self.run_id)
            .field("stages", &self.stage_names())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Pipeline`].
#[derive(Debug)]
pub struct PipelineBuilder {
    lake: Lake,
    flavours: Flavours,
    settings: Settings,
    reuse_stored: bool,
    progress: bool,
    extra: Vec<Arc<dyn Stage>>,
    add_flavours: Vec<String>,
    remove_flavours: Vec<String>,
}

impl PipelineBuilder {
    /// Resolve with these settings (the lake's own by default).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets one `cxrlake.*` key, as a flag would.
    pub fn set(mut self, key: &str, value: &str) -> Result<Self> {
        self.settings.set(key, value)?;
        Ok(self)
    }

    /// Whether the lake's stored settings are reused (default yes; `--reset` says no).
    pub fn reuse_stored_settings(mut self, reuse: bool) -> Self {
        self.reuse_stored = reuse;
        self
    }

    /// Show progress bars on stderr (when it is a terminal).
    pub fn progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Keeps the flavours `names` besides the lake's (`--flavour`): the kept list grows.
    pub fn add_flavours(mut self, names: &[String]) -> Self {
        self.add_flavours.extend(names.iter().cloned());
        self
    }

    /// Stops keeping the flavours `names` (`--no-flavour`): their tables stay, and `plan` and
    /// `status` go on showing whether they are up to date.
    pub fn remove_flavours(mut self, names: &[String]) -> Self {
        self.remove_flavours.extend(names.iter().cloned());
        self
    }

    /// Adds a stage after the built-in ones.
    pub fn stage(mut self, stage: Arc<dyn Stage>) -> Self {
        self.extra.push(stage);
        self
    }

    /// Resolves the settings and loads the reference definitions.
    pub async fn open(self) -> Result<Pipeline> {
        let mut settings = self.settings;
        let lake = self
            .lake
            .with_session_factory(cxrlake_udfs::session_context_on);
        let stored = settings::stored_run(&lake).await?;
        if let (Some(stored), true) = (&stored, self.reuse_stored) {
            settings::apply_stored(&mut settings, stored)?;
        }
        crate::flavours::keep(
            self.flavours,
            &mut settings,
            &self.add_flavours,
            &self.remove_flavours,
        )?;
        settings::resolve_backends(&mut settings)?;
        let defs = load_refdefs(&settings.cxrlake)?;
        let mut stages = crate::stages::graph();
        let mut held = Vec::new();
        let kept = crate::flavours::selected(self.flavours, &settings.cxrlake.flavours)?;
        for flavour in self.flavours {
            if kept.iter().any(|f| f.name == flavour.name) {
                stages.extend((flavour.stages)());
            } else if crate::flavours::built(&lake, flavour).await? {
                // Tables of a flavour no longer kept: planned (so `plan`, `status` and the
                // exports see whether they are stale), never run by `cxrlake run`.
                let flavour_stages = (flavour.stages)();
                held.extend(flavour_stages.iter().map(|s| s.def().name));
                stages.extend(flavour_stages);
            }
        }
        stages.extend(self.extra);
        let mut names: Vec<&str> = stages.iter().map(|s| s.def().name).collect();
        names.sort_unstable();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(PipelineError::Refused(format!(
                "two stages are named {}",
                twice[0]
            )));
        }
        Ok(Pipeline {
            lake,
            settings,
            stored,
            run_id: format!(
                "{}-{}",
                chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
            stages,
            flavours: self.flavours,
            held,
            progress: self.progress,
            defs,
            templates: OnceLock::new(),
            embedder: OnceLock::new(),
            prompts: OnceLock::new(),
            judge_prompts: OnceLock::new(),
            reader: OnceLock::new(),
        })
    }
}

/// The value of `cell`, loaded by `load` the first time.
fn loaded<T: Clone>(cell: &OnceLock<T>, load: impl FnOnce() -> Result<T>) -> Result<T> {
    if let Some(value) = cell.get() {
        return Ok(value.clone());
    }
    let value = load()?;
    Ok(cell.get_or_init(|| value).clone())
}

/// The reference definitions `cxrlake.refdefs` names.
fn load_refdefs(config: &CxrlakeConfig) -> Result<RefDefs> {
    let result = match settings::path(&config.refdefs) {
        Some(dir) => RefDefs::load(&dir),
        None => RefDefs::embedded(),
    };
    result.map_err(|err| match err {
        cxrlake_refdefs::Error::Invalid(diagnostics) => PipelineError::Definitions(format!(
            "{} error(s) in the reference definitions{}; run `cxrlake refdefs check` for all. \
             First: {}",
            diagnostics.len(),
            settings::path(&config.refdefs)
                .map(|p| format!(" of {}", p.display()))
                .unwrap_or_default(),
            diagnostics
                .first()
                .map(ToString::to_string)
                .unwrap_or_default()
        )),
        other => PipelineError::Definitions(format!("reference definitions: {other}")),
    })
}

impl Pipeline {
    /// A pipeline over `lake` with the lake's settings (add flags with the builder), knowing
    /// the flavours `flavours` (`cxrlake_flavours::ALL`; `&[]` for the built-in stages only).
    pub fn builder(lake: Lake, flavours: Flavours) -> PipelineBuilder {
        let settings = lake.settings().clone();
        PipelineBuilder {
            lake,
            flavours,
            settings,
            reuse_stored: true,
            progress: false,
            extra: Vec::new(),
            add_flavours: Vec::new(),
            remove_flavours: Vec::new(),
        }
    }

    /// A pipeline over `lake` with the lake's settings and its stored ones reused.
    pub async fn open(lake: Lake, flavours: Flavours) -> Result<Pipeline> {
        Self::builder(lake, flavours).open().await
    }

    /// The flavours it knows.
    pub fn flavours(&self) -> Flavours {
        self.flavours
    }

    /// The lake (its sessions have cxrlake's functions).
    pub fn lake(&self) -> &Lake {
        &self.lake
    }

    /// The resolved settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The resolved `cxrlake.*` values.
    pub fn config(&self) -> &CxrlakeConfig {
        &self.settings.cxrlake
    }

    /// The lake's last run, as stored.
    pub fn stored(&self) -> Option<&StoredRun> {
        self.stored.as_ref()
    }

    /// Settings given explicitly that differ from the lake's stored ones: `(key, stored, now,
    /// source)`.
    pub fn setting_changes(&self) -> Vec<(String, String, String, cxrlake_lake::Source)> {
        self.stored
            .as_ref()
            .map(|stored| settings::changes(&self.settings, stored))
            .unwrap_or_default()
    }

    /// This run's id (in every commit's fingerprint and in `runs`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether stages show progress bars.
    pub fn shows_progress(&self) -> bool {
        self.progress
    }

    /// The reference definitions `cxrlake.refdefs` names.
    pub fn defs(&self) -> &RefDefs {
        &self.defs
    }

    /// The QA templates `cxrlake.templates` names, checked against the definitions.
    pub fn templates(&self) -> Result<Arc<Templates>> {
        loaded(&self.templates, || {
            Ok(Arc::new(match settings::path(&self.config().templates) {
                Some(dir) => Templates::load(&dir, &self.defs)?,
                None => Templates::embedded(&self.defs)?,
            }))
        })
    }

    /// The embedder `cxrlake.embedder` names (a model is loaded once per pipeline).
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        loaded(&self.embedder, || {
            let config = self.config();
            cxrlake_embed::load(&config.embedder, &config.onnx_model, &config.onnx_tokenizer)
                .map_err(|e| match e {
                    cxrlake_embed::EmbedError::InvalidSetting(reason) => {
                        PipelineError::setting("embedder", reason)
                    }
                    other => PipelineError::Embed(other),
                })
        })
    }

    /// The LLM `cxrlake.llm_*` name (`None`: no endpoint).
    pub fn llm(&self) -> Result<Option<LlmConfig>> {
        settings::llm_config(self.config())
    }

    /// The LLM, required by `backend` (`extractor` or `judge`) set to `llm`.
    pub fn required_llm(&self, backend: &str) -> Result<LlmConfig> {
        self.llm()?.ok_or_else(|| {
            PipelineError::setting(
                "llm_endpoint",
                format!(
                    "cxrlake.{backend} = llm needs an endpoint: --llm-endpoint URL --model NAME"
                ),
            )
        })
    }

    /// The extraction prompts `cxrlake.prompts` names.
    pub fn prompts(&self) -> Result<Arc<Prompts>> {
        loaded(&self.prompts, || {
            Ok(Arc::new(match settings::path(&self.config().prompts) {
                Some(dir) => Prompts::load(&dir).map_err(|e| {
                    PipelineError::Definitions(format!("extraction prompts {}: {e}", dir.display()))
                })?,
                None => Prompts::embedded(),
            }))
        })
    }

    /// The judge `cxrlake.judge` names (its id and how it builds requests).
    pub fn judge(&self) -> Result<Judge> {
        Ok(match self.config().judge.as_str() {
            "llm" => Judge::Llm {
                model: self.required_llm("judge")?.model,
                prompts: self.judge_prompts()?,
                batch: settings::judge_batch(self.config())?,
            },
            "reading" => Judge::Reading {
                reader: loaded(&self.reader, || {
                    Ok(Arc::new(crate::reading::RulesReader::new(self.defs())))
                })?,
            },
            _ => Judge::Heuristic,
        })
    }

    fn judge_prompts(&self) -> Result<Arc<JudgePrompts>> {
        loaded(&self.judge_prompts, || {
            Ok(Arc::new(
                match settings::path(&self.config().judge_prompts) {
                    Some(dir) => JudgePrompts::load(&dir).map_err(|e| {
                        PipelineError::Definitions(format!("judge prompts {}: {e}", dir.display()))
                    })?,
                    None => JudgePrompts::embedded(),
                },
            ))
        })
    }

    /// The stages in graph order.
    pub fn stages(&self) -> &[Arc<dyn Stage>] {
        &self.stages
    }

    /// The stage names in graph order.
    pub fn stage_names(&self) -> Vec<&'static str> {
        self.stages.iter().map(|s| s.def().name).collect()
    }

    /// Whether stage `name` belongs to a flavour the lake holds tables of but no longer keeps
    /// (`cxrlake.flavours`): planned, not run.
    pub fn is_held(&self, name: &str) -> bool {
        self.held.contains(&name)
    }

    /// The stage `name`; an unknown name is an error listing the stages (a stage of a flavour
    /// not selected says which flavour to add).
    pub fn stage(&self, name: &str) -> Result<&Arc<dyn Stage>> {
        self.stages
            .iter()
            .find(|s| s.def().name == name)
            .ok_or_else(|| match crate::flavours::owning(self.flavours, name) {
                Some(flavour) => PipelineError::Refused(format!(
                    "stage {name} belongs to the flavour {0}: add --flavour {0}",
                    flavour.name
                )),
                None => PipelineError::UnknownStage {
                    name: name.to_string(),
                    stages: self.stage_names().join(", "),
                },
            })
    }

    /// The stage that writes `table` for `stage`: the nearest one before it in the graph with
    /// `table` among its outputs (`None`: a source table).
    pub fn producer(&self, stage: &str, table: &str) -> Option<&'static str> {
        let index = self.stages.iter().position(|s| s.def().name == stage)?;
        self.stages[..index]
            .iter()
            .rev()
            .find(|s| s.def().outputs.contains(&table))
            .map(|s| s.def().name)
    }

    /// The version of `table` that `stage` reads: the newest its producer committed (a later
    /// commit by another stage, e.g. grade's rewrite of `qa`, is not the producer's output),
    /// else the newest.
    pub async fn input_version(&self, stage: &str, table: &str) -> Result<u64> {
        let newest = self.lake.table(table).await?.version().unwrap_or(0) as u64;
        let Some(producer) = self.producer(stage, table) else {
            return Ok(newest);
        };
        let history = self.lake.history(table, Some(2_000)).await?;
        Ok(history
            .iter()
            .find(|c| c.stage.as_ref().is_some_and(|s| s.stage == producer))
            .map_or(newest, |c| c.version))
    }

    /// The versions of every input of `stage` it reads now.
    pub(crate) async fn input_versions(&self, stage: &dyn Stage) -> Result<HashMap<String, u64>> {
        let mut versions = HashMap::new();
        for table in stage.def().inputs {
            versions.insert(
                table.to_string(),
                self.input_version(stage.def().name, table).await?,
            );
        }
        Ok(versions)
    }

    /// Runs stage `name` over every study and records the run in `runs`.
    pub async fn run_stage(&self, name: &str, mode: RunMode) -> Result<StageReport> {
        let stage = self.stage(name)?.clone();
        if mode == RunMode::Write {
            self.refuse_over_import(&[stage.def().name]).await?;
            self.record(&format!("run {name}"), &[name]).await?;
        }
        runner::run(self, stage.as_ref(), &Scope::All, false, mode).await
    }

    /// Runs stage `name` over `scope` (with `detect`, passing on only the studies whose rows
    /// changed).
    pub async fn run_stage_over(
        &self,
        name: &str,
        scope: &Scope,
        detect: bool,
    ) -> Result<StageReport> {
        let stage = self.stage(name)?.clone();
        runner::run(self, stage.as_ref(), scope, detect, RunMode::Write).await
    }

    /// What [`Pipeline::run`] would recompute, without running anything.
    pub async fn plan(&self, full: bool) -> Result<Plan> {
        incremental::plan(self, full).await
    }

    /// Runs every stage that is not up to date over the studies it must recompute (all of
    /// them with `full`); `observe` sees each stage as it ends.
    pub async fn run(&self, full: bool, observe: &mut dyn FnMut(&StagePlan)) -> Result<Plan> {
        let mut names = self.stage_names();
        names.retain(|name| !self.is_held(name));
        if self.imported("scene_graphs").await {
            // A lake imported from the release: only the flavours' stages can run.
            names = self.flavour_stages_over_import(&names).await?;
        }
        self.refuse_over_import(&names).await?;
        self.record(if full { "run --full" } else { "run" }, &names)
            .await?;
        crate::refdefs::load_reference_tables(&self.lake, &self.defs).await?;
        incremental::run(self, full, &names, observe).await
    }

    /// Whether `table`'s newest commit is a release imported with `cxrlake import release`.
    pub(crate) async fn imported(&self, table: &str) -> bool {
        self.lake
            .history(table, Some(1))
            .await
            .ok()
            .and_then(|mut commits| commits.pop())
            .and_then(|commit| commit.stage)
            .is_some_and(|commit| commit.stage == "import")
    }

    /// On an imported lake, the selected flavours' stages (the built-in ones would rebuild the
    /// imported tables from sources the lake does not have); a flavour that reads the report text
    /// is refused, naming what it lacks.
    async fn flavour_stages_over_import(
        &self,
        names: &[&'static str],
    ) -> Result<Vec<&'static str>> {
        let ctx = self.lake.session().await?;
        let mut out = Vec::new();
        for name in names {
            let Some(flavour) = crate::flavours::owning(self.flavours, name) else {
                continue;
            };
            for table in self.stage(name)?.def().inputs {
                let source = matches!(*table, "reports" | "sentences" | "chexpert_labels");
                let empty = source
                    && crate::sql::count(&ctx, name, &format!("SELECT count(*) FROM {table}"))
                        .await?
                        == 0;
                if empty {
                    return Err(PipelineError::Refused(format!(
                        "flavour {} reads table {table} (stage {name}), which a lake imported \
                         from the release does not have: the release holds scene graphs and QA \
                         pairs, not the MIMIC-CXR reports. Build it on a lake made from the \
                         sources (`cxrlake ingest`, then `cxrlake run --flavour {}`); on this \
                         lake, `--flavour givcxr` reads only scene graphs and images",
                        flavour.name, flavour.name
                    )));
                }
            }
            out.push(*name);
        }
        if out.is_empty() {
            return Err(PipelineError::Refused(
                "this lake holds a release imported with `cxrlake import release`: the built-in \
                 stages would rebuild scene_graphs and qa from the MIMIC-CXR sources, which it \
                 does not have. Query it (`cxrlake sql`, `cxrlake stats`, `cxrlake report`), \
                 export subsets (`cxrlake export release`), run a flavour that reads only scene \
                 graphs (`cxrlake run --flavour givcxr`), or build a lake from the sources \
                 (`cxrlake ingest`, then `cxrlake run`)"
                    .into(),
            ));
        }
        Ok(out)
    }

    /// Refuses to run stages that would rebuild a table whose newest commit is a release
    /// imported with `cxrlake import release`: the lake has no sources to rebuild it from, and
    /// the stage would replace the imported rows with nothing.
    async fn refuse_over_import(&self, stages: &[&'static str]) -> Result<()> {
        for name in stages {
            for table in self.stage(name)?.def().outputs {
                if *table != "quarantine" && self.imported(table).await {
                    return Err(PipelineError::Refused(format!(
                        "{table} holds a release imported with `cxrlake import release`; stage \
                         {name} would rebuild it from the MIMIC-CXR sources, which this lake does \
                         not have, and replace it. Query it (`cxrlake sql`, `cxrlake stats`), \
                         export subsets (`cxrlake export release`), or build a lake from the \
                         sources (`cxrlake ingest`, then `cxrlake run`)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Checks that every setting names something usable (templates, prompts, embedder, the
    /// LLM and its PHI guard), so that a run records only settings it can run with.
    pub fn validate(&self) -> Result<()> {
        self.templates()?;
        self.embedder()?;
        self.prompts()?;
        self.judge()?;
        crate::extract::extractor_id(self)?;
        for flavour in self.flavours {
            (flavour.check)(self)?;
        }
        let flavours = !self.config().flavours.is_empty();
        if let Some(llm) = self.llm()?
            && (self.config().extractor == "llm"
                || self.config().judge == "llm"
                || (flavours && self.config().generator == "llm"))
        {
            // The configuration, the PHI guard and the API key, as a client checks them.
            cxrlake_llm::LlmClient::new(llm)?;
        }
        Ok(())
    }

    /// Appends this run to `runs` and keeps the definitions' sources for later diffs.
    async fn record(&self, command: &str, stages: &[&str]) -> Result<()> {
        self.validate()?;
        crate::refdefs::remember_refdefs(&self.lake, &self.defs).await?;
        settings::record_run(&self.lake, &self.run_id, command, stages, &self.settings).await
    }
}
