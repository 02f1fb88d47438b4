-- givcxr_regions: GIV-CXR's table 1 (paper 002): the exported QA pairs per anatomical region
-- with their share, the region's boxes (one per image and region: its region contexts) and the
-- average number of distinct reasoning aspects asked about a region context (the paper's "Avg
-- Aspects/Region"), most pairs first, with a total row.
WITH per_context AS (
    SELECT region, context_id, count(*) AS pairs, count(DISTINCT reasoning_aspect) AS aspects
    FROM givcxr_dataset
    GROUP BY region, context_id
),
per_region AS (
    SELECT region,
           sum(pairs) AS qa_pairs,
           count(*) AS bboxes,
           round(avg(aspects), 1) AS avg_aspects
    FROM per_context
    GROUP BY region
)
SELECT region, qa_pairs, percent, bboxes, avg_aspects
FROM (
    SELECT region, qa_pairs,
           round(100.0 * qa_pairs / sum(qa_pairs) OVER (), 1) AS percent,
           bboxes, avg_aspects, 0 AS total
    FROM per_region
    UNION ALL
    SELECT 'total', sum(pairs), 100.0, count(*), round(avg(aspects), 1), 1
    FROM per_context
)
ORDER BY total, qa_pairs DESC, region;
