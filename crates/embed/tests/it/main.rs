//! Integration tests of `cxrlake-embed`.

mod lexical;
mod onnx;
mod similarity;
