//! One fuzz target per parser, each a test: a bounded run here (`FUZZ_ITERATIONS`, default
//! 1,000 inputs per target), a long one with `scripts/fuzz`.

mod corpus;
mod ingest;
mod llm;
mod masks;
mod rules;
