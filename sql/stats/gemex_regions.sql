-- GEMeX regions: re-grounded sentences per region (paper 004, figure 5) and questions using it.
SELECT s.region,
       s.sentences,
       round(100.0 * s.sentences / sum(s.sentences) OVER (), 1) AS percent,
       coalesce(q.questions, 0) AS questions
FROM (SELECT region, count(*) AS sentences FROM gemex_sentences GROUP BY region) s
LEFT JOIN (
    SELECT region, count(*) AS questions
    FROM (SELECT unnest(regions) AS region FROM gemex_qa)
    GROUP BY region
) q ON q.region = s.region
ORDER BY s.sentences DESC
