//! Grading functions (paper 000, D.3): `grade_qa` turns a QA pair's verdicts and scene-graph
//! quality into the judged columns of `qa`.

mod grade_qa;

pub use grade_qa::GradeQaFunc;
