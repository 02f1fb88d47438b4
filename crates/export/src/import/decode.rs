//! Release JSON → lake rows: the layout of [`crate::layout`] read backwards, so the exports, the
//! validators and the import share one description of every object. Each release file is
//! streamed once through serde (no intermediate `serde_json::Value`, no JSON text) straight into
//! the Arrow columns of the lake table ([`super::columns`]), field by field as the layout maps
//! them; a member that cannot be used is rolled back and leaves no rows.
//!
//! ```text
//! {"O01": {…}, "O02": {…}}           ──Dict──▶  [{obs_id: "O01", …}, {obs_id: "O02", …}]
//! {image_id: 3}                      ──LevelDict▶ [{image_id, localization_quality: "NAME"}]
//! [{id 0, sub_answers: [{id 1}]}]    ──Tree──▶  [{id 0, parent ∅}, {id 1, parent 0}]
//! 3 (a quality value)                ──Level──▶ its level name (quality_mappings.csv)
//! "4_A" (a rating code)              ──Rating─▶ "A"
//! ```

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use cxrlake_schemas::Rating;
use cxrlake_schemas::quality;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::columns::{Column, Fill, Seen, StructColumn};
use crate::layout::{Node, QUALITY, QUESTION, ROOT, Scalar, Shape};

/// The quality codes of a release: `(aspect key, integer value)` → level name, read from its
/// `quality_mappings.csv` (or cxrlake's own table, [`Codes::builtin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codes {
    /// Per aspect key (sorted), its codes (sorted) with their level names: a few short lists,
    /// searched faster than hashing the key and the code of every quality value.
    levels: Vec<(String, Vec<(i64, String)>)>,
}

impl Codes {
    /// The codes cxrlake writes (tables 11 and 12's values).
    pub fn builtin() -> Self {
        let mut levels: HashMap<String, HashMap<i64, String>> = HashMap::new();
        for aspect in quality::ALL {
            for level in aspect.levels {
                levels
                    .entry(aspect.key.to_string())
                    .or_default()
                    .insert(i64::from(level.value), level.name.to_string());
            }
        }
        Self::from_map(levels)
    }

    fn from_map(levels: HashMap<String, HashMap<i64, String>>) -> Self {
        let mut levels: Vec<(String, Vec<(i64, String)>)> = levels
            .into_iter()
            .map(|(key, codes)| {
                let mut codes: Vec<(i64, String)> = codes.into_iter().collect();
                codes.sort_unstable();
                (key, codes)
            })
            .collect();
        levels.sort_unstable();
        Self { levels }
    }

    /// The codes of a `quality_mappings.csv` (`aspect,key,value,level,rating`; the rating rows
    /// are skipped); the error names the line.
    pub fn parse(csv: &str) -> Result<Self, String> {
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| h.eq_ignore_ascii_case(name))
                .ok_or_else(|| format!("line 1: no `{name}` column (found {})", header.join(",")))
        };
        let (key, value, level) = (column("key")?, column("value")?, column("level")?);
        let mut levels: HashMap<String, HashMap<i64, String>> = HashMap::new();
        for (index, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let field = |i: usize| fields.get(i).copied().unwrap_or_default();
            if line.trim().is_empty() || field(key) == "rating" {
                continue;
            }
            let code: i64 = field(value).parse().map_err(|_| {
                format!(
                    "line {}: value `{}` is not an integer",
                    index + 2,
                    field(value)
                )
            })?;
            levels
                .entry(field(key).to_string())
                .or_default()
                .insert(code, field(level).to_string());
        }
        if levels.is_empty() {
            return Err("no quality levels".into());
        }
        Ok(Self::from_map(levels))
    }

    /// The level name of `code` for the aspect `key`.
    fn level(&self, key: &str, code: i64) -> Option<&str> {
        let (_, codes) = self.levels.iter().find(|(name, _)| name == key)?;
        codes
            .iter()
            .find(|(value, _)| *value == code)
            .map(|(_, name)| name.as_str())
    }
}

/// The ids a release file must carry (those of its path) and the provenance written where the
/// file has none.
#[derive(Debug, Clone, Copy)]
pub struct FileIds<'a> {
    /// `pXXXXXXXX` of the member's folder.
    pub patient_id: &'a str,
    /// `sXXXXXXXX` of the member's name.
    pub study_id: &'a str,
    /// `extractor` / `embedder` of rows without them (`release:<version>`).
    pub provenance: &'a str,
}

/// The rows of one lake table under construction: members are decoded into them one at a time,
/// and a member that cannot be used leaves nothing behind.
pub(super) struct Rows {
    schema: SchemaRef,
    root: StructColumn,
    /// Spare answer-part columns: a part's children wait in one until the part's row is done.
    spares: RefCell<Vec<StructColumn>>,
}

