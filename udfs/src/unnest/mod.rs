//! Zero-copy `unnest` of one list column: [`SliceUnnestRule`] replaces DataFusion's
//! `UnnestExec` by [`SliceUnnestExec`] where the plan unnests a single list column one level
//! deep, dropping NULL and empty lists (SQL `unnest(list) AS x`, e.g. `sql/qa.sql`'s
//! `unnest(generate_qa(…))`).
//!
//! A list's values are stored in row order, so its unnested column is a slice of the values
//! array (no copy, however deeply nested the items are); only the other columns are repeated,
//! with `take`. DataFusion's `UnnestExec` copies the values with `take` instead, which for the
//! `qa` stage's answers (a struct of nested lists per question) costs as much as building them.
//!
//! ```text
//! keys:  a          b        c              unnested  keys
//! list:  [x0, x1]   NULL     [x2]     →     x0        a      values.slice(off[0], off[3] - off[0])
//! off:   0 .. 2     2 .. 2   2 .. 3         x1        a      keys: take([0, 0, 2])
//!                                           x2        c
//! ```

mod exec;
mod rule;

pub use exec::SliceUnnestExec;
pub use rule::SliceUnnestRule;
