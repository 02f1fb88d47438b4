//! Serialises a D.1 value with every object's keys in D.1 order (`patient_id`, `study_id`, …;
//! `obs_id`, `summary_sentence`, …), as the release's Python writer keeps them, instead of
//! `serde_json::Map`'s sorted order. Dicts keyed by id keep their (sorted) id order.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::layout::{Node, Shape};

/// A value of a known D.1 object kind.
pub(crate) struct InOrder<'a> {
    pub node: &'static Node,
    pub value: &'a Value,
}

/// A value of a known shape.
struct Shaped<'a> {
    shape: Shape,
    value: &'a Value,
}

impl Serialize for InOrder<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = self.value else {
            return self.value.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, shape) in self.node.fields {
            if let Some(value) = fields.get(*key) {
                let shape = *shape;
                map.serialize_entry(key, &Shaped { shape, value })?;
            }
        }
        // Keys the layout does not know (none in an exported value) keep their sorted order.
        for (key, value) in fields {
            if self.node.fields.iter().all(|(known, _)| known != key) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl Serialize for Shaped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.shape, self.value) {
            (Shape::Optional(node) | Shape::Fixed(node), value) => {
                InOrder { node, value }.serialize(serializer)
            }
            (Shape::Objects(node), Value::Array(items)) => {
                serializer.collect_seq(items.iter().map(|value| InOrder { node, value }))
            }
            (Shape::Dict(node, _), Value::Object(entries)) => serializer.collect_map(
                entries
                    .iter()
                    .map(|(key, value)| (key, InOrder { node, value })),
            ),
            (_, value) => value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::layout;

    #[test]
    fn keys_follow_the_layout_and_values_are_unchanged() {
        let value = json!({
            "regions": {"lungs": {"region_localization_quality": null, "region": "lungs",
                                  "localization": {}, "laterality": "bilateral"}},
            "study_id": "s1",
            "patient_id": "p10",
            "sentences": [{"sentence": "x", "sent_id": "S01", "section": null,
                           "section_type": null}]
        });
        let text = serde_json::to_string(&InOrder {
            node: &layout::ROOT,
            value: &value,
        })
        .expect("serialise");
        assert_eq!(
            text,
            concat!(
                r#"{"patient_id":"p10","study_id":"s1","sentences":[{"sent_id":"S01","#,
                r#""section":null,"section_type":null,"sentence":"x"}],"regions":{"lungs":"#,
                r#"{"region":"lungs","laterality":"bilateral","localization":{},"#,
                r#""region_localization_quality":null}}}"#
            )
        );
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), value);
    }
}