impl Rows {
    /// Empty rows of a lake table; the error names a column the import cannot build.
    pub fn new(schema: &SchemaRef) -> Result<Self, String> {
        Ok(Self {
            schema: Arc::clone(schema),
            root: StructColumn::new(schema.fields())?,
            spares: RefCell::default(),
        })
    }

    /// Adds the `qa` rows of a `*.qa.json` file, one per question, and returns how many. The
    /// error says which key holds what cannot be read.
    pub fn qa(&mut self, bytes: &[u8], ids: FileIds<'_>, codes: &Codes) -> Result<usize, String> {
        let before = self.root.len();
        let ctx = Ctx::new(codes, &self.spares);
        let mut seen = FileSeen::default();
        let seed = QaFileSeed {
            ctx: &ctx,
            ids,
            root: &mut self.root,
            seen: &mut seen,
        };
        let read = run(&ctx, bytes, seed).and_then(|()| seen.check(ids));
        self.kept(before, read.map(|()| seen.rows))
    }

    /// Adds the `scene_graphs` row of a `*.scene_graph.json` file.
    pub fn scene_graph(
        &mut self,
        bytes: &[u8],
        ids: FileIds<'_>,
        codes: &Codes,
    ) -> Result<usize, String> {
        let before = self.root.len();
        let ctx = Ctx::new(codes, &self.spares);
        let seed = RowSeed {
            ctx: &ctx,
            node: &ROOT,
            ids,
            root: &mut self.root,
            question: false,
        };
        let read = run(&ctx, bytes, seed).and_then(|seen| seen.check(ids));
        self.kept(before, read.map(|()| 1))
    }

    /// Adds the `images` rows of a study's `*.metadata.json` file, one per image.
    pub fn images(&mut self, bytes: &[u8], ids: FileIds<'_>) -> Result<usize, String> {
        let before = self.root.len();
        let read = self.image_rows(bytes, ids);
        self.kept(before, read)
    }

    /// `read`, after rolling back to `before` rows if it failed.
    fn kept(&mut self, before: usize, read: Result<usize, String>) -> Result<usize, String> {
        if read.is_err() {
            self.root.truncate(before);
        }
        read
    }

    fn image_rows(&mut self, bytes: &[u8], ids: FileIds<'_>) -> Result<usize, String> {
        let json: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
        let text = |key: &str| json[key].as_str().map(str::to_string);
        FileSeen {
            patient_id: text("patient_id"),
            study_id: text("study_id"),
            rows: 0,
        }
        .check(ids)?;
        let images = json["images"].as_array().ok_or("no `images` list")?;
        for image in images {
            let image_id = image["image_id"]
                .as_str()
                .ok_or("an image without image_id")?;
            let view = image["view_position"].as_str();
            let frontal = Value::Bool(view == Some("frontal"));
            self.root.finish_row(Seen::default(), |name| match name {
                "image_id" => Fill::Text(image_id),
                "patient_id" | "study_id" | "study_date" | "procedure" | "split" => {
                    Fill::Json(&json[name])
                }
                "view_position" => Fill::Json(&image["dicom_view_position"]),
                "view" => view.map_or(Fill::Keep, Fill::Text),
                "is_frontal" => Fill::Json(&frontal),
                "rows" => Fill::Json(&image["height"]),
                "columns" => Fill::Json(&image["width"]),
                _ => Fill::Keep,
            })?;
        }
        Ok(images.len())
    }

    pub fn len(&self) -> usize {
        self.root.len()
    }

    /// The rows as a batch of the table's schema.
    pub fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        let (_, columns, _) = self.root.finish()?.into_parts();
        RecordBatch::try_new(self.schema, columns)
    }
}

/// Runs `seed` over `bytes`; the error names the key path.
fn run<'de, S: DeserializeSeed<'de>>(
    ctx: &Ctx<'_>,
    bytes: &'de [u8],
    seed: S,
) -> Result<S::Value, String> {
    // One check of the whole file is cheaper than serde_json's check of every string.
    let text = std::str::from_utf8(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = seed.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    value.map_err(|error| {
        let path = ctx.path.borrow();
        match error.classify() {
            serde_json::error::Category::Data if !path.is_empty() => {
                format!("{}: {error}", path.join(": "))
            }
            _ => format!("invalid JSON: {error}"),
        }
    })
}

/// The ids a file carried and the rows written.
#[derive(Debug, Default)]
struct FileSeen {
    patient_id: Option<String>,
    study_id: Option<String>,
    rows: usize,
}

impl FileSeen {
    fn check(&self, ids: FileIds<'_>) -> Result<(), String> {
        if self.patient_id.as_deref() != Some(ids.patient_id)
            || self.study_id.as_deref() != Some(ids.study_id)
        {
            return Err(format!(
                "ids {}/{} do not match the member's path ({}/{})",
                self.patient_id.as_deref().unwrap_or("(none)"),
                self.study_id.as_deref().unwrap_or("(none)"),
                ids.patient_id,
                ids.study_id
            ));
        }
        Ok(())
    }
}

/// What every seed shares: the codes, the spare answer-part columns, the key path (left at the
/// failing key on error), and the rating of the question being written.
struct Ctx<'a> {
    codes: &'a Codes,
    spares: &'a RefCell<Vec<StructColumn>>,
    path: RefCell<Vec<&'static str>>,
    question_rating: Cell<Option<Rating>>,
}

