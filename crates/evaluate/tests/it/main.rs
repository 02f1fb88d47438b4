//! cxrlake-evaluate's integration tests: every metric against a reference implementation
//! (scikit-learn, scipy, sacrebleu, rouge-score, nltk, pycocoevalcap, irrCAC, numpy) run on the
//! same inputs through `python3`, and hand-computed cases.

mod agreement;
mod assign;
mod bootstrap;
mod classify;
mod masks;
mod python;
mod radstruct;
mod text;
