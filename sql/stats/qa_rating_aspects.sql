-- Which aspect limits the ratings: per text aspect (table 12) and level, the answer parts or
-- questions at that level, with the level's rating; the scene-graph levels of the questions.
SELECT 'entailment' AS aspect, a['answer_quality']['entailment'] AS level, count(*) AS n
FROM (SELECT unnest(answers) AS a FROM qa) GROUP BY 1, 2
UNION ALL
SELECT 'relevance', a['answer_quality']['relevance'], count(*)
FROM (SELECT unnest(answers) AS a FROM qa) GROUP BY 1, 2
UNION ALL
SELECT 'answer_clarity', a['answer_quality']['answer_clarity'], count(*)
FROM (SELECT unnest(answers) AS a FROM qa) GROUP BY 1, 2
UNION ALL
SELECT 'question_clarity', question_quality['question_clarity'], count(*) FROM qa GROUP BY 1, 2
UNION ALL
SELECT 'completeness', question_quality['completeness'], count(*) FROM qa GROUP BY 1, 2
UNION ALL
SELECT 'region_extract_quality', extraction_quality['region_extract_quality'], count(*)
FROM qa GROUP BY 1, 2
UNION ALL
SELECT 'entity_extract_quality', extraction_quality['entity_extract_quality'], count(*)
FROM qa GROUP BY 1, 2
UNION ALL
SELECT 'general_issue_level', extraction_quality['general_issue_level'], count(*)
FROM qa GROUP BY 1, 2
ORDER BY 1, 3 DESC, 2