impl<'a> Ctx<'a> {
    fn new(codes: &'a Codes, spares: &'a RefCell<Vec<StructColumn>>) -> Self {
        Self {
            codes,
            spares,
            path: RefCell::new(Vec::new()),
            question_rating: Cell::new(None),
        }
    }

    /// An empty column like `parts` for a part's children.
    fn spare(&self, parts: &StructColumn) -> Result<StructColumn, String> {
        match self.spares.borrow_mut().pop() {
            Some(spare) => Ok(spare),
            None => StructColumn::new(&parts.fields),
        }
    }
}

/// The children of an answer part, read before the part's row is done: their rows, each
/// followed by its descendants, and which of them are the part's own.
struct Children {
    rows: StructColumn,
    direct: Vec<usize>,
}

/// Reads the fields of `node` in `map` into the row being written to `target` (keys the layout
/// does not know, and `skip`, are passed over; the last of repeated keys counts); the children
/// of an answer part go to `children`. Leaves the row open ([`StructColumn::finish_row`]).
fn fields<'de, A: MapAccess<'de>>(
    ctx: &Ctx<'_>,
    node: &'static Node,
    mut map: A,
    target: &mut StructColumn,
    skip: Option<&str>,
    mut children: Option<&mut Children>,
) -> Result<Seen, A::Error> {
    let mut seen = Seen::default();
    let mut hint = 0;
    let (slots, columns) = target.slots(node);
    while let Some(index) = map.next_key_seed(FieldIndex { node, hint })? {
        let Some(index) = index else {
            map.next_value::<IgnoredAny>()?;
            continue;
        };
        hint = index + 1;
        let (name, shape) = &node.fields[index];
        ctx.path.borrow_mut().push(name);
        match (shape, slots[index], children.as_deref_mut()) {
            (Shape::Children(child), _, Some(kids)) => {
                map.next_value_seed(ChildrenSeed {
                    ctx,
                    node: child,
                    kids,
                })?;
            }
            (_, Some(at), _) if skip != Some(*name) => {
                let column = &mut columns[at];
                if seen.written(at) {
                    column.truncate(column.len() - 1);
                }
                let non_null = map.next_value_seed(ShapeSeed { ctx, shape, column })?;
                seen.set(at, non_null);
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        ctx.path.borrow_mut().pop();
    }
    Ok(seen)
}

/// A key of a `node` object: its field index, or `None` for a key the layout does not know.
/// Keys mostly come in layout order: `hint` (the field after the last one) is tried first.
struct FieldIndex {
    node: &'static Node,
    hint: usize,
}

impl<'de> DeserializeSeed<'de> for FieldIndex {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldIndex {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        // Fields the file leaves out make the next key a few fields on: search on from the
        // hint, then from the start.
        let fields = self.node.fields;
        let hint = self.hint.min(fields.len());
        let after = fields[hint..].iter().position(|(name, _)| *name == key);
        Ok(after
            .map(|at| hint + at)
            .or_else(|| fields[..hint].iter().position(|(name, _)| *name == key)))
    }
}

/// A `qa.json` file: its ids and one row per question.
struct QaFileSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    ids: FileIds<'o>,
    root: &'o mut StructColumn,
    seen: &'o mut FileSeen,
}

impl<'de> DeserializeSeed<'de> for QaFileSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for QaFileSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a QA file {patient_id, study_id, questions}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            match name.as_str() {
                "patient_id" => self.seen.patient_id = map.next_value()?,
                "study_id" => self.seen.study_id = map.next_value()?,
                "questions" => {
                    self.ctx.path.borrow_mut().push("questions");
                    self.seen.rows += map.next_value_seed(QuestionsSeed {
                        ctx: self.ctx,
                        ids: self.ids,
                        root: &mut *self.root,
                    })?;
                    self.ctx.path.borrow_mut().pop();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct QuestionsSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    ids: FileIds<'o>,
    root: &'o mut StructColumn,
}

impl<'de> DeserializeSeed<'de> for QuestionsSeed<'_, '_> {
    type Value = usize;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for QuestionsSeed<'_, '_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of questions")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut rows = 0;
        while seq
            .next_element_seed(RowSeed {
                ctx: self.ctx,
                node: &QUESTION,
                ids: self.ids,
                root: &mut *self.root,
                question: true,
            })?
            .is_some()
        {
            rows += 1;
        }
        Ok(rows)
    }
}

/// One lake row (a question or a scene graph): the node's fields, a question's file ids,
/// `rating` and `rating_rank` (its `question_quality.rating`), and the provenance where the
/// file has none. A scene graph's row gives the ids it carries.
struct RowSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    ids: FileIds<'o>,
    root: &'o mut StructColumn,
    question: bool,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_, '_> {
    type Value = FileSeen;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<FileSeen, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_, '_> {
    type Value = FileSeen;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object", self.node.name)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FileSeen, A::Error> {
        self.ctx.question_rating.set(None);
        let row = self.root.len();
        let seen = fields(self.ctx, self.node, map, self.root, None, None)?;
        let carried = |name: &str| {
            let column = self.root.index(name)?;
            let text = seen.non_null(column).then(|| self.root.text(column, row));
            text.flatten().map(str::to_string)
        };
        let file = if self.question {
            FileSeen::default()
        } else {
            FileSeen {
                patient_id: carried("patient_id"),
                study_id: carried("study_id"),
                rows: 1,
            }
        };
        let (ids, question) = (self.ids, self.question);
        let rating = self.ctx.question_rating.get();
        self.root
            .finish_row(seen, |name| match name {
                "patient_id" if question => Fill::Text(ids.patient_id),
                "study_id" if question => Fill::Text(ids.study_id),
                // A scene graph without them fails the caller's check of its ids.
                "patient_id" | "study_id" => Fill::Text(""),
                "rating" if question => rating.map_or(Fill::Keep, |r| Fill::Text(r.as_str())),
                "rating_rank" if question => {
                    rating.map_or(Fill::Keep, |r| Fill::Int(i64::from(r.rank())))
                }
                "extractor" | "embedder" => Fill::Text(ids.provenance),
                _ => Fill::Keep,
            })
            .map_err(de::Error::custom)?;
        Ok(file)
    }
}

