//! Stage functions that travel: a stage's own functions hold the run's definitions (regions,
//! templates, sampling probabilities), which a Ballista executor does not have. A [`Recipe`] says
//! how to build them from data alone; [`stage_functions`] builds a stage's functions from it and
//! wraps each in a [`PortableFunc`] that carries the recipe, so that the plan codecs can send it
//! ([`recipe_of`]) and the receiver can build the same functions ([`receive`], once per recipe
//! and process).
//!
//! ```text
//!  driver:   Recipe + RefDefs ──stage_functions──► [PortableFunc { inner, wire }]
//!  codec:    try_encode_udf ──► wire = deflate(json { definitions' texts, recipe })
//!  executor: try_decode_udf(name, wire) ──receive──► the same functions (cached by wire)
//! ```
//!
//! A stage whose functions call an LLM or fill a cache in the driver (LLM extraction and
//! judging, matches with a model embedder) has no recipe: it runs in the driver.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, LazyLock, Mutex};

use cxrlake_embed::LexicalEmbedder;
use cxrlake_extract::rules::RulesExtractor;
use cxrlake_judge::Judge;
use cxrlake_map::{ConceptIndex, Reference};
use cxrlake_qa::{Balance, Engine};
use cxrlake_refdefs::{RefDefs, Sources};
use cxrlake_templates::Templates;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, internal_datafusion_err, plan_datafusion_err};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use serde::{Deserialize, Serialize};

use crate::extract::{Naming, rules_functions};
use crate::grade::GradeQaFunc;
use crate::graph::{BuildSceneGraphFunc, GraphRegionsFunc};
use crate::judge::{HeuristicVerdictFunc, JudgeRequestsFunc};
use crate::localize::LocalizeRegionsFunc;
use crate::map::{MapObservationsFunc, MatchConceptFunc};
use crate::qa::GenerateQaFunc;

/// How to build a stage's functions from the reference definitions and data alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Recipe {
    /// `localize`: `localize_regions`, dropping boxes under `min_area` px².
    Localize {
        /// `cxrlake.min_area`.
        min_area: f64,
    },
    /// `extract` with the rules extractor: the three extraction steps.
    RulesExtract,
    /// `map` with the lexical embedder (recomputed wherever it runs, nothing cached):
    /// `match_concept` and `map_observations`.
    LexicalMap {
        /// `cxrlake.match_threshold`.
        threshold: f32,
    },
    /// `graph`: `graph_regions` and `build_scene_graph`.
    Graph,
    /// `qa`: `generate_qa` over these templates and sampling inputs.
    Qa {
        /// The templates folder's `(file name, text)` pairs.
        templates: Vec<(String, String)>,
        /// `qa_balance` as the engine reads it.
        balance: Balance,
    },
    /// `judge` with the heuristic judge: `judge_requests` and `heuristic_verdict`.
    HeuristicJudge,
    /// `grade` with the heuristic judge: `judge_hashes` and `grade_qa`.
    HeuristicGrade,
}

