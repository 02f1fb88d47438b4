//! Release JSON → lake rows: the layout of [`crate::layout`] read backwards, so the exports, the
//! validators and the import share one description of every object. Each release file is
//! streamed once through serde (no intermediate `serde_json::Value`) into lake rows as JSON text,
//! one line per row with the lake's field names, which Arrow's JSON decoder turns into batches
//! of the lake table's schema; values that need no change are copied as they are.
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

use cxrlake_schemas::Rating;
use cxrlake_schemas::quality;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::layout::{Node, QUALITY, QUESTION, ROOT, Scalar, Shape};

/// The quality codes of a release: `(aspect key, integer value)` → level name, read from its
/// `quality_mappings.csv` (or cxrlake's own table, [`Codes::builtin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codes {
    /// aspect key → code → level name.
    levels: HashMap<String, HashMap<i64, String>>,
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
        Ok(Self { levels })
    }

    /// The level name of `code` for the aspect `key`.
    fn level(&self, key: &str, code: i64) -> Option<&str> {
        self.levels
            .get(key)
            .and_then(|codes| codes.get(&code))
            .map(String::as_str)
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

/// Appends the `qa` rows of a `*.qa.json` file to `out`, one JSON line per question; returns
/// how many. The error says which key holds what cannot be read.
pub fn qa_rows(
    bytes: &[u8],
    ids: FileIds<'_>,
    codes: &Codes,
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    let ctx = Ctx::new(codes);
    let mut seen = FileSeen::default();
    let seed = QaFileSeed {
        ctx: &ctx,
        ids,
        out,
        seen: &mut seen,
    };
    run(&ctx, bytes, seed)?;
    seen.check(ids)?;
    Ok(seen.rows)
}

/// Appends the `scene_graphs` row of a `*.scene_graph.json` file to `out` as one JSON line.
pub fn scene_graph_row(
    bytes: &[u8],
    ids: FileIds<'_>,
    codes: &Codes,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let ctx = Ctx::new(codes);
    let start = out.len();
    let visited = run(
        &ctx,
        bytes,
        RowSeed {
            ctx: &ctx,
            node: &ROOT,
            ids,
            out: &mut *out,
            question: false,
        },
    )?;
    let text = |range: Option<(usize, usize)>| {
        range.map(|(from, to)| String::from_utf8_lossy(&out[start + from..start + to]).into_owned())
    };
    let seen = FileSeen {
        patient_id: text(visited.patient_id).and_then(unquote),
        study_id: text(visited.study_id).and_then(unquote),
        rows: 1,
    };
    seen.check(ids)
}

fn unquote(text: String) -> Option<String> {
    serde_json::from_str::<String>(&text).ok()
}

/// Runs `seed` over `bytes`; the error names the key path.
fn run<'de, S: DeserializeSeed<'de>>(
    ctx: &Ctx<'_>,
    bytes: &'de [u8],
    seed: S,
) -> Result<S::Value, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
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

/// What every seed shares: the codes, the key path (left at the failing key on error), and the
/// rating of the question being written.
struct Ctx<'a> {
    codes: &'a Codes,
    path: RefCell<Vec<&'static str>>,
    question_rating: Cell<Option<Rating>>,
}

impl<'a> Ctx<'a> {
    fn new(codes: &'a Codes) -> Self {
        Self {
            codes,
            path: RefCell::new(Vec::new()),
            question_rating: Cell::new(None),
        }
    }
}