/// An object of `node`, with the key of a dict entry written as its field.
struct ObjectSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    target: &'o mut StructColumn,
    keyed: Option<(&'static str, &'o str)>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object", self.node.name)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let skip = self.keyed.map(|(field, _)| field);
        let seen = fields(self.ctx, self.node, map, self.target, skip, None)?;
        self.target
            .finish_row(seen, |name| match self.keyed {
                Some((field, key)) if field == name => Fill::Text(key),
                _ => Fill::Keep,
            })
            .map_err(de::Error::custom)
    }
}

/// One answer part and, after its row, its descendants; its `parent_answer_id` is null (the
/// caller sets it for a child once the parent's id is known).
struct PartSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    target: &'o mut StructColumn,
}

impl<'de> DeserializeSeed<'de> for PartSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PartSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object", self.node.name)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let mut kids = Children {
            rows: self.ctx.spare(self.target).map_err(de::Error::custom)?,
            direct: Vec::new(),
        };
        let row = self.target.len();
        let seen = fields(self.ctx, self.node, map, self.target, None, Some(&mut kids))?;
        self.target
            .finish_row(seen, |_| Fill::Keep)
            .map_err(de::Error::custom)?;
        if kids.rows.len() > 0 {
            adopt(self.target, row, &mut kids).map_err(de::Error::custom)?;
        }
        self.ctx.spares.borrow_mut().push(kids.rows);
        Ok(())
    }
}

/// Appends the children of the part in `row` of `parts` after it, with its id as their parent.
fn adopt(parts: &mut StructColumn, row: usize, kids: &mut Children) -> Result<(), String> {
    let column = |name: &str| {
        parts
            .index(name)
            .ok_or_else(|| format!("the lake's answer parts have no `{name}`"))
    };
    let (id, parent) = (column("answer_id")?, column("parent_answer_id")?);
    let id = match &parts.columns[id] {
        Column::Int64(ids) => ids.get(row),
        _ => None,
    };
    if let Column::Int64(parents) = &mut kids.rows.columns[parent] {
        for &child in &kids.direct {
            parents.set(child, id);
        }
    }
    parts.extend_from(&kids.rows);
    kids.rows.truncate(0);
    Ok(())
}

/// `sub_answers`: the children, each followed by its descendants.
struct ChildrenSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    kids: &'o mut Children,
}

impl<'de> DeserializeSeed<'de> for ChildrenSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChildrenSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of answer parts")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let row = self.kids.rows.len();
            let part = PartSeed {
                ctx: self.ctx,
                node: self.node,
                target: &mut self.kids.rows,
            };
            if seq.next_element_seed(part)?.is_none() {
                return Ok(());
            }
            self.kids.direct.push(row);
        }
    }
}

/// A plain scalar (list items, pair members, box coordinates).
static PLAIN: Shape = Shape::Scalar(Scalar::Text);

/// A value of `shape`, written to `column` in the lake's form; whether it was not null.
struct ShapeSeed<'c, 'a> {
    ctx: &'c Ctx<'c>,
    shape: &'a Shape,
    column: &'a mut Column,
}

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_, '_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

