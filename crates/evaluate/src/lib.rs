//! The papers' evaluation metrics as plain functions over plain values; `cxrlake-pipeline`'s
//! `evaluate` module reads the lake and prediction files into these inputs, writes the results
//! to `eval_*` tables and prints them.
//!
//! ```text
//!  tags vs labels ──► classify   (per-class P/R/F1/MCC, macro over subsets, micro)
//!  boxes vs boxes ──► masks      (union-of-boxes areas: IoU, IoP, IoT, IoH)
//!  structured VQA ──► radstruct  (RadStrucVQA sub-metrics of paper 000 table 18)
//!  free text      ──► text       (BLEU-1..4, METEOR, ROUGE-L, CIDEr-D, BERTScore)
//!  GEMeX          ──► assign     (A-score, V-score with Hungarian matching)
//!  ratings        ──► agreement  (Cohen's kappa, weighted Fleiss' kappa, Gwet's AC1/AC2)
//!  any score      ──► bootstrap  (95 % percentile CI over items, paired differences)
//!  two groups     ──► permutation (mean difference: two-sample bootstrap CI, permutation test,
//!                                  Cohen's d)
//! ```

pub mod agreement;
pub mod assign;
pub mod bootstrap;
pub mod classify;
mod error;
pub mod masks;
pub mod permutation;
pub mod radstruct;
pub mod text;

pub use error::{EvaluateError, Result};
