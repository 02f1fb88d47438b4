//! Analyzer rule that gives rating columns their order in SQL.
//!
//! A column is a rating column when its Arrow field carries `cxrlake.type = rating`. Before type
//! coercion, the rule rewrites, for such columns only:
//!
//! ```text
//! rating >= 'A'                  →  rating IN ('A++', 'A+', 'A')  (also <, <=, >)
//! rating BETWEEN 'B' AND 'A+'    →  rating IN ('A+', 'A', 'B')
//! rating >= other_rating         →  rating_rank(rating) >= rating_rank(other_rating)
//! ORDER BY rating                →  ORDER BY rating_rank(rating)
//! MIN(rating) / MAX(rating)      →  rating_min(rating) / rating_max(rating)   (name kept)
//! rating = 'a+' / IN ('A', 'B')  →  literals checked and written canonically ('A+')
//! ```
//!
//! A literal that is not a rating is a planning error listing the valid values.
//!
//! Files outside the lake carry no field metadata: there a string column named `rating`, or
//! ending in `.rating` or `_rating` (the release's `question.quality.rating`,
//! `study.quality.extraction_rating`), is a rating column holding release codes (`4_A`) or
//! grades, and the sets above list both forms (`rating_rank` reads both).

use std::sync::Arc;

use cxrlake_schemas::{Rating, is_rating_field};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::expr::{AggregateFunction, InList};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    AggregateUDF, Between, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, ScalarUDF,
};
use datafusion::optimizer::AnalyzerRule;

use super::{RatingExtremumFunc, RatingRankFunc};

/// The rating-order analyzer rule; install it before type coercion.
#[derive(Debug)]
pub struct RatingOrderRule {
    rank: Arc<ScalarUDF>,
    min: Arc<AggregateUDF>,
    max: Arc<AggregateUDF>,
}

impl Default for RatingOrderRule {
    fn default() -> Self {
        Self::new()
    }
}

impl AnalyzerRule for RatingOrderRule {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| self.rewrite_node(node))
            .data()
    }

    fn name(&self) -> &str {
        "cxrlake_rating_order"
    }
}

impl RatingOrderRule {
    /// Creates the rule with its own handles on `rating_rank`, `rating_min` and `rating_max`.
    pub fn new() -> Self {
        Self {
            rank: Arc::new(ScalarUDF::from(RatingRankFunc::new())),
            min: Arc::new(AggregateUDF::from(RatingExtremumFunc::min())),
            max: Arc::new(AggregateUDF::from(RatingExtremumFunc::max())),
        }
    }

    fn rewrite_node(&self, node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
        let inputs = node.inputs();
        let Some((first, rest)) = inputs.split_first() else {
            return Ok(Transformed::no(node));
        };
        let mut schema = first.schema().as_ref().clone();
        for other in rest {
            schema.merge(other.schema());
        }
        let is_sort = matches!(node, LogicalPlan::Sort(_));
        let names = matches!(
            node,
            LogicalPlan::Projection(_) | LogicalPlan::Aggregate(_) | LogicalPlan::Window(_)
        )
        .then(|| NamePreserver::new(&node));
        let rewritten = node.map_expressions(|expr| {
            let saved = names.as_ref().map(|n| n.save(&expr));
            let mut out = expr.transform_up(|e| self.rewrite_expr(e, &schema))?;
            if is_sort && self.is_rating(&out.data, &schema) {
                out = Transformed::yes(self.rank.call(vec![out.data]));
            }
            Ok(match saved {
                Some(saved) => out.update_data(|e| saved.restore(e)),
                None => out,
            })
        })?;
        if rewritten.transformed {
            rewritten.map_data(|plan| plan.recompute_schema())
        } else {
            Ok(rewritten)
        }
    }

    fn is_rating(&self, expr: &Expr, schema: &DFSchema) -> bool {
        !matches!(expr, Expr::Literal(..))
            && expr
                .to_field(schema)
                .map(|(_, field)| is_rating_field(&field) || is_release_rating(&field))
                .unwrap_or(false)
    }

    /// Whether `expr` is a rating column recognised by its name (see the module doc).
    fn holds_release_codes(&self, expr: &Expr, schema: &DFSchema) -> bool {
        expr.to_field(schema)
            .map(|(_, field)| !is_rating_field(&field) && is_release_rating(&field))
            .unwrap_or(false)
    }

    /// The ratings whose rank satisfies `keep`, in the forms `column` may hold.
    fn set_for(&self, column: &Expr, schema: &DFSchema, keep: impl Fn(i8) -> bool) -> Vec<Expr> {
        let mut set = ratings_where(&keep);
        if self.holds_release_codes(column, schema) {
            set.extend(
                Rating::ALL
                    .into_iter()
                    .filter(|rating| keep(rating.rank()))
                    .map(|rating| {
                        Expr::Literal(ScalarValue::Utf8(Some(rating.release_code())), None)
                    }),
            );
        }
        set
    }