/// A value written (`Ok(true)`: not null), or why not.
fn written<E: de::Error>(result: Result<(), String>) -> Result<bool, E> {
    result.map(|()| true).map_err(E::custom)
}

impl ShapeSeed<'_, '_> {
    fn mismatch<E: de::Error>(&self, what: &str) -> E {
        E::custom(format!("{what} where the layout has {:?}", self.shape))
    }

    fn level<E: de::Error>(self, aspect: &quality::Aspect, code: i64) -> Result<bool, E> {
        match self.ctx.codes.level(aspect.key, code) {
            Some(name) => written(self.column.push_str(name)),
            None => Err(E::custom(format!(
                "unknown {} code {code} (not in quality_mappings.csv)",
                aspect.key
            ))),
        }
    }

    /// A list whose items `item` reads into the list's item column.
    fn list<'de, A: SeqAccess<'de>>(
        self,
        mut seq: A,
        mut item: impl FnMut(&mut A, &mut Column) -> Result<bool, A::Error>,
    ) -> Result<bool, A::Error> {
        let list = self.column.as_list().map_err(de::Error::custom)?;
        while item(&mut seq, &mut list.item)? {}
        list.close();
        Ok(true)
    }

    /// A list of `node` objects (or answer parts: `parts`).
    fn objects<'de, A: SeqAccess<'de>>(
        self,
        seq: A,
        node: &'static Node,
        parts: bool,
    ) -> Result<bool, A::Error> {
        let ctx = self.ctx;
        self.list(seq, |seq, column| {
            let target = column.as_struct().map_err(de::Error::custom)?;
            Ok(if parts {
                seq.next_element_seed(PartSeed { ctx, node, target })?
            } else {
                let keyed = None;
                seq.next_element_seed(ObjectSeed {
                    ctx,
                    node,
                    target,
                    keyed,
                })?
            }
            .is_some())
        })
    }

    /// An object of `node` in a struct column.
    fn object<'de, A: MapAccess<'de>>(self, map: A, node: &'static Node) -> Result<bool, A::Error> {
        let target = self.column.as_struct().map_err(de::Error::custom)?;
        let seen = fields(self.ctx, node, map, target, None, None)?;
        written(target.finish_row(seen, |_| Fill::Keep))
    }

    /// `{key: value}` entries as a list of structs: `entry` writes one row (its key given).
    fn entries<'de, A: MapAccess<'de>>(
        self,
        mut map: A,
        mut entry: impl FnMut(&mut A, &mut StructColumn, String) -> Result<(), A::Error>,
    ) -> Result<bool, A::Error> {
        let list = self.column.as_list().map_err(de::Error::custom)?;
        let target = list.item.as_struct().map_err(de::Error::custom)?;
        while let Some(key) = map.next_key::<String>()? {
            entry(&mut map, target, key)?;
        }
        list.close();
        Ok(true)
    }
}

/// The columns of two fields of `target`.
fn two_columns<E: de::Error>(target: &StructColumn, a: &str, b: &str) -> Result<(usize, usize), E> {
    let column = |name: &str| {
        target
            .index(name)
            .ok_or_else(|| E::custom(format!("the lake's column has no `{name}`")))
    };
    Ok((column(a)?, column(b)?))
}

