//! Release JSON → lake rows: the layout of [`crate::layout`] read backwards, so the exports, the
//! validators and the import share one description of every object. Each release file is
//! read once by a pull reader ([`super::json`]: no serde, no intermediate `serde_json::Value`)
//! that the layout drives, straight into the Arrow columns of the lake table
//! ([`super::columns`]), field by field as the layout maps them; a member that cannot be used
//! is rolled back and leaves no rows.
//!
//! ```text
//! {"O01": {…}, "O02": {…}}           ──Dict──▶  [{obs_id: "O01", …}, {obs_id: "O02", …}]
//! {image_id: 3}                      ──LevelDict▶ [{image_id, localization_quality: "NAME"}]
//! [{id 0, sub_answers: [{id 1}]}]    ──Tree──▶  [{id 0, parent ∅}, {id 1, parent 0}]
//! 3 (a quality value)                ──Level──▶ its level name (quality_mappings.csv)
//! "4_A" (a rating code)              ──Rating─▶ "A"
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use cxrlake_schemas::Rating;
use cxrlake_schemas::quality;
use serde_json::Value;

use super::columns::{Column, Fill, Seen, StructColumn};
use super::json::{self, Error, Key, Kind, Number, Reader};
use crate::layout::{Node, QUALITY, QUESTION, QUESTION_QUALITY, ROOT, Scalar, Shape};

/// The quality codes of a release: `(aspect key, integer value)` → level name, read from its
/// `quality_mappings.csv` (or cxrlake's own table, [`Codes::builtin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codes {
    /// Per aspect key (sorted), its codes (sorted) with their level names: a few short lists,
    /// searched faster than hashing the key and the code of every quality value.
    levels: Vec<(String, Vec<(i64, String)>)>,
    /// The first answer id of a question: 1 in the release (and in cxrlake's exports since
    /// 2026-12-06), 0 in cxrlake's earlier exports; the lake's ids start at 0.
    pub answer_ids_from: i64,
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
        Self {
            levels,
            answer_ids_from: 1,
        }
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

    /// The codes of the aspect `key` with their level names (none if the release has none).
    fn aspect(&self, key: &str) -> &[(i64, String)] {
        self.levels
            .iter()
            .find(|(name, _)| name == key)
            .map_or(&[], |(_, codes)| codes.as_slice())
    }

    /// The level name of `code` for the aspect `key`.
    #[cfg(test)]
    fn level(&self, key: &str, code: i64) -> Option<&str> {
        level_of(self.aspect(key), code)
    }
}

/// The level name of `code` among an aspect's codes.
fn level_of(codes: &[(i64, String)], code: i64) -> Option<&str> {
    codes
        .iter()
        .find(|(value, _)| *value == code)
        .map(|(_, name)| name.as_str())
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
    spares: Vec<StructColumn>,
}

impl Rows {
    /// Empty rows of a lake table; the error names a column the import cannot build.
    pub fn new(schema: &SchemaRef) -> Result<Self, String> {
        Ok(Self {
            schema: Arc::clone(schema),
            root: StructColumn::new(schema.fields())?,
            spares: Vec::new(),
        })
    }

    /// Adds the `qa` rows of a `*.qa.json` file, one per question, and returns how many. The
    /// error says which key holds what cannot be read.
    pub fn qa(&mut self, bytes: &[u8], ids: FileIds<'_>, codes: &Codes) -> Result<usize, String> {
        let before = self.root.len();
        let mut cx = Cx::new(codes, &mut self.spares);
        let root = &mut self.root;
        let read = run(bytes, |r| qa_file(&mut cx, r, ids, root))
            .and_then(|seen| seen.check(ids).map(|()| seen.rows));
        self.kept(before, read)
    }

    /// Adds the `scene_graphs` row of a `*.scene_graph.json` file.
    pub fn scene_graph(
        &mut self,
        bytes: &[u8],
        ids: FileIds<'_>,
        codes: &Codes,
    ) -> Result<usize, String> {
        let before = self.root.len();
        let mut cx = Cx::new(codes, &mut self.spares);
        let root = &mut self.root;
        let read = run(bytes, |r| row(&mut cx, r, &ROOT, ids, root, false))
            .and_then(|seen| seen.check(ids));
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

    /// `[length, capacity]` of its columns' buffers ([`StructColumn::buffers`]).
    fn buffers(&self) -> Vec<[usize; 2]> {
        let mut buffers = Vec::new();
        self.root.buffers(&mut buffers);
        buffers
    }

    /// The lengths of its columns' buffers, for [`Rows::reserve`].
    pub fn sizes(&self) -> Vec<usize> {
        self.buffers().iter().map(|[length, _]| *length).collect()
    }

    /// Reserves `scale` times the `sizes` that [`Rows::sizes`] gave for rows of the same table.
    pub fn reserve(&mut self, sizes: &[usize], scale: f64) {
        self.root.reserve(&mut sizes.iter(), scale);
    }

    /// The rows as a batch of the table's schema.
    pub fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        let (_, columns, _) = self.root.finish()?.into_parts();
        RecordBatch::try_new(self.schema, columns)
    }
}

