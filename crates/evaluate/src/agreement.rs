//! Agreement between raters over a ratings table: Cohen's kappa (scikit-learn's
//! `cohen_kappa_score`), Fleiss' generalised kappa and Gwet's AC1 / AC2 (irrCAC's `CAC.fleiss`
//! and `CAC.gwet`), unweighted or with linear / quadratic weights over ordered categories.
//! Paper 001 table 3 reports weighted Fleiss' kappa, AC1 and AC2 across four verifiers; paper
//! 000 table 5 Cohen's kappa of the LLM judge against a human annotator.
//!
//! ```text
//!  (item, rater, value) ──► RatingTable: items × raters, a category index or missing
//!       │
//!       ├─ two raters ──► q × q contingency of the items both rated ──► cohen_kappa
//!       └─ any raters ──► r_ik = raters of item i choosing category k, r_i = Σ_k r_ik
//!             pa  = mean over items with r_i ≥ 2 of Σ_k r_ik (Σ_l w_kl r_il − 1) / (r_i (r_i − 1))
//!             π_k = mean over all items (r_i ≥ 1) of r_ik / r_i
//!             fleiss_kappa: pe = Σ_kl w_kl π_k π_l
//!             gwet_ac:      pe = Σ_kl w_kl · Σ_k π_k (1 − π_k) / (q (q − 1))
//!             coefficient = (pa − pe) / (1 − pe)
//! ```
//!
//! These are irrCAC's formulas (Gwet, *Handbook of Inter-Rater Reliability*, 4th ed., ch. 2–5,
//! as the Python package `irrCAC.raw.CAC` 0.4 computes them): items with a single rating count
//! in the category shares π but not in the percent agreement pa; items with none are not in the
//! table at all.
//!
//! Agreement weights `w_kl` (irrCAC's `weights` module): identity `[k = l]`; linear
//! `1 − |x_k − x_l| / (x_max − x_min)`; quadratic `1 − (x_k − x_l)² / (x_max − x_min)²`, where
//! `x_k` is category k's value when every category is a number (irrCAC on numeric ratings) and
//! its rank 1..q in the given order otherwise (irrCAC on labels).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::{EvaluateError, Result};

/// The agreement weights of a coefficient (irrCAC's names; scikit-learn's `weights=None`,
/// `'linear'`, `'quadratic'` for Cohen's kappa).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Weights {
    /// Only identical categories agree (the unweighted coefficient; Gwet's AC1).
    Identity,
    /// Partial agreement falling linearly with the distance of the categories.
    Linear,
    /// Partial agreement falling with the squared distance of the categories.
    Quadratic,
}

/// Ratings as an items × raters table of category indices; an item may lack some raters'
/// ratings (every item has at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct RatingTable {
    categories: Vec<String>,
    raters: Vec<String>,
    items: Vec<String>,
    /// `ratings[item][rater]`: the index of the category in `categories`, None when not rated.
    ratings: Vec<Vec<Option<usize>>>,
}

/// The number a category stands for, when it is one (finite).
fn numeric(category: &str) -> Option<f64> {
    category
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
}

