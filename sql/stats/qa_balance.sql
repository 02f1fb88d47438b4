-- Positive/negative balance of the region and finding questions: per region (C01–C04) and per
-- finding (D01–D07), how many questions have a positive main answer (the region is abnormal,
-- the finding present) and how many a negative one, next to how often the item is mentioned
-- positively / negatively in the scene graphs (qa_balance).
WITH main AS (
    SELECT question_strategy,
           trim(both '"' from variables[CAST(array_length(variables) AS BIGINT)]['value_json']) AS item,
           answers[1]['positiveness'] AS positiveness
    FROM qa
    WHERE question_strategy IN ('region_abnormal', 'finding')
      AND answers[1]['from_report'] = false
)
SELECT CASE question_strategy WHEN 'finding' THEN 'finding' ELSE 'region' END AS kind,
       item,
       count(*) FILTER (WHERE positiveness = 'pos') AS pos_questions,
       count(*) FILTER (WHERE positiveness = 'neg') AS neg_questions,
       round(1.0 * count(*) FILTER (WHERE positiveness = 'pos') / count(*), 3) AS pos_share,
       max(b.pos_studies) AS pos_mentions,
       max(b.neg_studies) AS neg_mentions
FROM main
LEFT JOIN qa_balance b
  ON b.kind = CASE question_strategy WHEN 'finding' THEN 'finding' ELSE 'region' END
 AND b.name = main.item
GROUP BY 1, 2
ORDER BY 1, count(*) DESC, 2
