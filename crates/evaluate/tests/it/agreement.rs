//! Agreement coefficients against scikit-learn (Cohen's kappa) and irrCAC (Fleiss' kappa, Gwet's
//! AC1 / AC2) on seeded random rating tables, unweighted and with linear / quadratic weights.

#![allow(clippy::print_stderr)]

use cxrlake_evaluate::agreement::{
    RatingTable, Weights, cohen_kappa, fleiss_kappa, gwet_ac, gwet_ac1,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::python;

/// Per case and weights: irrCAC's Fleiss and Gwet coefficients (all 15 digits) and, for two
/// raters, scikit-learn's Cohen's kappa over the items both rated. Numeric cases hand irrCAC
/// floats (so its weights use the values) and the sorted values rated, which is what the table
/// finds without `categories` (irrCAC 0.4.4 cannot find them itself under pandas 3 when ratings
/// are missing: `DataFrame.stack()` now keeps the NaNs, which become a category).
const REFERENCE: &str = r#"
import json, sys
import numpy as np, pandas as pd
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score
out = []
for d in json.load(sys.stdin):
    rows = [[np.nan if v is None else (float(v) if d["numeric"] else v) for v in row] for row in d["table"]]
    df = pd.DataFrame(rows, columns=d["raters"], dtype=float if d["numeric"] else object)
    if d["numeric"]:
        cats = sorted({float(v) for row in d["table"] for v in row if v is not None})
    else:
        cats = d["categories"]
    result = {}
    for w in ["identity", "linear", "quadratic"]:
        cac = CAC(df, weights=w, categories=cats, digits=15)
        result[w] = {"fleiss": float(cac.fleiss()["est"]["coefficient_value"]),
                     "gwet": float(cac.gwet()["est"]["coefficient_value"])}
        if len(d["raters"]) == 2:
            both = df.dropna()
            result[w]["cohen"] = float(cohen_kappa_score(
                both.iloc[:, 0].tolist(), both.iloc[:, 1].tolist(), labels=cats,
                weights=None if w == "identity" else w))
    out.append(result)
print(json.dumps(out))
"#;

/// One random table.
struct Case {
    raters: Vec<String>,
    categories: Vec<String>,
    numeric: bool,
    /// `table[item][rater]`, None when not rated.
    table: Vec<Vec<Option<String>>>,
}

impl Case {
    /// Items have a latent category; each rater gives it, a neighbour or a random category,
    /// and leaves a rating out with probability `missing`.
    fn new(seed: u64, items: usize, raters: usize, categories: Vec<String>, missing: f64) -> Case {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let q = categories.len();
        let numeric = categories.iter().all(|c| c.parse::<f64>().is_ok());
        let table = (0..items)
            .map(|_| {
                let latent = rng.random_range(0..q);
                (0..raters)
                    .map(|_| {
                        if rng.random_bool(missing) {
                            return None;
                        }
                        let k = match rng.random_range(0..10) {
                            0..6 => latent,
                            6..8 => (latent + 1).min(q - 1),
                            _ => rng.random_range(0..q),
                        };
                        Some(categories[k].clone())
                    })
                    .collect()
            })
            .collect();
        Case {
            raters: (0..raters).map(|r| format!("rater{r}")).collect(),
            categories,
            numeric,
            table,
        }
    }

    /// The same ratings with one more category that nobody chose (it still counts in q and in
    /// the weights' range).
    fn with_unused_category(mut self, category: &str) -> Case {
        self.categories.push(category.to_string());
        self
    }

    fn rating_table(&self) -> RatingTable {
        let triples = self.table.iter().enumerate().flat_map(|(i, row)| {
            row.iter()
                .zip(&self.raters)
                .filter_map(move |(value, rater)| {
                    value
                        .as_ref()
                        .map(|v| (format!("item{i:04}"), rater.clone(), v.clone()))
                })
        });
        // Numeric categories are found in the ratings (sorted as numbers), labels are given.
        let categories = (!self.numeric).then(|| self.categories.clone());
        RatingTable::from_triples(triples, categories).expect("table")
    }

    fn json(&self) -> Value {
        json!({
            "raters": self.raters,
            "categories": self.categories,
            "numeric": self.numeric,
            "table": self.table,
        })
    }
}

fn labels(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn coefficients_equal_irrcac_and_scikit_learn() {
    // Ordered labels whose order is not alphabetical, so the weights must follow the given order.
    let severity = labels(&["none", "mild", "moderate", "severe"]);
    let likert = labels(&["1", "2", "3", "4", "5"]);
    let gaps = labels(&["1", "2", "3", "5", "8", "13"]);
    let cases = [
        Case::new(1, 60, 2, labels(&["low", "mid", "high"]), 0.0),
        Case::new(2, 150, 2, likert.clone(), 0.0),
        Case::new(3, 80, 2, severity.clone(), 0.15),
        Case::new(4, 80, 3, severity.clone(), 0.1),
        Case::new(5, 50, 5, labels(&["e", "d", "c", "b", "a", "z"]), 0.3),
        Case::new(6, 120, 4, likert, 0.2),
        Case::new(7, 70, 3, gaps.clone(), 0.25),
        Case::new(8, 90, 2, gaps, 0.1),
        Case::new(9, 40, 5, severity.clone(), 0.5),
        Case::new(10, 60, 2, severity.clone(), 0.1).with_unused_category("critical"),
        Case::new(11, 60, 4, severity, 0.2).with_unused_category("critical"),
    ];
    let reference = python::run(
        REFERENCE,
        &Value::Array(cases.iter().map(Case::json).collect()),
    );
    let mut worst = [0.0f64; 3];
    let mut compared = [0usize; 3];
    for (case, expected) in cases.iter().zip(reference.as_array().expect("list")) {
        let table = case.rating_table();
        assert_eq!(table.n_raters(), case.raters.len());
        for (name, weights) in [
            ("identity", Weights::Identity),
            ("linear", Weights::Linear),
            ("quadratic", Weights::Quadratic),
        ] {
            let expected = |coefficient: &str| {
                expected[name][coefficient]
                    .as_f64()
                    .expect("a number (not NaN)")
            };
            let ours = [
                fleiss_kappa(&table, weights).expect("fleiss"),
                gwet_ac(&table, weights).expect("gwet"),
            ];
            for (slot, (value, coefficient)) in ours.into_iter().zip(["fleiss", "gwet"]).enumerate()
            {
                worst[slot] = worst[slot].max((value - expected(coefficient)).abs());
                compared[slot] += 1;
            }
            if case.raters.len() == 2 {
                let kappa = cohen_kappa(&table, weights).expect("cohen");
                worst[2] = worst[2].max((kappa - expected("cohen")).abs());
                compared[2] += 1;
            }
        }
        assert_eq!(
            gwet_ac1(&table).expect("ac1"),
            gwet_ac(&table, Weights::Identity).expect("ac1")
        );
    }
    eprintln!(
        "agreement: max abs diff Fleiss' kappa vs irrCAC {:.1e} ({} values), Gwet AC1/AC2 vs \
         irrCAC {:.1e} ({} values), Cohen's kappa vs scikit-learn {:.1e} ({} values)",
        worst[0], compared[0], worst[1], compared[1], worst[2], compared[2]
    );
    assert!(worst.iter().all(|&w| w <= 1e-9), "{worst:?}");
}
