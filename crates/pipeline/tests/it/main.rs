mod common;
mod demo;
mod evaluate;
mod evaluations;
mod extract;
#[path = "../../../gemex/tests/gemex.rs"]
mod gemex;
#[path = "../../../givcxr/tests/givcxr.rs"]
mod givcxr;
mod graph;
mod incremental;
mod judge;
mod llm_server;
mod localize;
#[path = "../../../mimic-cxr-vqa/tests/mimic_cxr_vqa.rs"]
mod mimic_cxr_vqa;
mod qa;
#[path = "../../../rexvqa/tests/rexvqa.rs"]
mod rexvqa;
mod settings;
mod toy;