    fn rewrite_expr(&self, expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        match expr {
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if is_comparison(op)
                    && (self.is_rating(&left, schema) || self.is_rating(&right, schema)) =>
            {
                if is_ordering(op)
                    && let Some(set) = self.literal_comparison(&left, op, &right, schema)?
                {
                    return Ok(Transformed::yes(set));
                }
                let (left, right) = if is_ordering(op) {
                    (self.ranked(*left, schema)?, self.ranked(*right, schema)?)
                } else {
                    (canonical(*left)?, canonical(*right)?)
                };
                Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(left),
                    op,
                    Box::new(right),
                ))))
            }
            Expr::Between(Between {
                expr,
                negated,
                low,
                high,
            }) if self.is_rating(&expr, schema) => {
                if let (Some(low), Some(high)) = (string_literal(&low), string_literal(&high)) {
                    let (low, high) = (parse_literal(low)?.rank(), parse_literal(high)?.rank());
                    let set = self.set_for(&expr, schema, |rank| (low..=high).contains(&rank));
                    return Ok(Transformed::yes(Expr::InList(InList::new(
                        expr, set, negated,
                    ))));
                }
                Ok(Transformed::yes(Expr::Between(Between::new(
                    Box::new(self.ranked(*expr, schema)?),
                    negated,
                    Box::new(self.ranked(*low, schema)?),
                    Box::new(self.ranked(*high, schema)?),
                ))))
            }
            Expr::InList(InList {
                expr,
                list,
                negated,
            }) if self.is_rating(&expr, schema) => {
                let list = list
                    .into_iter()
                    .map(canonical)
                    .collect::<Result<Vec<_>>>()?;
                Ok(Transformed::yes(Expr::InList(InList::new(
                    expr, list, negated,
                ))))
            }
            Expr::AggregateFunction(AggregateFunction { func, params })
                if matches!(func.name(), "min" | "max")
                    && params.args.len() == 1
                    && self.is_rating(&params.args[0], schema) =>
            {
                let func = if func.name() == "min" {
                    &self.min
                } else {
                    &self.max
                };
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction {
                        func: Arc::clone(func),
                        params,
                    },
                )))
            }
            other => Ok(Transformed::no(other)),
        }
    }

    /// `rating <op> 'A'` (either side) as `rating IN (...)` of the ratings that satisfy it: a
    /// string set lookup, several times faster than ranking every row. `None` when neither side is
    /// a literal.
    fn literal_comparison(
        &self,
        left: &Expr,
        op: Operator,
        right: &Expr,
        schema: &DFSchema,
    ) -> Result<Option<Expr>> {
        let (column, op, literal) = match (string_literal(left), string_literal(right)) {
            (None, Some(text)) if self.is_rating(left, schema) => (left, op, text),
            (Some(text), None) if self.is_rating(right, schema) => {
                let Some(swapped) = op.swap() else {
                    return Ok(None);
                };
                (right, swapped, text)
            }
            _ => return Ok(None),
        };
        let bound = parse_literal(literal)?.rank();
        let keep = |rank: i8| match op {
            Operator::Lt => rank < bound,
            Operator::LtEq => rank <= bound,
            Operator::Gt => rank > bound,
            _ => rank >= bound,
        };
        Ok(Some(Expr::InList(InList::new(
            Box::new(column.clone()),
            self.set_for(column, schema, keep),
            false,
        ))))
    }

    /// The rank of a rating literal, or `rating_rank(expr)` for anything else.
    fn ranked(&self, expr: Expr, schema: &DFSchema) -> Result<Expr> {
        if let Some(text) = string_literal(&expr) {
            let rating = parse_literal(text)?;
            return Ok(Expr::Literal(ScalarValue::Int8(Some(rating.rank())), None));
        }
        if let Expr::Literal(value, _) = &expr
            && value.is_null()
        {
            return Ok(Expr::Literal(ScalarValue::Int8(None), None));
        }
        if self.is_rating(&expr, schema) || expr.get_type(schema).is_ok_and(|t| t.is_string()) {
            return Ok(self.rank.call(vec![expr]));
        }
        plan_err!(
            "cannot order-compare a rating with {expr}; compare with a rating such as 'A' \
             (valid: {}) or use rating_rank(...)",
            Rating::valid_values()
        )
    }
}

/// The ratings whose rank satisfies `keep`, as string literals.
fn ratings_where(keep: &impl Fn(i8) -> bool) -> Vec<Expr> {
    Rating::ALL
        .into_iter()
        .filter(|rating| keep(rating.rank()))
        .map(|rating| Expr::Literal(ScalarValue::Utf8(Some(rating.as_str().to_string())), None))
        .collect()
}

/// Checks a rating literal and writes it in canonical form; other expressions pass through.
fn canonical(expr: Expr) -> Result<Expr> {
    match string_literal(&expr) {
        Some(text) => Ok(Expr::Literal(
            ScalarValue::Utf8(Some(parse_literal(text)?.as_str().to_string())),
            None,
        )),
        None => Ok(expr),
    }
}

fn parse_literal(text: &str) -> Result<Rating> {
    match text.parse::<Rating>() {
        Ok(rating) => Ok(rating),
        Err(err) => plan_err!("{err}"),
    }
}

fn string_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal(value, _) => value.try_as_str().flatten(),
        _ => None,
    }
}

/// A string column without cxrlake's rating metadata whose name says it is a rating.
fn is_release_rating(field: &datafusion::arrow::datatypes::Field) -> bool {
    let name = field.name();
    field.data_type().is_string()
        && !field
            .metadata()
            .contains_key(cxrlake_schemas::rating::TYPE_METADATA_KEY)
        && (name == "rating" || name.ends_with(".rating") || name.ends_with("_rating"))
}

fn is_comparison(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
    )
}

fn is_ordering(op: Operator) -> bool {
    matches!(
        op,
        Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    )
}
