-- GEMeX questions per content category and question type (paper 004, figure 4).
SELECT content_type,
       question_type,
       count(*) AS questions,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent
FROM gemex_qa
GROUP BY content_type, question_type
ORDER BY questions DESC