fn string(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

fn key(out: &mut Vec<u8>, first: &mut bool, name: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// What [`fields`] saw of an object.
#[derive(Debug, Default)]
struct Visited {
    /// Whether a field was written (a comma goes before the next).
    any: bool,
    /// The written text of `answer_id`, `patient_id`, `study_id` (offsets from the object's
    /// start).
    answer_id: Option<(usize, usize)>,
    patient_id: Option<(usize, usize)>,
    study_id: Option<(usize, usize)>,
    /// Keys written with a non-null value.
    present: Vec<&'static str>,
    /// Flattened children (`sub_answers`) and where their parent id goes.
    children: Option<(Vec<u8>, Vec<usize>)>,
}

/// Writes `{` and the fields of `node` found in `map` (unknown keys skipped), without `}`.
fn fields<'de, A: MapAccess<'de>>(
    ctx: &Ctx<'_>,
    node: &'static Node,
    mut map: A,
    out: &mut Vec<u8>,
) -> Result<Visited, A::Error> {
    let start = out.len();
    out.push(b'{');
    let mut visited = Visited::default();
    let mut first = true;
    while let Some(index) = map.next_key_seed(FieldIndex(node))? {
        let Some(index) = index else {
            map.next_value::<IgnoredAny>()?;
            continue;
        };
        let (name, shape) = &node.fields[index];
        ctx.path.borrow_mut().push(name);
        if let Shape::Children(child) = shape {
            let mut kids = Vec::new();
            let mut holes = Vec::new();
            map.next_value_seed(ChildrenSeed {
                ctx,
                node: child,
                out: &mut kids,
                holes: &mut holes,
            })?;
            visited.children = Some((kids, holes));
        } else {
            key(out, &mut first, name);
            let value_start = out.len();
            map.next_value_seed(ShapeSeed { ctx, shape, out })?;
            let range = Some((value_start - start, out.len() - start));
            if &out[value_start..] != b"null" {
                visited.present.push(name);
            }
            match *name {
                "answer_id" => visited.answer_id = range,
                "patient_id" => visited.patient_id = range,
                "study_id" => visited.study_id = range,
                _ => {}
            }
        }
        ctx.path.borrow_mut().pop();
    }
    visited.any = !first;
    Ok(visited)
}

/// A key of a `node` object: its field index, or `None` for a key the layout does not know.
struct FieldIndex(&'static Node);

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
        Ok(self.0.fields.iter().position(|(name, _)| *name == key))
    }
}

/// A `qa.json` file: its ids and one row per question.
struct QaFileSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    ids: FileIds<'o>,
    out: &'o mut Vec<u8>,
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
                        out: &mut *self.out,
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
    out: &'o mut Vec<u8>,
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
        loop {
            let start = self.out.len();
            let row = seq.next_element_seed(RowSeed {
                ctx: self.ctx,
                node: &QUESTION,
                ids: self.ids,
                out: &mut *self.out,
                question: true,
            });
            match row {
                Ok(Some(_)) => rows += 1,
                Ok(None) => return Ok(rows),
                Err(error) => {
                    self.out.truncate(start);
                    return Err(error);
                }
            }
        }
    }
}

/// One lake row (a question or a scene graph) as a JSON line: the node's fields, the file's
/// ids, a question's `rating` and `rating_rank` (its `question_quality.rating`), and the
/// provenance where the file has none.
struct RowSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    ids: FileIds<'o>,
    out: &'o mut Vec<u8>,
    question: bool,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_, '_> {
    type Value = Visited;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Visited, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_, '_> {
    type Value = Visited;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object", self.node.name)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Visited, A::Error> {
        self.ctx.question_rating.set(None);
        let visited = fields(self.ctx, self.node, map, self.out)?;
        let mut first = !visited.any;
        if self.question {
            for (name, value) in [
                ("patient_id", self.ids.patient_id),
                ("study_id", self.ids.study_id),
            ] {
                key(self.out, &mut first, name);
                string(self.out, value);
            }
            let rating = self.ctx.question_rating.get();
            key(self.out, &mut first, "rating");
            match rating {
                Some(rating) => string(self.out, rating.as_str()),
                None => self.out.extend_from_slice(b"null"),
            }
            key(self.out, &mut first, "rating_rank");
            let _ = match rating {
                Some(rating) => write!(self.out, "{}", rating.rank()),
                None => write!(self.out, "null"),
            };
        }
        for name in ["extractor", "embedder"] {
            if !visited.present.contains(&name) {
                key(self.out, &mut first, name);
                string(self.out, self.ids.provenance);
            }
        }
        self.out.extend_from_slice(b"}\n");
        Ok(visited)
    }
}