impl<'de> Visitor<'de> for ShapeSeed<'_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value of shape {:?}", self.shape)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        self.column.push_null();
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<bool, E> {
        match self.shape {
            Shape::Scalar(_) => written(self.column.push_bool(value)),
            _ => Err(self.mismatch("a boolean")),
        }
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<bool, E> {
        match self.shape {
            Shape::Scalar(Scalar::Level(aspect)) => self.level(aspect, value),
            Shape::Scalar(_) => written(self.column.push_i64(value)),
            _ => Err(self.mismatch("a number")),
        }
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<bool, E> {
        match i64::try_from(value) {
            Ok(value) => self.visit_i64(value),
            Err(_) => Err(E::custom(format!("{value} is out of range"))),
        }
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<bool, E> {
        match self.shape {
            Shape::Scalar(Scalar::Level(_)) => Err(E::custom(format!(
                "quality value {value} is not an integer code"
            ))),
            Shape::Scalar(_) => written(self.column.push_f64(value)),
            _ => Err(self.mismatch("a number")),
        }
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<bool, E> {
        let text = match self.shape {
            Shape::Scalar(Scalar::Level(aspect)) => {
                if aspect.level(text).is_none() {
                    return Err(E::custom(format!("unknown {} value `{text}`", aspect.key)));
                }
                text
            }
            Shape::Scalar(Scalar::Rating) => {
                let rating = rating(text).map_err(E::custom)?;
                if self
                    .ctx
                    .path
                    .borrow()
                    .ends_with(&["question_quality", "rating"])
                {
                    self.ctx.question_rating.set(Some(rating));
                }
                rating.as_str()
            }
            Shape::Scalar(Scalar::Respelled(respelling)) => respelling
                .from_lake
                .iter()
                .find(|(_, json)| *json == Some(text))
                .map_or(text, |(lake, _)| *lake),
            Shape::Scalar(_) => text,
            _ => return Err(self.mismatch("a string")),
        };
        written(self.column.push_str(text))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        let ctx = self.ctx;
        match self.shape {
            Shape::List(scalar) => {
                let shape = Shape::Scalar(*scalar);
                self.list(seq, |seq, column| {
                    let item = ShapeSeed {
                        ctx,
                        shape: &shape,
                        column,
                    };
                    Ok(seq.next_element_seed(item)?.is_some())
                })
            }
            Shape::Boxes => self.list(seq, |seq, column| {
                Ok(seq.next_element_seed(BoxSeed { ctx, column })?.is_some())
            }),
            Shape::Objects(node) => self.objects(seq, node, false),
            Shape::Tree(node) => self.objects(seq, node, true),
            Shape::Pairs(pair) => self.list(seq, |seq, column| {
                let target = column.as_struct().map_err(de::Error::custom)?;
                let seed = PairSeed {
                    ctx,
                    fields: pair,
                    target,
                };
                Ok(seq.next_element_seed(seed)?.is_some())
            }),
            _ => Err(self.mismatch("a list")),
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        let ctx = self.ctx;
        match self.shape {
            Shape::Optional(node) | Shape::Fixed(node) => self.object(map, node),
            Shape::QualityWithLocalization(_) => self.object(map, &QUALITY),
            Shape::Dict(node, key_field) => self.entries(map, |map, target, key| {
                let seed = ObjectSeed {
                    ctx,
                    node,
                    target: &mut *target,
                    keyed: Some((key_field, &key)),
                };
                map.next_value_seed(seed)
            }),
            Shape::LevelDict => self.entries(map, |map, target, image_id| {
                let (id, level) = two_columns(target, "image_id", "localization_quality")?;
                let mut seen = Seen::default();
                written(target.columns[id].push_str(&image_id))?;
                seen.set(id, true);
                let non_null = map.next_value_seed(ShapeSeed {
                    ctx,
                    shape: &LOCALIZATION_LEVEL,
                    column: &mut target.columns[level],
                })?;
                seen.set(level, non_null);
                target
                    .finish_row(seen, |_| Fill::Keep)
                    .map_err(de::Error::custom)
            }),
            Shape::Variables => {
                let mut value = Vec::new();
                self.entries(map, |map, target, name| {
                    let (name_at, value_at) = two_columns(target, "name", "value_json")?;
                    value.clear();
                    map.next_value_seed(Copy(&mut value))?;
                    written(target.columns[name_at].push_str(&name))?;
                    let text = String::from_utf8_lossy(&value);
                    written(target.columns[value_at].push_str(&text))?;
                    let mut seen = Seen::default();
                    seen.set(name_at, true);
                    seen.set(value_at, true);
                    target
                        .finish_row(seen, |_| Fill::Keep)
                        .map_err(de::Error::custom)
                })
            }
            _ => Err(self.mismatch("an object")),
        }
    }
}

/// The shape of a `{image_id: level}` value.
static LOCALIZATION_LEVEL: Shape = Shape::Scalar(Scalar::Level(&quality::LOCALIZATION));

/// One box `[x1, y1, x2, y2]` (or null).
struct BoxSeed<'c, 'a> {
    ctx: &'c Ctx<'c>,
    column: &'a mut Column,
}

impl<'de> DeserializeSeed<'de> for BoxSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BoxSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a box [x1, y1, x2, y2]")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.column.push_null();
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Column::FixedList(fixed) = self.column else {
            return Err(de::Error::custom(
                "the lake's boxes are not fixed-size lists",
            ));
        };
        let ctx = self.ctx;
        while seq
            .next_element_seed(ShapeSeed {
                ctx,
                shape: &PLAIN,
                column: &mut fixed.item,
            })?
            .is_some()
        {}
        fixed.close().map_err(de::Error::custom)
    }
}

/// `[first, second]` as `{first_field: …, second_field: …}`.
struct PairSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    fields: &'o [(&'static str, Scalar); 2],
    target: &'o mut StructColumn,
}

impl<'de> DeserializeSeed<'de> for PairSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PairSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a [{}, {}] pair", self.fields[0].0, self.fields[1].0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let [(first, _), (second, _)] = self.fields;
        let length = |index| {
            let expected = format!("a [{first}, {second}] pair");
            de::Error::invalid_length(index, &expected.as_str())
        };
        let columns = two_columns::<A::Error>(self.target, first, second)?;
        let mut seen = Seen::default();
        for (index, at) in [columns.0, columns.1].into_iter().enumerate() {
            let seed = ShapeSeed {
                ctx: self.ctx,
                shape: &PLAIN,
                column: &mut self.target.columns[at],
            };
            let non_null = seq.next_element_seed(seed)?.ok_or_else(|| length(index))?;
            seen.set(at, non_null);
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(length(3));
        }
        self.target
            .finish_row(seen, |_| Fill::Keep)
            .map_err(de::Error::custom)
    }
}