/// Runs `read` over `bytes`, which must hold nothing else; the error names the key path.
fn run<T>(
    bytes: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> json::Result<T>,
) -> Result<T, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let mut reader = Reader::new(text);
    read(&mut reader)
        .and_then(|value| reader.end().map(|()| value))
        .map_err(Error::describe)
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

/// What the readers share: the codes, the spare answer-part columns, the last rating read and
/// the rating of the question being written.
struct Cx<'a> {
    codes: &'a Codes,
    /// The codes of the aspects met so far (found by address, not by comparing keys).
    aspects: Vec<(&'static quality::Aspect, &'a [(i64, String)])>,
    spares: &'a mut Vec<StructColumn>,
    rating: Option<Rating>,
    question_rating: Option<Rating>,
}

impl<'a> Cx<'a> {
    fn new(codes: &'a Codes, spares: &'a mut Vec<StructColumn>) -> Self {
        Self {
            codes,
            aspects: Vec::new(),
            spares,
            rating: None,
            question_rating: None,
        }
    }

    /// The level name of `code` for `aspect`.
    fn level(&mut self, aspect: &'static quality::Aspect, code: i64) -> Option<&'a str> {
        let known = self.aspects.iter().find(|(a, _)| std::ptr::eq(*a, aspect));
        let codes = match known {
            Some((_, codes)) => *codes,
            None => {
                let codes = self.codes.aspect(aspect.key);
                self.aspects.push((aspect, codes));
                codes
            }
        };
        level_of(codes, code)
    }

    /// An empty column like `parts` for a part's children.
    fn spare(&mut self, parts: &StructColumn) -> json::Result<StructColumn> {
        match self.spares.pop() {
            Some(spare) => Ok(spare),
            None => StructColumn::new(&parts.fields).map_err(Error::data),
        }
    }
}

/// A value written (`Ok(true)`: not null), or why not.
fn written(result: Result<(), String>) -> json::Result<bool> {
    result.map(|()| true).map_err(Error::data)
}

/// A `qa.json` file: its ids, and one row per question.
fn qa_file(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    ids: FileIds<'_>,
    root: &mut StructColumn,
) -> json::Result<FileSeen> {
    let mut seen = FileSeen::default();
    r.open(b'{', || {
        "a QA file {patient_id, study_id, questions}".into()
    })?;
    let mut first = true;
    while let Some(key) = r.key(&mut first)? {
        match key.as_ref() {
            "patient_id" => seen.patient_id = optional_string(r)?,
            "study_id" => seen.study_id = optional_string(r)?,
            "questions" => {
                seen.rows += questions(cx, r, ids, root).map_err(|e| e.within("questions"))?;
            }
            _ => r.skip()?,
        }
    }
    Ok(seen)
}

/// A string or null.
fn optional_string(r: &mut Reader<'_>) -> json::Result<Option<String>> {
    match r.kind()? {
        Kind::Null => r.null().map(|()| None),
        Kind::String => Ok(Some(r.string()?.into_owned())),
        _ => Err(r.unexpected("a string")),
    }
}

/// The questions of a `qa.json` file, one row each.
fn questions(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    ids: FileIds<'_>,
    root: &mut StructColumn,
) -> json::Result<usize> {
    r.open(b'[', || "a list of questions".into())?;
    let (mut first, mut rows) = (true, 0);
    while r.item(&mut first)? {
        row(cx, r, &QUESTION, ids, root, true)?;
        rows += 1;
    }
    Ok(rows)
}

/// One lake row (a question or a scene graph): the node's fields, a question's file ids,
/// `rating` and `rating_rank` (its `question_quality.rating`), and the provenance where the
/// file has none. A scene graph's row gives the ids it carries.
fn row(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    node: &'static Node,
    ids: FileIds<'_>,
    root: &mut StructColumn,
    question: bool,
) -> json::Result<FileSeen> {
    cx.question_rating = None;
    let row = root.len();
    let seen = fields(cx, r, node, root, None, None)?;
    let carried = |name: &str| {
        let column = root.index(name)?;
        let text = seen.non_null(column).then(|| root.text(column, row));
        text.flatten().map(str::to_string)
    };
    let file = if question {
        FileSeen::default()
    } else {
        FileSeen {
            patient_id: carried("patient_id"),
            study_id: carried("study_id"),
            rows: 1,
        }
    };
    let rating = cx.question_rating;
    root.finish_row(seen, |name| match name {
        "patient_id" if question => Fill::Text(ids.patient_id),
        "study_id" if question => Fill::Text(ids.study_id),
        // A scene graph without them fails the caller's check of its ids.
        "patient_id" | "study_id" => Fill::Text(""),
        "rating" if question => rating.map_or(Fill::Keep, |r| Fill::Text(r.as_str())),
        "rating_rank" if question => rating.map_or(Fill::Keep, |r| Fill::Int(i64::from(r.rank()))),
        "extractor" | "embedder" => Fill::Text(ids.provenance),
        _ => Fill::Keep,
    })
    .map_err(Error::data)?;
    Ok(file)
}

/// The children of an answer part, read before the part's row is done: their rows, each
/// followed by its descendants, and which of them are the part's own.
struct Children {
    rows: StructColumn,
    direct: Vec<usize>,
}

/// The index of `key` among the fields of `node`, if it is one. Keys mostly come in layout
/// order, so `hint` (the field after the last one) is tried first; fields the file leaves out
/// make the next key a few fields on: the search goes on from the hint, then from the start.
#[inline]
fn field_index(node: &Node, hint: usize, key: &str) -> Option<usize> {
    let fields = node.fields;
    let hint = hint.min(fields.len());
    let key = key.as_bytes();
    let same = |(name, _): &(&str, Shape)| name.len() == key.len() && name.as_bytes() == key;
    fields[hint..]
        .iter()
        .position(same)
        .map(|at| hint + at)
        .or_else(|| fields[..hint].iter().position(same))
}

/// Reads the object of `node` that comes next into the row being written to `target` (keys
/// the layout does not know, and `skip`, are passed over; the last of repeated keys counts);
/// the children of an answer part go to `children`. Leaves the row open
/// ([`StructColumn::finish_row`]).
fn fields(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    node: &'static Node,
    target: &mut StructColumn,
    skip: Option<&str>,
    mut children: Option<&mut Children>,
) -> json::Result<Seen> {
    r.open(b'{', || format!("a {} object", node.name))?;
    let mut seen = Seen::default();
    let (mut first, mut hint) = (true, 0);
    let question_quality = std::ptr::eq(node, &QUESTION_QUALITY);
    let (slots, columns) = target.slots(node);
    loop {
        let expected = node.fields.get(hint).map(|(name, _)| *name);
        let index = match r.key_as(&mut first, expected)? {
            None => break,
            Some(Key::Expected) => hint,
            Some(Key::Other(key)) => match field_index(node, hint, &key) {
                Some(index) => index,
                None => {
                    r.skip()?;
                    continue;
                }
            },
        };
        hint = index + 1;
        let (name, shape) = &node.fields[index];
        let read = match (shape, slots[index], children.as_deref_mut()) {
            (Shape::Children(child), _, Some(kids)) => children_of(cx, r, child, kids),
            (_, Some(at), _) if skip != Some(*name) => {
                let column = &mut columns[at];
                if seen.written(at) {
                    column.truncate(column.len() - 1);
                }
                cx.rating = None;
                value(cx, r, shape, column).map(|non_null| {
                    seen.set(at, non_null);
                    if question_quality && *name == "rating" {
                        cx.question_rating = cx.rating;
                    }
                })
            }
            _ => r.skip(),
        };
        read.map_err(|e| e.within(name))?;
    }
    Ok(seen)
}

/// An object of `node` as a row of `target`, with the key of a dict entry written as its
/// field.
fn object(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    node: &'static Node,
    target: &mut StructColumn,
    keyed: Option<(&'static str, &str)>,
) -> json::Result<()> {
    let skip = keyed.map(|(field, _)| field);
    let seen = fields(cx, r, node, target, skip, None)?;
    target
        .finish_row(seen, |name| match keyed {
            Some((field, key)) if field == name => Fill::Text(key),
            _ => Fill::Keep,
        })
        .map_err(Error::data)
}

/// One answer part and, after its row, its descendants; its `parent_answer_id` is null (the
/// caller sets it for a child once the parent's id is known).
fn part(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    node: &'static Node,
    target: &mut StructColumn,
) -> json::Result<()> {
    let mut kids = Children {
        rows: cx.spare(target)?,
        direct: Vec::new(),
    };
    let row = target.len();
    let seen = fields(cx, r, node, target, None, Some(&mut kids))?;
    target
        .finish_row(seen, |_| Fill::Keep)
        .map_err(Error::data)?;
    if kids.rows.len() > 0 {
        adopt(target, row, &mut kids).map_err(Error::data)?;
    }
    cx.spares.push(kids.rows);
    Ok(())
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

/// `sub_answers`: the children (null: none), each followed by its descendants.
fn children_of(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    node: &'static Node,
    kids: &mut Children,
) -> json::Result<()> {
    if r.kind()? == Kind::Null {
        return r.null();
    }
    r.open(b'[', || "a list of answer parts".into())?;
    let mut first = true;
    while r.item(&mut first)? {
        let row = kids.rows.len();
        part(cx, r, node, &mut kids.rows)?;
        kids.direct.push(row);
    }
    Ok(())
}

/// A plain scalar (list items, pair members, box coordinates).
static PLAIN: Shape = Shape::Scalar(Scalar::Text);

/// The shape of a `{image_id: level}` value.
static LOCALIZATION_LEVEL: Shape = Shape::Scalar(Scalar::Level(&quality::LOCALIZATION));

fn mismatch(shape: &Shape, what: &str) -> Error {
    Error::data(format!("{what} where the layout has {shape:?}"))
}

/// The value of `shape` that comes next, written to `column` in the lake's form; whether it was
/// not null.
fn value(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    shape: &Shape,
    column: &mut Column,
) -> json::Result<bool> {
    match r.kind()? {
        Kind::String => {
            let text = r.string()?;
            scalar_text(cx, shape, &text, column)
        }
        Kind::Number => match (r.number()?, shape) {
            (Number::Int(code), Shape::Scalar(Scalar::Level(aspect))) => {
                match cx.level(aspect, code) {
                    Some(name) => written(column.push_str(name)),
                    None => Err(Error::data(format!(
                        "unknown {} code {code} (not in quality_mappings.csv)",
                        aspect.key
                    ))),
                }
            }
            (Number::Float(value), Shape::Scalar(Scalar::Level(_))) => Err(Error::data(format!(
                "quality value {value} is not an integer code"
            ))),
            (Number::Big(value), _) => Err(Error::data(format!("{value} is out of range"))),
            (Number::Int(id), Shape::Scalar(Scalar::AnswerId)) => {
                written(column.push_i64(id - cx.codes.answer_ids_from))
            }
            (Number::Int(value), Shape::Scalar(_)) => written(column.push_i64(value)),
            (Number::Float(value), Shape::Scalar(_)) => written(column.push_f64(value)),
            _ => Err(mismatch(shape, "a number")),
        },
        Kind::Null => {
            r.null()?;
            column.push_null();
            Ok(false)
        }
        Kind::Bool => {
            let value = r.boolean()?;
            match shape {
                Shape::Scalar(_) => written(column.push_bool(value)),
                _ => Err(mismatch(shape, "a boolean")),
            }
        }
        Kind::Array => list(cx, r, shape, column),
        Kind::Object => map(cx, r, shape, column),
    }
}

/// A string of `shape` in the lake's form: level names checked, rating codes decoded (the
/// rating noted in `cx`), respelled values mapped back.
fn scalar_text(
    cx: &mut Cx<'_>,
    shape: &Shape,
    text: &str,
    column: &mut Column,
) -> json::Result<bool> {
    let text = match shape {
        Shape::Scalar(Scalar::Level(aspect)) => {
            if aspect.level(text).is_none() {
                return Err(Error::data(format!(
                    "unknown {} value `{text}`",
                    aspect.key
                )));
            }
            text
        }
        Shape::Scalar(Scalar::Rating) => {
            let rating = rating(text).map_err(Error::data)?;
            cx.rating = Some(rating);
            rating.as_str()
        }
        Shape::Scalar(Scalar::Respelled(respelling)) => respelling
            .from_lake
            .iter()
            .find(|(_, json)| *json == Some(text))
            .map_or(text, |(lake, _)| *lake),
        Shape::Scalar(_) => text,
        _ => return Err(mismatch(shape, "a string")),
    };
    written(column.push_str(text))
}

/// A list of `shape` (opened here) into `column`, a list column.
fn list(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    shape: &Shape,
    column: &mut Column,
) -> json::Result<bool> {
    let list = column.as_list().map_err(Error::data)?;
    r.open(b'[', String::new)?;
    let mut first = true;
    while r.item(&mut first)? {
        let item = &mut list.item;
        match shape {
            Shape::List(scalar) => {
                value(cx, r, &Shape::Scalar(*scalar), item)?;
            }
            Shape::Boxes => one_box(cx, r, item)?,
            Shape::Objects(node) => {
                object(cx, r, node, item.as_struct().map_err(Error::data)?, None)?
            }
            Shape::Tree(node) => part(cx, r, node, item.as_struct().map_err(Error::data)?)?,
            Shape::Pairs(pair) => one_pair(cx, r, pair, item.as_struct().map_err(Error::data)?)?,
            _ => return Err(mismatch(shape, "a list")),
        }
    }
    list.close();
    Ok(true)
}

/// An object of `shape` (opened here) into `column`.
fn map(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    shape: &Shape,
    column: &mut Column,
) -> json::Result<bool> {
    let node = match shape {
        Shape::Optional(node) | Shape::Fixed(node) => Some(*node),
        Shape::QualityWithLocalization(_) => Some(&QUALITY),
        Shape::Dict(..) | Shape::LevelDict | Shape::Variables => None,
        _ => return Err(mismatch(shape, "an object")),
    };
    if let Some(node) = node {
        let target = column.as_struct().map_err(Error::data)?;
        let seen = fields(cx, r, node, target, None, None)?;
        return written(target.finish_row(seen, |_| Fill::Keep));
    }
    let list = column.as_list().map_err(Error::data)?;
    let target = list.item.as_struct().map_err(Error::data)?;
    r.open(b'{', String::new)?;
    let mut first = true;
    let mut copied = String::new();
    while let Some(key) = r.key(&mut first)? {
        match shape {
            Shape::Dict(node, key_field) => object(cx, r, node, target, Some((key_field, &key)))?,
            Shape::LevelDict => {
                let (id, level) = two_columns(target, "image_id", "localization_quality")?;
                let mut seen = Seen::default();
                written(target.columns[id].push_str(&key))?;
                seen.set(id, true);
                let non_null = value(cx, r, &LOCALIZATION_LEVEL, &mut target.columns[level])?;
                seen.set(level, non_null);
                target
                    .finish_row(seen, |_| Fill::Keep)
                    .map_err(Error::data)?;
            }
            _ => {
                let (name, text) = two_columns(target, "name", "value_json")?;
                copied.clear();
                r.copy(&mut copied)?;
                written(target.columns[name].push_str(&key))?;
                written(target.columns[text].push_str(&copied))?;
                let mut seen = Seen::default();
                seen.set(name, true);
                seen.set(text, true);
                target
                    .finish_row(seen, |_| Fill::Keep)
                    .map_err(Error::data)?;
            }
        }
    }
    list.close();
    Ok(true)
}

/// The columns of two fields of `target`.
fn two_columns(target: &StructColumn, a: &str, b: &str) -> json::Result<(usize, usize)> {
    let column = |name: &str| {
        target
            .index(name)
            .ok_or_else(|| Error::data(format!("the lake's column has no `{name}`")))
    };
    Ok((column(a)?, column(b)?))
}

/// One box `[x1, y1, x2, y2]` (or null).
fn one_box(cx: &mut Cx<'_>, r: &mut Reader<'_>, column: &mut Column) -> json::Result<()> {
    if r.kind()? == Kind::Null {
        r.null()?;
        column.push_null();
        return Ok(());
    }
    let Column::FixedList(fixed) = column else {
        return Err(Error::data("the lake's boxes are not fixed-size lists"));
    };
    r.open(b'[', || "a box [x1, y1, x2, y2]".into())?;
    let mut first = true;
    while r.item(&mut first)? {
        value(cx, r, &PLAIN, &mut fixed.item)?;
    }
    fixed.close().map_err(Error::data)
}

/// `[first, second]` as `{first_field: …, second_field: …}`.
fn one_pair(
    cx: &mut Cx<'_>,
    r: &mut Reader<'_>,
    fields: &[(&'static str, Scalar); 2],
    target: &mut StructColumn,
) -> json::Result<()> {
    let [(first_name, _), (second_name, _)] = fields;
    let length = |index: usize| {
        Error::data(format!(
            "invalid length {index}, expected a [{first_name}, {second_name}] pair"
        ))
    };
    let columns = two_columns(target, first_name, second_name)?;
    r.open(b'[', || format!("a [{first_name}, {second_name}] pair"))?;
    let mut seen = Seen::default();
    let mut first = true;
    for (index, at) in [columns.0, columns.1].into_iter().enumerate() {
        if !r.item(&mut first)? {
            return Err(length(index));
        }
        let non_null = value(cx, r, &PLAIN, &mut target.columns[at])?;
        seen.set(at, non_null);
    }
    if r.item(&mut first)? {
        return Err(length(3));
    }
    target.finish_row(seen, |_| Fill::Keep).map_err(Error::data)
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

    #[test]
    fn rows_reserved_from_a_batch_take_it_again_without_growing() {
        let codes = Codes::builtin();
        let question = json!({
            "question_id": "D02_finding_001", "question_type": "D02", "question_strategy": "finding",
            "variables": {"finding": "pleural effusion"}, "obs_ids": ["O01", "O02"],
            "contains_report_answers": true, "contains_template_answers": false,
            "extraction_quality": {"region_extract_quality": 4, "entity_extract_quality": 2,
                "sentence_name_quality": 2, "change_quality": 3, "general_issue_level": 1},
            "question_img_localization_quality": {"img1": 4},
            "question": "Is there a pleural effusion?",
            "answers": [{"answer_id": 1, "answer_type": "main_answer", "answer_level": 0,
                "text": "Yes.", "modifiers": [["severity", "small"]], "regions": ["left lung"],
                "sub_answers": [{"answer_id": 2, "answer_type": "details", "answer_level": 1,
                    "text": "Small.", "from_report": true, "sub_answers": []}],
                "localization": {"img1": {"bboxes": [[1, 2, 3.5, 4], [5, 6, 7, 8]],
                    "localization_reference_ids": ["left lung"], "missing_localization": [],
                    "is_fallback": false, "localization_quality": 4}},
                "from_report": true}],
            "question_quality": {"question_clarity": 2, "completeness": 2, "rating": "3_B"},
        });
        let bytes = file(&question);
        let schema = (cxrlake_schemas::table("qa").expect("qa").schema)();
        let mut first = Rows::new(&schema).expect("rows");
        for _ in 0..3 {
            first.qa(&bytes, IDS, &codes).expect("decodes");
        }
        let sizes = first.sizes();
        let mut second = Rows::new(&schema).expect("rows");
        second.reserve(&sizes, 1.0);
        let capacities = |rows: &Rows| -> Vec<usize> {
            rows.buffers()
                .iter()
                .map(|[_, capacity]| *capacity)
                .collect()
        };
        let reserved = capacities(&second);
        assert!(
            reserved.iter().zip(&sizes).all(|(c, s)| c >= s),
            "{reserved:?} {sizes:?}"
        );
        for _ in 0..3 {
            second.qa(&bytes, IDS, &codes).expect("decodes");
        }
        assert_eq!(capacities(&second), reserved, "a buffer grew");
        assert_eq!(second.sizes(), sizes);
        let (first, second) = (
            first.finish().expect("batch"),
            second.finish().expect("batch"),
        );
        assert_eq!(first, second);
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
            "answers": [{"answer_id": 1, "answer_type": "main_answer", "answer_level": 0,
                "text": "Yes.", "laterality": "likely_bilateral",
                "modifiers": [["severity", "small"]],
                "sub_answers": [{"answer_id": 2, "answer_type": "details", "answer_level": 1,
                    "text": "Small.", "from_report": true, "sub_answers": [
                        {"answer_id": 3, "answer_type": "details", "answer_level": 2,
                         "text": "Left.", "from_report": false, "sub_answers": []}]}],
                "localization": {"img1": {"bboxes": [[1, 2, 3.5, 4]], "localization_reference_ids": [],
                    "missing_localization": [], "is_fallback": false, "localization_quality": 4}},
                "from_report": true, "answer_quality": {"entailment": 3, "rating": "5_A+"}},
                {"answer_id": 4, "answer_type": "related_information", "answer_level": 0,
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
            "answers": [{"answer_id": 1, "answer_type": "main_answer", "answer_level": 0,
                "from_report": true, "sub_answers": [{"answer_id": 2, "answer_type": "details",
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