impl Recipe {
    /// The functions, built over `defs`.
    fn build(&self, defs: &RefDefs) -> Result<Vec<ScalarUDF>> {
        let heuristic = Arc::new(Judge::Heuristic);
        Ok(match self {
            Self::Localize { min_area } => {
                vec![ScalarUDF::from(LocalizeRegionsFunc::new(defs, *min_area))]
            }
            Self::RulesExtract => {
                rules_functions(&Arc::new(RulesExtractor::new(defs)), Naming::Step).into()
            }
            Self::LexicalMap { threshold } => {
                let embedder = Arc::new(LexicalEmbedder::new());
                let concepts = ConceptIndex::new(defs, embedder, *threshold, HashMap::new())
                    .map_err(|e| plan_datafusion_err!("map's concepts: {e}"))?;
                let concepts = Arc::new(concepts);
                vec![
                    ScalarUDF::from(MatchConceptFunc::new(concepts.clone())),
                    ScalarUDF::from(MapObservationsFunc::new(
                        concepts,
                        Arc::new(Reference::new(defs)),
                    )),
                ]
            }
            Self::Graph => {
                let reference = Arc::new(Reference::new(defs));
                vec![
                    ScalarUDF::from(GraphRegionsFunc::new(reference.clone(), defs.fingerprint())),
                    ScalarUDF::from(BuildSceneGraphFunc::new(reference, defs.fingerprint())),
                ]
            }
            Self::Qa { templates, balance } => {
                let templates = Templates::from_files(templates.clone(), defs)
                    .map_err(|e| plan_datafusion_err!("the run's templates: {e}"))?;
                let identity = format!(
                    "{}/{}/{}",
                    defs.fingerprint(),
                    templates.version(),
                    balance.identity()
                );
                let engine = Engine::new(templates, Reference::new(defs), balance.clone());
                vec![ScalarUDF::from(GenerateQaFunc::new(
                    Arc::new(engine),
                    identity,
                ))]
            }
            Self::HeuristicJudge => vec![
                ScalarUDF::from(JudgeRequestsFunc::new(heuristic)),
                ScalarUDF::from(HeuristicVerdictFunc::new()),
            ],
            Self::HeuristicGrade => vec![
                ScalarUDF::from(JudgeRequestsFunc::hashes(heuristic)),
                ScalarUDF::from(GradeQaFunc::new()),
            ],
        })
    }
}

/// What travels with a function: the definitions' files and the recipe.
#[derive(Serialize, Deserialize)]
struct Wire {
    /// `(file path, text)` of every definitions file ([`Sources::texts`]).
    definitions: Vec<(String, String)>,
    recipe: Recipe,
}

/// A stage's functions from `recipe` over `defs`, each carrying the recipe to wherever a plan
/// that calls it is sent.
pub fn stage_functions(recipe: Recipe, defs: &RefDefs) -> Result<Vec<ScalarUDF>> {
    let functions = recipe.build(defs)?;
    let wire = Wire {
        definitions: defs.sources().texts(),
        recipe,
    };
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::fast());
    serde_json::to_writer(&mut encoder, &wire)
        .map_err(|e| internal_datafusion_err!("cannot encode a stage recipe: {e}"))?;
    Ok(carrying(functions, encoder.finish()?.into()))
}

/// `functions`, each carrying `wire`.
fn carrying(functions: Vec<ScalarUDF>, wire: Arc<[u8]>) -> Vec<ScalarUDF> {
    functions
        .into_iter()
        .map(|inner| {
            ScalarUDF::new_from_impl(PortableFunc {
                inner,
                wire: wire.clone(),
            })
        })
        .collect()
}

/// The recipe `function` carries, for a plan codec (`None`: it needs none, or cannot travel).
pub fn recipe_of(function: &ScalarUDF) -> Option<&[u8]> {
    function
        .inner()
        .downcast_ref::<PortableFunc>()
        .map(|f| f.wire.as_ref())
}

/// Whether `function` can be rebuilt where a plan is sent: one of cxrlake's own functions, or a
/// stage function with a recipe.
pub fn travels(function: &ScalarUDF) -> bool {
    recipe_of(function).is_some()
        || crate::scalar_functions()
            .iter()
            .any(|f| f.name() == function.name())
}

/// Functions built from each recipe received, by its bytes.
type Received = HashMap<Arc<[u8]>, Vec<ScalarUDF>>;

/// What this process built from the recipes it received: every task of a stage carries the same
/// recipe, and building parses the definitions and templates.
static RECEIVED: LazyLock<Mutex<Received>> = LazyLock::new(Mutex::default);

/// Recipes kept built; a process that served more stages builds older ones again.
const RECEIVED_KEPT: usize = 16;

