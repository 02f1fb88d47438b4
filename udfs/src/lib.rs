//! cxrlake's DataFusion functions and planner rules: one function per file, registered once.
//!
//! Families are modules (`rating`, `boxes`, `extract`, `generate`, …). [`session_context`]
//! builds the `SessionContext` every cxrlake command uses: DataFusion's defaults plus all of our
//! functions, the rating-order rule and the zero-copy unnest ([`unnest`]), so any SQL over the
//! lake sees the same semantics.

pub mod args;
pub mod boxes;
pub mod conform_to;
pub mod extract;
pub mod generate;
pub mod grade;
pub mod graph;
pub mod judge;
mod llm_ask;
pub mod localize;
pub mod map;
pub mod portable;
pub mod qa;
pub mod rating;
pub mod release;
pub mod rows;
pub mod unnest;

use std::sync::Arc;

use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::optimizer::Analyzer;
use datafusion::prelude::{SessionConfig, SessionContext};

/// Every scalar function cxrlake adds.
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::from(rating::RatingRankFunc::new())),
        Arc::new(ScalarUDF::from(rating::ToRatingFunc::new())),
        Arc::new(ScalarUDF::from(rating::ReleaseRatingFunc::new())),
        Arc::new(ScalarUDF::from(release::KeepImagesFunc::new())),
        Arc::new(ScalarUDF::from(release::EveryImageFunc::new())),
        Arc::new(ScalarUDF::from(release::ListLengthFunc::new())),
        Arc::new(ScalarUDF::from(conform_to::ConformToFunc::new())),
        Arc::new(ScalarUDF::from(release::SampleHashFunc::new())),
        Arc::new(ScalarUDF::from(release::QualityValueFunc::new())),
        Arc::new(ScalarUDF::from(release::ExtractionRatingFunc::new())),
        Arc::new(ScalarUDF::from(boxes::MaskAreaFunc::new())),
        Arc::new(ScalarUDF::from(boxes::MaskBboxFunc::new())),
        Arc::new(ScalarUDF::from(boxes::MaskUnionFunc::new())),
        Arc::new(ScalarUDF::from(boxes::MaskIntersectionFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxUnionFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxIntersectionFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxAreaFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxClampFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxIouFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxIopFunc::new())),
        Arc::new(ScalarUDF::from(boxes::BoxIotFunc::new())),
        Arc::new(ScalarUDF::from(map::MapTextsFunc::new())),
        Arc::new(ScalarUDF::from(map::MatchConceptFunc::from_settings())),
        Arc::new(ScalarUDF::from(generate::LintBannedTermsFunc::new())),
        Arc::new(ScalarUDF::from(generate::CheckChoicesFunc::new())),
        Arc::new(ScalarUDF::from(generate::NearDuplicatesFunc::new())),
    ]
}

/// Every aggregate function cxrlake adds.
pub fn aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    vec![
        Arc::new(AggregateUDF::from(rating::RatingExtremumFunc::min())),
        Arc::new(AggregateUDF::from(rating::RatingExtremumFunc::max())),
        Arc::new(AggregateUDF::from(boxes::MaskUnionAggFunc::new())),
    ]
}

/// Registers every cxrlake function with a context.
pub fn register_all(ctx: &SessionContext) {
    for udf in scalar_functions() {
        ctx.register_udf(udf.as_ref().clone());
    }
    for udaf in aggregate_functions() {
        ctx.register_udaf(udaf.as_ref().clone());
    }
}

/// A `SessionContext` with DataFusion's defaults, cxrlake's functions, the rating-order rule
/// (which runs before type coercion, so it sees the query as written) and the zero-copy unnest
/// (a physical optimizer rule, after DataFusion's own).
pub fn session_context(config: SessionConfig) -> SessionContext {
    session_context_on(config, Arc::new(RuntimeEnv::default()))
}

/// Like [`session_context`], sharing `runtime` (object stores, memory pool, caches) with another
/// context, e.g. a lake session whose Delta tables registered their object stores there.
pub fn session_context_on(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> SessionContext {
    let mut rules = Analyzer::new().rules;
    rules.insert(0, Arc::new(rating::RatingOrderRule::new()));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_analyzer_rules(rules)
        .with_physical_optimizer_rule(Arc::new(unnest::SliceUnnestRule::new()))
        .build();
    let ctx = SessionContext::new_with_state(state);
    register_all(&ctx);
    ctx
}