/// An object of `node`, with the key of a dict entry written as its field.
struct ObjectSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    out: &'o mut Vec<u8>,
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
        let visited = fields(self.ctx, self.node, map, self.out)?;
        if let Some((name, value)) = self.keyed {
            let mut first = !visited.any;
            key(self.out, &mut first, name);
            string(self.out, value);
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// One answer part of a tree and, after it, its descendants; its `parent_answer_id` is
/// `parent`, or a hole (returned) that the caller fills once the parent's id is known.
struct PartSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    out: &'o mut Vec<u8>,
    parent: Option<&'o [u8]>,
}

impl<'de> DeserializeSeed<'de> for PartSeed<'_, '_> {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PartSeed<'_, '_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object", self.node.name)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<usize>, A::Error> {
        let start = self.out.len();
        let visited = fields(self.ctx, self.node, map, self.out)?;
        let mut first = !visited.any;
        key(self.out, &mut first, "parent_answer_id");
        let hole = match self.parent {
            Some(parent) => {
                self.out.extend_from_slice(parent);
                None
            }
            None => Some(self.out.len()),
        };
        self.out.push(b'}');
        if let Some((kids, holes)) = visited.children.filter(|(kids, _)| !kids.is_empty()) {
            let id = visited
                .answer_id
                .map(|(from, to)| self.out[start + from..start + to].to_vec())
                .unwrap_or_else(|| b"null".to_vec());
            self.out.push(b',');
            let mut copied = 0;
            for hole in holes {
                self.out.extend_from_slice(&kids[copied..hole]);
                self.out.extend_from_slice(&id);
                copied = hole;
            }
            self.out.extend_from_slice(&kids[copied..]);
        }
        Ok(hole)
    }
}

