-- givcxr_hallucination: GIV-CXR's table 8 (paper 002): the generated QA pairs per anatomical
-- region, how many the judge flagged and the hallucination rate, highest rate first, with the
-- overall row (paper: 434,417 generated, 18.2 %); pairs the judge could not judge are counted
-- apart (they are rejected as not_judged, not as hallucinations).
WITH judged AS (
    SELECT q.region, v.is_hallucination
    FROM givcxr_qa q
    LEFT JOIN givcxr_verdicts v ON v.qa_id = q.qa_id
)
SELECT region, generated, hallucinated, not_judged, rate_percent
FROM (
    SELECT region,
           count(*) AS generated,
           sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END) AS hallucinated,
           sum(CASE WHEN is_hallucination IS NULL THEN 1 ELSE 0 END) AS not_judged,
           round(100.0 * sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END)
                 / greatest(count(is_hallucination), 1), 1) AS rate_percent,
           0 AS overall
    FROM judged
    GROUP BY region
    UNION ALL
    SELECT 'overall', count(*),
           sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END),
           sum(CASE WHEN is_hallucination IS NULL THEN 1 ELSE 0 END),
           round(100.0 * sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END)
                 / greatest(count(is_hallucination), 1), 1),
           1
    FROM judged
)
ORDER BY overall, rate_percent DESC, generated DESC, region;
