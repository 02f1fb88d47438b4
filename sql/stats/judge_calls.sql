-- Judge calls with content dedup: per judge and criterion, the naive calls (one per QA pair)
-- against the distinct inputs judged (qa_judgements rows without error), and their ratio.
WITH pairs AS (SELECT count(*) AS n FROM qa)
SELECT judge,
       criterion,
       (SELECT n FROM pairs) AS naive_calls,
       count(*) AS judged_inputs,
       round(100.0 * count(*) / (SELECT n FROM pairs), 2) AS percent
FROM qa_judgements
WHERE error IS NULL
GROUP BY judge, criterion
ORDER BY judge, criterion
