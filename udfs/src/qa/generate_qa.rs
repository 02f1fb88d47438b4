//! `generate_qa(scene_graph)`: one study's questions from its `scene_graphs` row (a struct with
//! at least `study_id`, `observations`, `regions`, `indication`, `located_at_relations`,
//! `obs_relations`), as `list<struct>` with the `qa` columns from `question_id` to `answers`.

use std::sync::Arc;

use cxrlake_schemas::pipeline::qa;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use rayon::prelude::*;

use super::arrays::questions_array;
use crate::rows::decode_rows;
use cxrlake_qa::{Engine, Question, Scene, SceneGraphIn};

/// `list<struct>` of the `qa` columns `generate_qa` fills: those from `question_id` to
/// `answers`, in table order (the study keys come from `scene_graphs`, the judged columns later).
pub fn generated_type() -> DataType {
    let schema = qa();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .skip_while(|f| f.name() != "question_id")
        .take_while(|f| f.name() != "question_quality")
        .map(|f| f.as_ref().clone())
        .collect();
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(Fields::from(fields)),
        true,
    )))
}

/// The `generate_qa` scalar function.
#[derive(Debug)]
pub struct GenerateQaFunc {
    engine: Arc<Engine>,
    identity: String,
    signature: Signature,
}

impl GenerateQaFunc {
    /// The function over this engine; `identity` names its inputs (refdefs fingerprint,
    /// templates version, balance hash).
    pub fn new(engine: Arc<Engine>, identity: String) -> Self {
        Self {
            engine,
            identity,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

crate::graph::reference_identity!(GenerateQaFunc);

impl ScalarUDFImpl for GenerateQaFunc {
    fn name(&self) -> &str {
        "generate_qa"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(generated_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let graphs: Vec<Option<SceneGraphIn>> = decode_rows(&args[0], self.name())?;
        // Studies are independent: generate them on every core. Questions borrow their texts
        // from the scenes.
        let scenes: Vec<Option<Scene>> = graphs
            .into_par_iter()
            .map(|graph| graph.map(Scene::new))
            .collect();
        let questions: Vec<Vec<Question<'_>>> = scenes
            .par_iter()
            .map(|scene| {
                scene
                    .as_ref()
                    .map(|s| self.engine.generate(s))
                    .unwrap_or_default()
            })
            .collect();
        let array = questions_array(&questions)?;
        drop(questions);
        // Freeing the scene graphs' strings: the pool does it while the plan goes on.
        rayon::spawn(move || drop(scenes));
        Ok(ColumnarValue::Array(array))
    }
}
