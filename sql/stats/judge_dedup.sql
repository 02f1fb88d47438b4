-- Judge content dedup (the judge stage's "criterion requests (5 per pair), judged … distinct
-- inputs"): per judge, the criterion requests of the lake's QA pairs (five criteria per pair),
-- the distinct inputs it judged without error (qa_judgements), and their ratio.
WITH pairs AS (SELECT count(*) AS n FROM qa)
SELECT judge,
       (SELECT n FROM pairs) AS qa_pairs,
       5 * (SELECT n FROM pairs) AS criterion_requests,
       count(*) AS distinct_inputs,
       round(1.0 * count(*) / nullif(5 * (SELECT n FROM pairs), 0), 4) AS dedup_ratio
FROM qa_judgements
WHERE error IS NULL
GROUP BY judge
ORDER BY judge
