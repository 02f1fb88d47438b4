-- mimic_cxr_vqa_table3: paper 001 table 3 (large-scale part) — per judge, rubric and level, the
-- judged QA pairs of the QC sample and their share (paper, DeepSeek-R1 on 33,130 pairs: Correct
-- 94.53 %, Fully Consistent 90.96 %, Complete 74.41 %, Essential 83.56 %).
WITH levels AS (
    SELECT judge, 1 AS r, 'correctness' AS rubric, correctness AS level FROM mimic_cxr_vqa_judgements
    UNION ALL
    SELECT judge, 2, 'consistency', consistency FROM mimic_cxr_vqa_judgements
    UNION ALL
    SELECT judge, 3, 'completeness', completeness FROM mimic_cxr_vqa_judgements
    UNION ALL
    SELECT judge, 4, 'relevance', relevance FROM mimic_cxr_vqa_judgements
)
SELECT judge,
       rubric,
       level,
       count(*) AS pairs,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY judge, rubric), 2) AS percent
FROM levels
GROUP BY judge, r, rubric, level
ORDER BY judge, r,
         CASE level WHEN 'Correct' THEN 0 WHEN 'Fully Consistent' THEN 0 WHEN 'Complete' THEN 0
                    WHEN 'Essential' THEN 0 WHEN 'Partially Consistent' THEN 1
                    WHEN 'Partially Complete' THEN 1 WHEN 'Non-essential but Correct' THEN 1
                    ELSE 2 END