/// `sub_answers`: the children, each followed by its descendants, comma separated, with the
/// holes where their parent's id goes.
struct ChildrenSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    node: &'static Node,
    out: &'o mut Vec<u8>,
    holes: &'o mut Vec<usize>,
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
            let comma = !self.out.is_empty();
            if comma {
                self.out.push(b',');
            }
            let part = seq.next_element_seed(PartSeed {
                ctx: self.ctx,
                node: self.node,
                out: &mut *self.out,
                parent: None,
            })?;
            match part {
                Some(hole) => self.holes.extend(hole),
                None => {
                    if comma {
                        self.out.pop();
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// A value of `shape`, written in the lake's form.
struct ShapeSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    shape: &'static Shape,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl ShapeSeed<'_, '_> {
    fn mismatch<E: de::Error>(&self, what: &str) -> E {
        E::custom(format!("{what} where the layout has {:?}", self.shape))
    }

    fn level<E: de::Error>(self, aspect: &quality::Aspect, code: i64) -> Result<(), E> {
        match self.ctx.codes.level(aspect.key, code) {
            Some(name) => {
                string(self.out, name);
                Ok(())
            }
            None => Err(E::custom(format!(
                "unknown {} code {code} (not in quality_mappings.csv)",
                aspect.key
            ))),
        }
    }

    fn number<E: de::Error>(self, code: i64, text: fmt::Arguments<'_>) -> Result<(), E> {
        match self.shape {
            Shape::Scalar(Scalar::Level(aspect)) => self.level(aspect, code),
            Shape::Scalar(_) => {
                let _ = self.out.write_fmt(text);
                Ok(())
            }
            _ => Err(self.mismatch("a number")),
        }
    }
}

impl<'de> Visitor<'de> for ShapeSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value of shape {:?}", self.shape)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        match self.shape {
            Shape::Scalar(_) => {
                self.out
                    .extend_from_slice(if value { b"true" } else { b"false" });
                Ok(())
            }
            _ => Err(self.mismatch("a boolean")),
        }
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.number(value, format_args!("{value}"))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        let code = i64::try_from(value).unwrap_or(i64::MAX);
        self.number(code, format_args!("{value}"))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        match self.shape {
            Shape::Scalar(Scalar::Level(_)) => Err(E::custom(format!(
                "quality value {value} is not an integer code"
            ))),
            Shape::Scalar(_) => {
                let _ = serde_json::to_writer(&mut *self.out, &value);
                Ok(())
            }
            _ => Err(self.mismatch("a number")),
        }
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        match self.shape {
            Shape::Scalar(Scalar::Level(aspect)) => {
                if aspect.level(text).is_none() {
                    return Err(E::custom(format!("unknown {} value `{text}`", aspect.key)));
                }
                string(self.out, text);
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
                string(self.out, rating.as_str());
            }
            Shape::Scalar(Scalar::Respelled(respelling)) => {
                let lake = respelling
                    .from_lake
                    .iter()
                    .find(|(_, json)| *json == Some(text))
                    .map_or(text, |(lake, _)| *lake);
                string(self.out, lake);
            }
            Shape::Scalar(_) => string(self.out, text),
            _ => return Err(self.mismatch("a string")),
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        let mut comma = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
        };
        match self.shape {
            Shape::List(_) | Shape::Boxes | Shape::Scalar(_) => loop {
                comma(self.out);
                if seq.next_element_seed(Copy(&mut *self.out))?.is_none() {
                    break;
                }
            },
            Shape::Objects(node) => loop {
                comma(self.out);
                let seed = ObjectSeed {
                    ctx: self.ctx,
                    node,
                    out: &mut *self.out,
                    keyed: None,
                };
                if seq.next_element_seed(seed)?.is_none() {
                    break;
                }
            },
            Shape::Tree(node) => loop {
                comma(self.out);
                let seed = PartSeed {
                    ctx: self.ctx,
                    node,
                    out: &mut *self.out,
                    parent: Some(b"null"),
                };
                if seq.next_element_seed(seed)?.is_none() {
                    break;
                }
            },
            Shape::Pairs(fields) => loop {
                comma(self.out);
                let seed = PairSeed {
                    ctx: self.ctx,
                    fields,
                    out: &mut *self.out,
                };
                if seq.next_element_seed(seed)?.is_none() {
                    break;
                }
            },
            _ => return Err(self.mismatch("a list")),
        }
        // The comma written before the end of the list.
        if self.out.last() == Some(&b',') {
            self.out.pop();
        }
        self.out.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match self.shape {
            Shape::Optional(node) | Shape::Fixed(node) => {
                fields(self.ctx, node, map, self.out)?;
                self.out.push(b'}');
            }
            Shape::QualityWithLocalization(_) => {
                fields(self.ctx, &QUALITY, map, self.out)?;
                self.out.push(b'}');
            }
            Shape::Scalar(_) => Copy(self.out).visit_map(map)?,
            Shape::Dict(node, key_field) => {
                self.out.push(b'[');
                let mut first = true;
                while let Some(name) = map.next_key::<String>()? {
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    map.next_value_seed(ObjectSeed {
                        ctx: self.ctx,
                        node,
                        out: &mut *self.out,
                        keyed: Some((key_field, &name)),
                    })?;
                }
                self.out.push(b']');
            }
            Shape::LevelDict => {
                self.out.push(b'[');
                let mut first = true;
                while let Some(image_id) = map.next_key::<String>()? {
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    self.out.extend_from_slice(b"{\"image_id\":");
                    string(self.out, &image_id);
                    self.out.extend_from_slice(b",\"localization_quality\":");
                    map.next_value_seed(ShapeSeed {
                        ctx: self.ctx,
                        shape: &LOCALIZATION_LEVEL,
                        out: &mut *self.out,
                    })?;
                    self.out.push(b'}');
                }
                self.out.push(b']');
            }
            Shape::Variables => {
                self.out.push(b'[');
                let mut first = true;
                let mut value = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    value.clear();
                    map.next_value_seed(Copy(&mut value))?;
                    self.out.extend_from_slice(b"{\"name\":");
                    string(self.out, &name);
                    self.out.extend_from_slice(b",\"value_json\":");
                    string(self.out, &String::from_utf8_lossy(&value));
                    self.out.push(b'}');
                }
                self.out.push(b']');
            }
            _ => return Err(self.mismatch("an object")),
        }
        Ok(())
    }
}

