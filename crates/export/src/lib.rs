//! Exports of the lake in the layout of the released dataset (MIMIC-Ext-CXR-QBA): the
//! `scene_graphs` table as one JSON file per study shaped as the paper's appendix D.1, the
//! `qa` table as one JSON file per study shaped as D.2, and whole releases ([`release`]):
//! the FT/PT/A+/A++ subsets (frontal images only) as Parquet and in the PhysioNet layout
//! (zips of these JSON files, seven flat metadata tables, `quality_mappings.csv`);
//! [`import`] reads a release back into a lake. The flavours' exports live in their own crates
//! (`cxrlake_gemex::export`, …) and write with [`flavour`] (JSON and Parquet per split), [`files`]
//! (atomic files, the patient folders) and [`scan`] (a lake table, filtered and ordered).
//!
//! ```text
//! <out_dir>/p10/p10000032/s50414267.scene_graph.json   export_scene_graphs
//! <out_dir>/p10/p10000032/s50414267.qa.json            export_qa
//!           pXX = first 3 chars of the patient id
//! ```
//!
//! Each file is one compact UTF-8 JSON object and a newline, written atomically (temporary file,
//! then rename), with keys in release order. Both exports stream the table in record batches,
//! write on a bounded number of blocking tasks, files in parallel, and take a SQL filter over the
//! table's columns.
//!
//! # Arrow → JSON
//!
//! Arrow cannot hold dicts keyed by data, nor recursive lists, so the lake stores lists of structs
//! that carry their key, and flat answer parts; the exports turn them back into the release's
//! shapes:
//!
//! - `observations`, `regions`: `list<struct<obs_id | region, …>>` → `{obs_id | region: {…}}`;
//! - every `localization`: `list<struct<image_id, bboxes, …>>` → `{image_id: {…}}` (in QA files
//!   without `image_id` in the values);
//! - `study_img_localization_quality`, `question_img_localization_quality`:
//!   `list<struct<image_id, localization_quality>>` → `{image_id: level}`;
//! - scene-graph `modifiers`: `struct<severity, texture, spread, temporal>` of lists → a dict of
//!   four lists; answer-part `modifiers`: `list<struct<modifier_type, value>>` → `[[type,
//!   value], …]`;
//! - `bboxes`: `list<fixed_size_list<f32, 4>>` (`list<list<f32>>` as read back from Delta) →
//!   `[[x1, y1, x2, y2], …]`;
//! - `indication`: a struct whose `answer_for_indication` is an observation node (`OIND`) → an
//!   object, or `null` when the study has none;
//! - `variables`: `list<struct<name, value_json>>` → `{name: value}` with each value parsed;
//! - `answers`: a flat list with `answer_id`, `parent_answer_id` and `answer_level` → the
//!   top-level parts in `answer_id` order, each with its children under `sub_answers` (always
//!   present, possibly `[]`);
//! - QA `extraction_quality`: the five extraction levels plus `localization_quality`, the worst
//!   per-image level of the question (or of the answer part's localization), `null` if none.
//!
//! Every key is written in every object: a null list becomes `[]`, a null dict `{}`, a null
//! quality or modifier struct an object with every key, other nulls stay `null`. Scene graphs
//! carry cxrlake's provenance, `extractor` and `embedder`, at the root, QA files on each
//! question. [`d1`] and [`d2`] list the keys and enumerations; [`validate_scene_graph`] and
//! [`validate_qa`] check a value against them.
//!
//! # Quality levels and ratings
//!
//! As in the release, per-criterion quality values are integers: the lake's level names
//! (`NO_ISSUES`, `BOX_AND_MASK_LOCALIZATION`) become their value in the paper's tables 11 and 12
//! (`4`, `4`; [`cxrlake_schemas::quality`] holds them, `quality_mappings.csv` of a release maps
//! them back), and ratings the release code `<rank>_<grade>` (`5_A+`, `0_not rated`). A question
//! or part that is not judged yet has `null` levels and `rating: null`. The validators accept
//! these encodings only. Answer part `laterality` is spelled as in D.2 (`likely_bilateral`).

mod archive;
mod columns;
pub mod d1;
pub mod d2;
pub mod error;
pub mod files;
pub mod flavour;
pub mod import;
mod inflight;
mod layout;
pub mod qa;
pub mod release;
pub mod scan;
pub mod scene_graphs;
mod sink;
mod summary;
mod validate;
mod writer;

pub use error::{ExportError, Result};
pub use flavour::SplitFiles;
pub use import::{ImportSummary, ReleaseImport, import_release};
pub use qa::{QA_SUFFIX, QaExport, export_qa, qa_path};
pub use release::{
    ReleaseExport, ReleaseFormat, ReleaseSummary, Subset, export_release, quality_mappings_csv,
};
pub use scene_graphs::{
    SCENE_GRAPH_SUFFIX, SceneGraphExport, export_scene_graphs, scene_graph_json, study_path,
};
pub use summary::{ExportKind, ExportSummary};
pub use validate::{validate_qa, validate_scene_graph};