impl RatingTable {
    /// The table of `(item, rater, value)` triples. `categories` gives the categories in their
    /// order (which the linear and quadratic weights use; every value must be one of them, and
    /// unused ones still count, like irrCAC's `categories=`); without it the categories are the
    /// distinct values, sorted as numbers when every value is a number and as strings otherwise
    /// (irrCAC's `sorted(unique)`). Items and raters are sorted by name. Two ratings of one item
    /// by one rater, a value outside `categories` and a repeated category are errors.
    pub fn from_triples<I>(triples: I, categories: Option<Vec<String>>) -> Result<RatingTable>
    where
        I: IntoIterator<Item = (String, String, String)>,
    {
        let mut cells: BTreeMap<(String, String), String> = BTreeMap::new();
        for (item, rater, value) in triples {
            let key = (item, rater);
            if let Some(previous) = cells.get(&key) {
                let (item, rater) = key;
                return Err(EvaluateError::Input(format!(
                    "item '{item}' has two ratings by rater '{rater}' ('{previous}' and \
                     '{value}'): give one value per item and rater"
                )));
            }
            cells.insert(key, value);
        }
        let values: BTreeSet<&String> = cells.values().collect();
        let categories = match categories {
            Some(categories) => {
                let mut seen = BTreeSet::new();
                if let Some(repeated) = categories.iter().find(|c| !seen.insert(*c)) {
                    return Err(EvaluateError::Input(format!(
                        "the category '{repeated}' is listed twice: list each category once"
                    )));
                }
                if let Some(unknown) = values.iter().find(|v| !categories.contains(v)) {
                    return Err(EvaluateError::Input(format!(
                        "the rating '{unknown}' is not one of the categories [{}]: add it to the \
                         categories or fix the rating",
                        categories.join(", ")
                    )));
                }
                categories
            }
            None => {
                let mut sorted: Vec<String> = values.into_iter().cloned().collect();
                let numbers: Option<Vec<f64>> = sorted.iter().map(|v| numeric(v)).collect();
                if let Some(numbers) = numbers {
                    let mut paired: Vec<(f64, String)> = numbers.into_iter().zip(sorted).collect();
                    paired.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                    sorted = paired.into_iter().map(|(_, v)| v).collect();
                }
                sorted
            }
        };
        let category_index: BTreeMap<&str, usize> = categories
            .iter()
            .enumerate()
            .map(|(k, c)| (c.as_str(), k))
            .collect();
        let raters: Vec<String> = cells
            .keys()
            .map(|(_, rater)| rater.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let items: Vec<String> = cells
            .keys()
            .map(|(item, _)| item.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let rater_index: BTreeMap<&str, usize> = raters
            .iter()
            .enumerate()
            .map(|(j, rater)| (rater.as_str(), j))
            .collect();
        let item_index: BTreeMap<&str, usize> = items
            .iter()
            .enumerate()
            .map(|(i, item)| (item.as_str(), i))
            .collect();
        let mut ratings = vec![vec![None; raters.len()]; items.len()];
        for ((item, rater), value) in &cells {
            ratings[item_index[item.as_str()]][rater_index[rater.as_str()]] =
                category_index.get(value.as_str()).copied();
        }
        Ok(RatingTable {
            categories,
            raters,
            items,
            ratings,
        })
    }

    /// The categories, in order.
    pub fn categories(&self) -> &[String] {
        &self.categories
    }

    /// The raters, sorted by name.
    pub fn raters(&self) -> &[String] {
        &self.raters
    }

    /// The items, sorted by name.
    pub fn items(&self) -> &[String] {
        &self.items
    }

    /// Number of items (each with at least one rating).
    pub fn n_items(&self) -> usize {
        self.items.len()
    }

    /// Number of raters.
    pub fn n_raters(&self) -> usize {
        self.raters.len()
    }

    /// Number of categories (q).
    pub fn n_categories(&self) -> usize {
        self.categories.len()
    }

    /// The rating of `item` by `rater` (a category), None when not rated or unknown.
    pub fn rating(&self, item: &str, rater: &str) -> Option<&str> {
        let i = self.items.iter().position(|x| x == item)?;
        let j = self.raters.iter().position(|x| x == rater)?;
        self.ratings[i][j].map(|k| self.categories[k].as_str())
    }

    /// The table of only `raters`' ratings (in the given order), on the items at least one of
    /// them rated; the categories stay. For example one judge against one human for
    /// [`cohen_kappa`].
    pub fn only_raters(&self, raters: &[&str]) -> Result<RatingTable> {
        let columns: Vec<usize> = raters
            .iter()
            .map(|r| {
                self.raters.iter().position(|x| x == r).ok_or_else(|| {
                    EvaluateError::Input(format!(
                        "no rater '{r}' in the ratings (raters: {})",
                        self.raters.join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let mut items = Vec::new();
        let mut ratings = Vec::new();
        for (item, row) in self.items.iter().zip(&self.ratings) {
            let kept: Vec<Option<usize>> = columns.iter().map(|&c| row[c]).collect();
            if kept.iter().any(Option::is_some) {
                items.push(item.clone());
                ratings.push(kept);
            }
        }
        Ok(RatingTable {
            categories: self.categories.clone(),
            raters: raters.iter().map(|r| r.to_string()).collect(),
            items,
            ratings,
        })
    }

    /// irrCAC's q × q agreement weights `w_kl` (see the module doc).
    fn weights(&self, weights: Weights) -> Vec<Vec<f64>> {
        let q = self.categories.len();
        let values: Vec<f64> = self
            .categories
            .iter()
            .map(|c| numeric(c))
            .collect::<Option<Vec<f64>>>()
            .unwrap_or_else(|| (1..=q).map(|k| k as f64).collect());
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let span = max - min;
        (0..q)
            .map(|k| {
                (0..q)
                    .map(|l| match weights {
                        Weights::Identity => f64::from(u8::from(k == l)),
                        // One distinct value: everything agrees.
                        _ if span <= 0.0 => 1.0,
                        Weights::Linear => 1.0 - (values[k] - values[l]).abs() / span,
                        Weights::Quadratic => 1.0 - ((values[k] - values[l]) / span).powi(2),
                    })
                    .collect()
            })
            .collect()
    }

    /// Per item, `r_ik`: how many raters chose each category.
    fn counts(&self) -> Vec<Vec<f64>> {
        let q = self.categories.len();
        self.ratings
            .iter()
            .map(|row| {
                let mut counts = vec![0.0; q];
                for &k in row.iter().flatten() {
                    counts[k] += 1.0;
                }
                counts
            })
            .collect()
    }
}

/// irrCAC's weighted percent agreement `pa` and category shares `π` (see the module doc).
fn agreement_and_shares(table: &RatingTable, w: &[Vec<f64>]) -> Result<(f64, Vec<f64>)> {
    let q = table.categories.len();
    let counts = table.counts();
    let rated: Vec<&Vec<f64>> = counts
        .iter()
        .filter(|c| c.iter().sum::<f64>() > 0.0)
        .collect();
    let n = rated.len() as f64;
    let (mut pa_sum, mut n2) = (0.0, 0usize);
    let mut pi = vec![0.0; q];
    for c in &rated {
        let r: f64 = c.iter().sum();
        for k in 0..q {
            pi[k] += c[k] / r / n;
        }
        if r >= 2.0 {
            n2 += 1;
            let agreeing: f64 = (0..q)
                .map(|k| {
                    let weighted: f64 = (0..q).map(|l| w[k][l] * c[l]).sum();
                    c[k] * (weighted - 1.0)
                })
                .sum();
            pa_sum += agreeing / (r * (r - 1.0));
        }
    }
    if n2 == 0 {
        return Err(EvaluateError::Input(format!(
            "none of the {} items has ratings by two raters: agreement is undefined",
            table.n_items()
        )));
    }
    Ok((pa_sum / n2 as f64, pi))
}

/// Fleiss' generalised kappa, weighted, with missing ratings, as irrCAC's
/// `CAC(ratings, weights=..., categories=...).fleiss()`: `(pa − pe) / (1 − pe)` with
/// `pe = Σ_kl w_kl π_k π_l` (module doc). NaN when `pe = 1` (everyone always chose one
/// category); an error when no item has two ratings.
pub fn fleiss_kappa(table: &RatingTable, weights: Weights) -> Result<f64> {
    let w = table.weights(weights);
    let (pa, pi) = agreement_and_shares(table, &w)?;
    let pe: f64 = pi
        .iter()
        .enumerate()
        .map(|(k, pk)| {
            pi.iter()
                .enumerate()
                .map(|(l, pl)| w[k][l] * pk * pl)
                .sum::<f64>()
        })
        .sum();
    Ok((pa - pe) / (1.0 - pe))
}

/// Gwet's AC1 (identity weights) or AC2 (linear / quadratic), with missing ratings, as irrCAC's
/// `CAC(ratings, weights=..., categories=...).gwet()`: `(pa − pe) / (1 − pe)` with
/// `pe = Σ_kl w_kl · Σ_k π_k (1 − π_k) / (q (q − 1))` (module doc), and irrCAC's
/// `pe = 1 − 10⁻¹⁵` when there is a single category. An error when no item has two ratings.
pub fn gwet_ac(table: &RatingTable, weights: Weights) -> Result<f64> {
    let w = table.weights(weights);
    let (pa, pi) = agreement_and_shares(table, &w)?;
    let q = pi.len() as f64;
    let pe = if pi.len() >= 2 {
        let total: f64 = w.iter().flatten().sum();
        total * pi.iter().map(|p| p * (1.0 - p)).sum::<f64>() / (q * (q - 1.0))
    } else {
        1.0 - 1e-15
    };
    Ok((pa - pe) / (1.0 - pe))
}

/// Gwet's AC1: [`gwet_ac`] with identity weights.
pub fn gwet_ac1(table: &RatingTable) -> Result<f64> {
    gwet_ac(table, Weights::Identity)
}

/// Cohen's kappa of a two-rater table over the items both rated, as scikit-learn's
/// `cohen_kappa_score(a, b, labels=categories, weights=None | 'linear' | 'quadratic')`:
/// `1 − Σ_kl d_kl O_kl / Σ_kl d_kl E_kl` with O the contingency counts, `E_kl = O_k· O_·l / n`
/// and disagreement weights `d_kl` = `[k ≠ l]`, `|k − l|` or `(k − l)²` on the category ranks
/// (scikit-learn uses ranks even for numeric categories). NaN when the expected disagreement
/// is 0 (scikit-learn's default `replace_undefined_by=np.nan`); an error unless the table has
/// exactly two raters and an item rated by both.
pub fn cohen_kappa(table: &RatingTable, weights: Weights) -> Result<f64> {
    if table.raters.len() != 2 {
        return Err(EvaluateError::Input(format!(
            "Cohen's kappa needs exactly two raters, the ratings have {} ({}): select two with \
             only_raters or use fleiss_kappa / gwet_ac",
            table.raters.len(),
            table.raters.join(", ")
        )));
    }
    let q = table.categories.len();
    let mut observed = vec![vec![0.0f64; q]; q];
    let mut n = 0.0;
    for row in &table.ratings {
        if let (Some(a), Some(b)) = (row[0], row[1]) {
            observed[a][b] += 1.0;
            n += 1.0;
        }
    }
    if n == 0.0 {
        return Err(EvaluateError::Input(format!(
            "no item was rated by both '{}' and '{}': Cohen's kappa is undefined",
            table.raters[0], table.raters[1]
        )));
    }
    let first: Vec<f64> = observed.iter().map(|row| row.iter().sum()).collect();
    let second: Vec<f64> = (0..q)
        .map(|l| observed.iter().map(|row| row[l]).sum())
        .collect();
    let disagreement = |k: usize, l: usize| -> f64 {
        let d = k.abs_diff(l) as f64;
        match weights {
            Weights::Identity => f64::from(u8::from(k != l)),
            Weights::Linear => d,
            Weights::Quadratic => d * d,
        }
    };
    let (mut observed_disagreement, mut expected_disagreement) = (0.0, 0.0);
    for k in 0..q {
        for l in 0..q {
            observed_disagreement += disagreement(k, l) * observed[k][l];
            expected_disagreement += disagreement(k, l) * first[k] * second[l] / n;
        }
    }
    if expected_disagreement == 0.0 {
        return Ok(f64::NAN);
    }
    Ok(1.0 - observed_disagreement / expected_disagreement)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[(&str, &str, &str)], categories: Option<&[&str]>) -> RatingTable {
        RatingTable::from_triples(
            rows.iter()
                .map(|(i, r, v)| (i.to_string(), r.to_string(), v.to_string())),
            categories.map(|c| c.iter().map(|s| s.to_string()).collect()),
        )
        .expect("table")
    }

    #[test]
    fn cohen_by_hand() {
        // Observed agreement 3/4, expected 1/2: kappa 0.5.
        let t = table(
            &[
                ("1", "a", "yes"),
                ("1", "b", "yes"),
                ("2", "a", "yes"),
                ("2", "b", "yes"),
                ("3", "a", "no"),
                ("3", "b", "yes"),
                ("4", "a", "no"),
                ("4", "b", "no"),
            ],
            None,
        );
        assert!((cohen_kappa(&t, Weights::Identity).expect("kappa") - 0.5).abs() < 1e-12);
        let one_category = table(&[("1", "a", "x"), ("1", "b", "x")], None);
        assert!(
            cohen_kappa(&one_category, Weights::Identity)
                .expect("kappa")
                .is_nan()
        );
        let three = table(&[("1", "a", "x"), ("1", "b", "x"), ("1", "c", "x")], None);
        let error = cohen_kappa(&three, Weights::Identity).expect_err("three raters");
        assert!(error.to_string().contains("exactly two raters"), "{error}");
    }

    /// irrCAC's documented example (`irrCAC.datasets.raw_4raters`, module doc of `irrCAC.raw`):
    /// AC1 0.77544, Fleiss' kappa 0.76117, pa 0.81818 (rounded to 5 digits).
    #[test]
    fn irrcac_documented_example() {
        let rows: [[Option<u8>; 4]; 12] = [
            [Some(1), Some(1), None, Some(1)],
            [Some(2), Some(2), Some(3), Some(2)],
            [Some(3), Some(3), Some(3), Some(3)],
            [Some(3), Some(3), Some(3), Some(3)],
            [Some(2), Some(2), Some(2), Some(2)],
            [Some(1), Some(2), Some(3), Some(4)],
            [Some(4), Some(4), Some(4), Some(4)],
            [Some(1), Some(1), Some(2), Some(1)],
            [Some(2), Some(2), Some(2), Some(2)],
            [None, Some(5), Some(5), Some(5)],
            [None, None, Some(1), Some(1)],
            [None, None, Some(3), None],
        ];
        let triples = rows.iter().enumerate().flat_map(|(i, row)| {
            row.iter().enumerate().filter_map(move |(j, v)| {
                v.map(|v| {
                    (
                        format!("{:02}", i + 1),
                        format!("Rater{}", j + 1),
                        v.to_string(),
                    )
                })
            })
        });
        let t = RatingTable::from_triples(triples, None).expect("table");
        assert_eq!((t.n_items(), t.n_raters(), t.n_categories()), (12, 4, 5));
        assert_eq!(t.rating("10", "Rater2"), Some("5"));
        assert_eq!(t.rating("10", "Rater1"), None);
        let ac1 = gwet_ac1(&t).expect("ac1");
        let fleiss = fleiss_kappa(&t, Weights::Identity).expect("fleiss");
        assert!((ac1 - 0.77544).abs() < 5e-6, "{ac1}");
        assert!((fleiss - 0.76117).abs() < 5e-6, "{fleiss}");
    }

    #[test]
    fn categories_and_weights() {
        let t = table(
            &[("1", "a", "10"), ("1", "b", "9"), ("2", "a", "1.5")],
            None,
        );
        assert_eq!(t.categories(), ["1.5", "9", "10"]);
        let w = t.weights(Weights::Linear);
        assert!((w[0][1] - (1.0 - 7.5 / 8.5)).abs() < 1e-15);
        let labels = table(
            &[("1", "a", "mild"), ("1", "b", "severe")],
            Some(&["mild", "moderate", "severe"]),
        );
        assert_eq!(labels.weights(Weights::Quadratic)[0][1], 0.75);
        assert_eq!(labels.weights(Weights::Identity)[1][1], 1.0);
    }

    #[test]
    fn bad_tables_are_refused() {
        let error = RatingTable::from_triples(
            [("1", "a", "x"), ("1", "a", "y")]
                .map(|(i, r, v)| (i.to_string(), r.to_string(), v.to_string())),
            None,
        )
        .expect_err("duplicate");
        assert!(
            error.to_string().contains("item '1'") && error.to_string().contains("rater 'a'"),
            "{error}"
        );
        let error = RatingTable::from_triples(
            [("1", "a", "z")].map(|(i, r, v)| (i.to_string(), r.to_string(), v.to_string())),
            Some(vec!["x".into(), "y".into()]),
        )
        .expect_err("unknown value");
        assert!(error.to_string().contains("'z'"), "{error}");
        let single = table(&[("1", "a", "x"), ("2", "b", "y")], None);
        assert!(fleiss_kappa(&single, Weights::Identity).is_err());
        assert!(gwet_ac1(&single).is_err());
        let error = single.only_raters(&["a", "c"]).expect_err("no rater c");
        assert!(error.to_string().contains("no rater 'c'"), "{error}");
        let a = single.only_raters(&["a"]).expect("rater a");
        assert_eq!((a.n_items(), a.n_raters(), a.n_categories()), (1, 1, 2));
    }
}
