-- givcxr_review: the radiologist review of GIV-CXR (paper 002: 2,487 validated pairs, 82.43 %
-- accepted, gold set 84.2 %): per reviewer and overall, the pairs reviewed (givcxr_reviews,
-- added with `cxrlake ratings add --flavour givcxr`), how many were accepted and the acceptance
-- rate, and how many of them the judge had flagged; the review queue's size for context.
WITH reviewed AS (
    SELECT r.reviewer, r.accepted, q.is_hallucination
    FROM givcxr_reviews r
    LEFT JOIN givcxr_review q ON q.qa_id = r.qa_id
)
SELECT reviewer, reviewed, accepted, acceptance_percent, judge_flagged, queue
FROM (
    SELECT reviewer,
           count(*) AS reviewed,
           sum(CASE WHEN accepted THEN 1 ELSE 0 END) AS accepted,
           round(100.0 * sum(CASE WHEN accepted THEN 1 ELSE 0 END) / count(*), 2) AS acceptance_percent,
           sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END) AS judge_flagged,
           (SELECT count(*) FROM givcxr_review) AS queue,
           0 AS overall
    FROM reviewed
    GROUP BY reviewer
    UNION ALL
    SELECT 'all', count(*),
           sum(CASE WHEN accepted THEN 1 ELSE 0 END),
           round(100.0 * sum(CASE WHEN accepted THEN 1 ELSE 0 END) / greatest(count(*), 1), 2),
           sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END),
           (SELECT count(*) FROM givcxr_review),
           1
    FROM reviewed
)
ORDER BY overall, reviewer;
