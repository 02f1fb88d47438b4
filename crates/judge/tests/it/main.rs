//! Integration tests of cxrlake-judge.

mod prompts;
