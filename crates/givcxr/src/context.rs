//! A region context (a row of `givcxr_regions`) as the three tasks read it: the region, its box,
//! its Chest ImaGenome-style attributes (`category|yes|value`, `category|no|value`,
//! `nlp|yes|normal`), its texture cues (`texture|yes|opacity`) and its report phrases; and the
//! facts the offline generators and the heuristic judge reason over.

use cxrlake_generate::nullable;
use serde::Deserialize;
use serde_json::Value;

/// Attribute categories that state a finding (the others, `nlp` and `texture`, describe the
/// region as a whole).
const FINDING_CATEGORIES: [&str; 4] = [
    "anatomicalfinding",
    "disease",
    "tubesandlines",
    "technicalassessment",
];

/// A region context.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Context {
    /// Region id (`right_lung`).
    #[serde(default, deserialize_with = "nullable")]
    pub region: String,
    /// Region name (`right lung`).
    #[serde(default, deserialize_with = "nullable")]
    pub region_name: String,
    /// `[x1, y1, x2, y2]`.
    #[serde(default, deserialize_with = "nullable")]
    pub bbox: Vec<f64>,
    /// Pipe-encoded attributes.
    #[serde(default, deserialize_with = "nullable")]
    pub attributes: Vec<String>,
    /// Pipe-encoded texture cues.
    #[serde(default, deserialize_with = "nullable")]
    pub texture: Vec<String>,
    /// Report phrases about the region.
    #[serde(default, deserialize_with = "nullable")]
    pub phrases: Vec<String>,
}

/// One parsed attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// `anatomicalfinding`, `disease`, `tubesandlines`, `texture`, `nlp`, ….
    pub category: String,
    /// `yes`.
    pub present: bool,
    /// The finding (`atelectasis`).
    pub value: String,
}

impl Attribute {
    /// Parses `category|yes|value`; None for anything else.
    pub fn parse(text: &str) -> Option<Attribute> {
        let mut parts = text.splitn(3, '|');
        let category = parts.next()?.trim().to_lowercase();
        let present = match parts.next()?.trim() {
            "yes" => true,
            "no" => false,
            _ => return None,
        };
        let value = parts.next()?.trim().to_lowercase();
        (!category.is_empty() && !value.is_empty()).then_some(Attribute {
            category,
            present,
            value,
        })
    }

    /// Whether it states a finding (not `nlp` or `texture`).
    pub fn is_finding(&self) -> bool {
        FINDING_CATEGORIES.contains(&self.category.as_str())
    }
}

impl Context {
    /// Reads the context fields of an input row.
    pub fn from_row(input: &Value) -> Result<Context, String> {
        let context: Context = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid region context row: {e}"))?;
        if context.region_name.trim().is_empty() {
            return Err("the region context has no region name".into());
        }
        Ok(context)
    }

    /// The parsed attributes and texture cues.
    pub fn facts(&self) -> Vec<Attribute> {
        self.attributes
            .iter()
            .chain(&self.texture)
            .filter_map(|a| Attribute::parse(a))
            .collect()
    }

    /// Findings stated present, in order, each once.
    pub fn positives(&self) -> Vec<String> {
        self.values(|a| a.is_finding() && a.present)
    }

    /// Findings stated absent, in order, each once.
    pub fn negatives(&self) -> Vec<String> {
        self.values(|a| a.is_finding() && !a.present)
    }

    /// Diseases stated present.
    pub fn diseases(&self) -> Vec<String> {
        self.values(|a| a.category == "disease" && a.present)
    }

    /// Texture cues stated present.
    pub fn textures(&self) -> Vec<String> {
        self.values(|a| a.category == "texture" && a.present)
    }

    fn values(&self, keep: impl Fn(&Attribute) -> bool) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in self.facts().into_iter().filter(|a| keep(a)) {
            if !out.contains(&a.value) {
                out.push(a.value);
            }
        }
        out
    }

    /// `[243, 175, 875, 643] (right lung)`: prompt P1's finding location.
    pub fn location(&self) -> String {
        let coords: Vec<String> = self.bbox.iter().map(|v| format!("{}", v.round())).collect();
        format!("[{}] ({})", coords.join(", "), self.region_name)
    }

    /// The placeholders shared by prompts P1 and P2: `BBOX`, `ATTRIBUTES`, `TEXTURE`, `PHRASES`.
    pub fn placeholders(&self) -> Vec<(&'static str, String)> {
        let or_none = |items: &[String], sep: &str| {
            if items.is_empty() {
                "none".to_string()
            } else {
                items.join(sep)
            }
        };
        vec![
            ("BBOX", self.location()),
            ("ATTRIBUTES", or_none(&self.attributes, ", ")),
            ("TEXTURE", or_none(&self.texture, ", ")),
            ("PHRASES", or_none(&self.phrases, " ")),
        ]
    }
}

/// "a" or "an" before `word`.
pub(crate) fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn facts_are_read_from_the_pipe_syntax() {
        let c = Context::from_row(&json!({
            "region": "right_lung", "region_name": "right lung",
            "bbox": [243.4, 175.0, 875.0, 643.0],
            "attributes": ["anatomicalfinding|yes|atelectasis", "anatomicalfinding|no|pneumothorax",
                           "disease|yes|pneumonia", "nlp|yes|abnormal", "bad attribute"],
            "texture": ["texture|yes|opacity"], "phrases": null
        }))
        .expect("fixture");
        assert_eq!(c.positives(), vec!["atelectasis", "pneumonia"]);
        assert_eq!(c.negatives(), vec!["pneumothorax"]);
        assert_eq!(c.diseases(), vec!["pneumonia"]);
        assert_eq!(c.textures(), vec!["opacity"]);
        assert_eq!(c.location(), "[243, 175, 875, 643] (right lung)");
        assert!(Context::from_row(&json!({"region": "x"})).is_err());
        assert_eq!(
            join_and(&["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
    }
}
