-- Which aspect limits the ratings: per text aspect (table 12) and level, the answer parts or
-- questions at that level, with the level's rating; the scene-graph levels of the questions.
-- One scan per level of nesting: the grouping sets count each aspect's levels side by side.
WITH parts AS (
    SELECT a['answer_quality']['entailment'] AS entailment,
           a['answer_quality']['relevance'] AS relevance,
           a['answer_quality']['answer_clarity'] AS answer_clarity
    FROM (SELECT unnest(answers) AS a FROM qa)
),
questions AS (
    SELECT question_quality['question_clarity'] AS question_clarity,
           question_quality['completeness'] AS completeness,
           extraction_quality['region_extract_quality'] AS region_extract_quality,
           extraction_quality['entity_extract_quality'] AS entity_extract_quality,
           extraction_quality['general_issue_level'] AS general_issue_level
    FROM qa
)
SELECT CASE WHEN grouping(entailment) = 0 THEN 'entailment'
            WHEN grouping(relevance) = 0 THEN 'relevance'
            ELSE 'answer_clarity' END AS aspect,
       CASE WHEN grouping(entailment) = 0 THEN entailment
            WHEN grouping(relevance) = 0 THEN relevance
            ELSE answer_clarity END AS level,
       count(*) AS n
FROM parts
GROUP BY GROUPING SETS ((entailment), (relevance), (answer_clarity))
UNION ALL
SELECT CASE WHEN grouping(question_clarity) = 0 THEN 'question_clarity'
            WHEN grouping(completeness) = 0 THEN 'completeness'
            WHEN grouping(region_extract_quality) = 0 THEN 'region_extract_quality'
            WHEN grouping(entity_extract_quality) = 0 THEN 'entity_extract_quality'
            ELSE 'general_issue_level' END,
       CASE WHEN grouping(question_clarity) = 0 THEN question_clarity
            WHEN grouping(completeness) = 0 THEN completeness
            WHEN grouping(region_extract_quality) = 0 THEN region_extract_quality
            WHEN grouping(entity_extract_quality) = 0 THEN entity_extract_quality
            ELSE general_issue_level END,
       count(*)
FROM questions
GROUP BY GROUPING SETS ((question_clarity), (completeness), (region_extract_quality),
                        (entity_extract_quality), (general_issue_level))
ORDER BY 1, 3 DESC, 2