/// Function `name` built from `wire` (what [`recipe_of`] gave the sender).
pub fn receive(name: &str, wire: &[u8]) -> Result<ScalarUDF> {
    let pick = |functions: &[ScalarUDF]| {
        functions
            .iter()
            .find(|f| f.name() == name)
            .cloned()
            .ok_or_else(|| {
                plan_datafusion_err!("the recipe sent with {name} does not build a function {name}")
            })
    };
    if let Some(functions) = received().get(wire) {
        return pick(functions);
    }
    let mut json = Vec::new();
    DeflateDecoder::new(wire)
        .read_to_end(&mut json)
        .map_err(|e| internal_datafusion_err!("cannot inflate the recipe of {name}: {e}"))?;
    let sent: Wire = serde_json::from_slice(&json)
        .map_err(|e| internal_datafusion_err!("cannot decode the recipe of {name}: {e}"))?;
    let sources = Sources::from_texts(&sent.definitions).ok_or_else(|| {
        internal_datafusion_err!("the recipe of {name} lacks reference definition files")
    })?;
    let defs = RefDefs::from_sources(sources)
        .map_err(|e| plan_datafusion_err!("the reference definitions sent with {name}: {e}"))?;
    // Rebuilt functions carry the sender's bytes on.
    let wire: Arc<[u8]> = wire.into();
    let functions = carrying(sent.recipe.build(&defs)?, wire.clone());
    let function = pick(&functions)?;
    let mut kept = received();
    if kept.len() >= RECEIVED_KEPT {
        kept.clear();
    }
    kept.insert(wire, functions);
    Ok(function)
}

fn received() -> std::sync::MutexGuard<'static, Received> {
    // A panic while holding the lock leaves a cache that is still valid.
    RECEIVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A stage function with its recipe: it computes what `inner` computes.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PortableFunc {
    inner: ScalarUDF,
    wire: Arc<[u8]>,
}

impl ScalarUDFImpl for PortableFunc {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_strict(&self) -> bool {
        self.inner.inner().is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs() -> RefDefs {
        RefDefs::embedded().expect("embedded definitions")
    }

    #[test]
    fn every_recipe_travels_and_builds_the_same_functions() -> Result<()> {
        let defs = defs();
        let templates = Templates::embedded(&defs).expect("embedded templates");
        for recipe in [
            Recipe::Localize { min_area: 50.0 },
            Recipe::RulesExtract,
            Recipe::LexicalMap { threshold: 0.8 },
            Recipe::Graph,
            Recipe::Qa {
                templates: templates.files().to_vec(),
                balance: Balance::default(),
            },
            Recipe::HeuristicJudge,
            Recipe::HeuristicGrade,
        ] {
            let sent = stage_functions(recipe.clone(), &defs)?;
            assert!(!sent.is_empty(), "{recipe:?}");
            for function in &sent {
                assert!(travels(function), "{}", function.name());
                let wire = recipe_of(function).expect("a recipe");
                let got = receive(function.name(), wire)?;
                assert_eq!(got.name(), function.name());
                assert_eq!(got.signature(), function.signature());
                // Equal functions: the same definitions' fingerprint and parameters (the rules
                // functions are equal only to those sharing their extractor).
                if recipe != Recipe::RulesExtract {
                    assert_eq!(&got, function, "{recipe:?}");
                }
                // Built once per recipe.
                let again = receive(function.name(), wire)?;
                assert!(
                    Arc::ptr_eq(again.inner(), got.inner()),
                    "{} rebuilt",
                    function.name()
                );
            }
        }
        Ok(())
    }

    #[test]
    fn a_damaged_recipe_is_an_error_naming_the_function() {
        let err = receive("localize_regions", b"not deflate").expect_err("garbage decodes");
        assert!(err.to_string().contains("localize_regions"), "{err}");
        let defs = defs();
        let sent = stage_functions(Recipe::Graph, &defs).expect("graph functions");
        let wire = recipe_of(&sent[0]).expect("a recipe");
        let err = receive("generate_qa", wire).expect_err("a function the recipe lacks");
        assert!(err.to_string().contains("generate_qa"), "{err}");
    }

    #[test]
    fn cxrlake_functions_travel_without_a_recipe() {
        let functions = crate::scalar_functions();
        let rank = functions
            .iter()
            .find(|f| f.name() == "rating_rank")
            .expect("rating_rank");
        assert!(travels(rank) && recipe_of(rank).is_none());
        let local = ScalarUDF::from(HeuristicVerdictFunc::new());
        assert!(!travels(&local));
    }
}