/// The shape of a `{image_id: level}` value.
static LOCALIZATION_LEVEL: Shape = Shape::Scalar(Scalar::Level(&quality::LOCALIZATION));

/// `[first, second]` as `{first_field: …, second_field: …}`.
struct PairSeed<'c, 'o> {
    ctx: &'c Ctx<'c>,
    fields: &'static [(&'static str, Scalar); 2],
    out: &'o mut Vec<u8>,
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
        self.out.push(b'{');
        for (index, (name, scalar)) in self.fields.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            string(self.out, name);
            self.out.push(b':');
            let shape: &'static Shape = match scalar {
                Scalar::Enum(_) => &ENUM_SCALAR,
                _ => &KEY_SCALAR,
            };
            seq.next_element_seed(ShapeSeed {
                ctx: self.ctx,
                shape,
                out: &mut *self.out,
            })?
            .ok_or_else(|| de::Error::invalid_length(index, &self))?;
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &self));
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Plain scalars of a pair (modifier type and value).
static ENUM_SCALAR: Shape = Shape::Scalar(Scalar::Text);
static KEY_SCALAR: Shape = Shape::Scalar(Scalar::Key);

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
                         "text": "Left.", "sub_answers": []}]}],
                "localization": {"img1": {"bboxes": [[1, 2, 3.5, 4]], "localization_reference_ids": [],
                    "missing_localization": [], "is_fallback": false, "localization_quality": 4}},
                "from_report": true, "answer_quality": {"entailment": 3, "rating": "5_A+"}},
                {"answer_id": 3, "answer_type": "related_information", "answer_level": 0,
                 "text": "Also.", "sub_answers": []}],
            "question_quality": {"question_clarity": 2, "completeness": 2, "rating": "3_B"},
            "unknown_key": {"ignored": [1, 2]},
        });
        let mut out = Vec::new();
        assert_eq!(qa_rows(&file(&question), IDS, &codes, &mut out), Ok(1));
        let row: Value = serde_json::from_slice(&out).expect("one JSON line");
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
        assert_eq!(
            answers[0]["localization"][0]["bboxes"],
            json!([[1, 2, 3.5, 4]])
        );
        assert_eq!(answers[0]["answer_quality"]["rating"], "A+");
        assert!(answers[0].get("sub_answers").is_none());

        let mut unknown = question.clone();
        unknown["extraction_quality"]["change_quality"] = json!(42);
        let error = qa_rows(&file(&unknown), IDS, &codes, &mut Vec::new()).expect_err("code");
        assert!(
            error.contains(
                "questions: extraction_quality: change_quality: unknown change_quality code 42"
            ),
            "{error}"
        );
        let error =
            qa_rows(b"{\"questions\": [", IDS, &codes, &mut Vec::new()).expect_err("truncated");
        assert!(
            error.starts_with("invalid JSON") || error.starts_with("questions"),
            "{error}"
        );
        let other = FileIds {
            study_id: "s1",
            ..IDS
        };
        let error = qa_rows(&file(&question), other, &codes, &mut Vec::new()).expect_err("ids");
        assert!(error.contains("do not match the member's path"), "{error}");
    }
}
