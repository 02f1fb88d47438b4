//! Exports of the lake in the layout of the released dataset (MIMIC-Ext-CXR-QBA). For now: the
//! `scene_graphs` table as one JSON file per study, shaped as the paper's appendix D.1.
//!
//! ```text
//! <out_dir>/p10/p10000032/s50414267.scene_graph.json     pXX = first 3 chars of the patient id
//! ```
//!
//! Each file is one compact UTF-8 JSON object and a newline, written atomically (temporary file,
//! then rename), with keys in D.1 order.
//!
//! # Arrow → JSON
//!
//! Arrow cannot hold dicts keyed by data, so the lake stores lists of structs that carry their
//! key; the export turns them back into D.1's dicts:
//!
//! - `observations`, `regions`: `list<struct<obs_id | region, …>>` → `{obs_id | region: {…}}`;
//! - every `localization`: `list<struct<image_id, bboxes, …>>` → `{image_id: {…}}`;
//! - `study_img_localization_quality`: `list<struct<image_id, localization_quality>>` →
//!   `{image_id: level}`;
//! - `modifiers`: `struct<severity, texture, spread, temporal>` of lists → a dict of four lists;
//! - `bboxes`: `list<fixed_size_list<f32, 4>>` (`list<list<f32>>` as read back from Delta) →
//!   `[[x1, y1, x2, y2], …]`;
//! - `indication`: a struct whose `answer_for_indication` is an observation node (`OIND`) → an
//!   object, or `null` when the study has none.
//!
//! Every D.1 key is written in every object: a null list becomes `[]`, a null dict `{}`, a null
//! quality or modifier struct an object with every key, other nulls stay `null`. The root also
//! carries cxrlake's provenance, `extractor` and `embedder`. [`d1`] lists the keys and
//! enumerations; [`validate_scene_graph`] checks a value against them.

mod columns;
pub mod d1;
pub mod error;
mod files;
mod layout;
pub mod scene_graphs;
mod validate;
mod writer;

pub use error::{ExportError, Result};
pub use scene_graphs::{
    ExportSummary, SCENE_GRAPH_SUFFIX, SceneGraphExport, export_scene_graphs, scene_graph_json,
    study_path,
};
pub use validate::validate_scene_graph;