fn string(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Any JSON value, copied.
struct Copy<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Copy<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Copy<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.0
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        let _ = write!(self.0, "{value}");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        let _ = write!(self.0, "{value}");
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        let _ = serde_json::to_writer(&mut *self.0, &value);
        Ok(())
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        string(self.0, text);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(Copy(&mut *self.0))?.is_none() {
                if !first {
                    self.0.pop();
                }
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        let mut first = true;
        while let Some(name) = map.next_key::<String>()? {
            if !first {
                self.0.push(b',');
            }
            first = false;
            string(self.0, &name);
            self.0.push(b':');
            map.next_value_seed(Copy(&mut *self.0))?;
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// A release rating code `<rank>_<grade>` (`4_A`, `0_not rated`, any text after `0_`), or a
/// plain grade.
pub fn rating(code: &str) -> Result<Rating, String> {
    let (rank, grade) = code.split_once('_').unwrap_or(("", code));
    if let Ok(rank) = rank.parse::<i64>() {
        let rating =
            Rating::from_rank(rank).ok_or_else(|| format!("rating code `{code}`: rank {rank}"))?;
        if rating != Rating::NotRated && grade != rating.as_str() {
            return Err(format!("rating code `{code}`: rank and grade disagree"));
        }
        return Ok(rating);
    }
    grade
        .parse::<Rating>()
        .map_err(|_| format!("unknown rating `{code}`"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn codes_come_from_the_mappings_file() {
        let csv = crate::release::quality_mappings_csv();
        assert_eq!(Codes::parse(&csv).expect("parse"), Codes::builtin());
        let codes =
            Codes::parse("aspect,key,value,level,rating\nX,entailment,7,SEVEN,A\n").expect("parse");
        assert_eq!(codes.level("entailment", 7), Some("SEVEN"));
        let error = Codes::parse("aspect,key,value\nX,entailment,x\n").expect_err("no level");
        assert!(error.contains("no `level` column"), "{error}");
        let error = Codes::parse("key,value,level\nentailment,x,A\n").expect_err("not an integer");
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn ratings_decode_from_codes_and_grades() {
        assert_eq!(rating("4_A"), Ok(Rating::A));
        assert_eq!(rating("6_A++"), Ok(Rating::APlusPlus));
        assert_eq!(rating("0_not rated"), Ok(Rating::NotRated));
        assert_eq!(rating("0_unrated"), Ok(Rating::NotRated));
        assert_eq!(rating("B"), Ok(Rating::B));
        assert!(rating("4_B").is_err());
        assert!(rating("9_A").is_err());
        assert!(rating("great").is_err());
    }

    const IDS: FileIds<'static> = FileIds {
        patient_id: "p10000032",
        study_id: "s50414267",
        provenance: "release:1.0.0",
    };

    /// The `qa` rows of a file as JSON objects (nulls left out).
    fn qa_rows(bytes: &[u8], ids: FileIds<'_>, codes: &Codes) -> Result<Vec<Value>, String> {
        let schema = (cxrlake_schemas::table("qa").expect("qa").schema)();
        let mut rows = Rows::new(&schema)?;
        rows.qa(bytes, ids, codes)?;
        let batch = rows.finish().map_err(|e| e.to_string())?;
        let mut writer = arrow::json::ArrayWriter::new(Vec::new());
        writer.write(&batch).expect("write");
        writer.finish().expect("finish");
        Ok(serde_json::from_slice(&writer.into_inner()).expect("json"))
    }

    fn file(question: &Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"patient_id": "p10000032", "study_id": "s50414267",
                                   "questions": [question]}))
        .expect("json")
    }

    #[test]
    fn a_question_decodes_to_lake_fields() {
        let codes = Codes::builtin();
        let question = json!({
            "question_id": "D02_finding_001", "question_type": "D02", "question_strategy": "finding",
            "variables": {"finding": "pleural effusion", "n": 2},
            "obs_ids": ["O01"], "contains_report_answers": true, "contains_template_answers": false,
            "extraction_quality": {"region_extract_quality": 4, "entity_extract_quality": 2,
                "sentence_name_quality": 2, "change_quality": 3, "general_issue_level": -1,
                "localization_quality": 2},
            "question_img_localization_quality": {"img1": 4},
            "question": "Is there a pleural effusion?",
            "answers": [{"answer_id": 0, "answer_type": "main_answer", "answer_level": 0,
                "text": "Yes.", "laterality": "likely_bilateral",
                "modifiers": [["severity", "small"]],
                "sub_answers": [{"answer_id": 1, "answer_type": "details", "answer_level": 1,
                    "text": "Small.", "from_report": true, "sub_answers": [
                        {"answer_id": 2, "answer_type": "details", "answer_level": 2,
                         "text": "Left.", "from_report": false, "sub_answers": []}]}],
                "localization": {"img1": {"bboxes": [[1, 2, 3.5, 4]], "localization_reference_ids": [],
                    "missing_localization": [], "is_fallback": false, "localization_quality": 4}},
                "from_report": true, "answer_quality": {"entailment": 3, "rating": "5_A+"}},
                {"answer_id": 3, "answer_type": "related_information", "answer_level": 0,
                 "text": "Also.", "from_report": false, "sub_answers": []}],
            "question_quality": {"question_clarity": 2, "completeness": 2, "rating": "3_B"},
            "unknown_key": {"ignored": [1, 2]},
        });
        let rows = qa_rows(&file(&question), IDS, &codes).expect("rows");
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(
            row["variables"],
            json!([{"name": "finding", "value_json": "\"pleural effusion\""},
                   {"name": "n", "value_json": "2"}])
        );
        assert_eq!(
            row["extraction_quality"]["general_issue_level"],
            "DISCARDED"
        );
        assert!(
            row["extraction_quality"]
                .get("localization_quality")
                .is_none()
        );
        assert_eq!(
            row["question_img_localization_quality"],
            json!([{"image_id": "img1", "localization_quality": "BOX_AND_MASK_LOCALIZATION"}])
        );
        assert_eq!(row["question_quality"]["rating"], "B");
        assert_eq!(row["rating"], "B");
        assert_eq!(row["rating_rank"], 3);
        assert_eq!(row["patient_id"], "p10000032");
        assert_eq!(row["extractor"], "release:1.0.0");
        let answers = row["answers"].as_array().expect("answers");
        let ids: Vec<(i64, Value)> = answers
            .iter()
            .map(|a| {
                (
                    a["answer_id"].as_i64().expect("id"),
                    a["parent_answer_id"].clone(),
                )
            })
            .collect();
        assert_eq!(
            ids,
            [
                (0, Value::Null),
                (1, json!(0)),
                (2, json!(1)),
                (3, Value::Null)
            ]
        );
        assert_eq!(answers[0]["laterality"], "likely bilateral");
        assert_eq!(
            answers[0]["modifiers"],
            json!([{"modifier_type": "severity", "value": "small"}])
        );
        assert_eq!(answers[0]["localization"][0]["image_id"], "img1");
        let coordinates: Vec<f64> = answers[0]["localization"][0]["bboxes"][0]
            .as_array()
            .expect("a box")
            .iter()
            .map(|c| c.as_f64().expect("a number"))
            .collect();
        assert_eq!(coordinates, [1.0, 2.0, 3.5, 4.0]);
        assert_eq!(answers[0]["answer_quality"]["rating"], "A+");
        assert!(answers[0].get("sub_answers").is_none());

        let mut unknown = question.clone();
        unknown["extraction_quality"]["change_quality"] = json!(42);
        let error = qa_rows(&file(&unknown), IDS, &codes).expect_err("code");
        assert!(
            error.contains(
                "questions: extraction_quality: change_quality: unknown change_quality code 42"
            ),
            "{error}"
        );
        let error = qa_rows(b"{\"questions\": [", IDS, &codes).expect_err("truncated");
        assert!(
            error.starts_with("invalid JSON") || error.starts_with("questions"),
            "{error}"
        );
        let other = FileIds {
            study_id: "s1",
            ..IDS
        };
        let error = qa_rows(&file(&question), other, &codes).expect_err("ids");
        assert!(error.contains("do not match the member's path"), "{error}");
    }

    #[test]
    fn a_member_that_cannot_be_used_leaves_no_rows() {
        let codes = Codes::builtin();
        let schema = (cxrlake_schemas::table("qa").expect("qa").schema)();
        let mut rows = Rows::new(&schema).expect("rows");
        let good = json!({"question_id": "Q1", "question_type": "D02",
            "question_strategy": "finding", "contains_report_answers": true,
            "contains_template_answers": false, "question": "Why?",
            "answers": [{"answer_id": 0, "answer_type": "main_answer", "answer_level": 0,
                "from_report": true, "sub_answers": [{"answer_id": 1, "answer_type": "details",
                "answer_level": 1, "from_report": true}]}]});
        let mut partial = good.clone();
        partial["answers"][0]["sub_answers"][0]
            .as_object_mut()
            .expect("part")
            .remove("from_report");
        assert_eq!(rows.qa(&file(&good), IDS, &codes), Ok(1));
        let error = rows
            .qa(&file(&partial), IDS, &codes)
            .expect_err("a part without from_report");
        assert!(error.contains("no `from_report`"), "{error}");
        let batch = rows.finish().expect("batch");
        assert_eq!(batch.num_rows(), 1);
        let answers = batch
            .column_by_name("answers")
            .expect("answers")
            .as_any()
            .downcast_ref::<arrow::array::ListArray>()
            .expect("list");
        assert_eq!(answers.value_length(0), 2);
    }
}
