-- rexvqa_validators: the ReXVQA flavour's checks (paper 003, appendix A) over every generated
-- MCQ (rexvqa_questions): how many pass each structural validator v1-v4, each content validator
-- c1-c3 (of the MCQs judged: the structurally valid ones), V(Q), the PHI check and the
-- near-duplicate filter, and how many are kept (exported).
WITH q AS (SELECT * FROM rexvqa_questions),
checks AS (
    SELECT 1 AS n, 'v1 schema' AS check_name, count(*) AS checked, sum(CAST(v1_schema AS INT)) AS passed FROM q
    UNION ALL SELECT 2, 'v2 data types', count(*), sum(CAST(v2_types AS INT)) FROM q
    UNION ALL SELECT 3, 'v3 format', count(*), sum(CAST(v3_format AS INT)) FROM q
    UNION ALL SELECT 4, 'v4 completeness', count(*), sum(CAST(v4_complete AS INT)) FROM q
    UNION ALL SELECT 5, 'c1 domain specificity', count(judge), sum(CAST(c1_domain AS INT)) FROM q
    UNION ALL SELECT 6, 'c2 cognitive depth', count(judge), sum(CAST(c2_depth AS INT)) FROM q
    UNION ALL SELECT 7, 'c3 clinical alignment', count(judge), sum(CAST(c3_alignment AS INT)) FROM q
    UNION ALL SELECT 8, 'V(Q)', count(*), sum(CAST(valid AS INT)) FROM q
    UNION ALL SELECT 9, 'no PHI', count(*), sum(CAST(cardinality(phi) = 0 AS INT)) FROM q
    UNION ALL SELECT 10, 'not a near-duplicate', count(*), sum(CAST(duplicate_of IS NULL AS INT)) FROM q
    UNION ALL SELECT 11, 'kept (exported)', count(*), sum(CAST(kept AS INT)) FROM q
)
SELECT check_name,
       checked,
       coalesce(passed, 0) AS passed,
       checked - coalesce(passed, 0) AS failed,
       round(100.0 * coalesce(passed, 0) / nullif(checked, 0), 1) AS pass_percent
FROM checks
ORDER BY n;
