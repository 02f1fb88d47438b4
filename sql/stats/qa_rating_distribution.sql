-- Rating distribution (paper 000, fig. 4a): QA pairs and main answers (the first answer part)
-- per rating, best first, with their shares; every rating is listed, also when none has it.
WITH questions AS (
    SELECT coalesce(rating, 'not rated') AS rating, count(*) AS n FROM qa GROUP BY 1
),
main_answers AS (
    SELECT coalesce(answers[1]['answer_quality']['rating'], 'not rated') AS rating, count(*) AS n
    FROM qa GROUP BY 1
),
levels AS (
    SELECT * FROM (VALUES ('A++', 6), ('A+', 5), ('A', 4), ('B', 3), ('C', 2), ('D', 1),
                          ('not rated', 0)) AS t(rating, rank)
)
SELECT l.rating,
       coalesce(q.n, 0) AS questions,
       round(100.0 * coalesce(q.n, 0) / nullif((SELECT sum(n) FROM questions), 0), 1) AS percent,
       coalesce(m.n, 0) AS main_answers,
       round(100.0 * coalesce(m.n, 0) / nullif((SELECT sum(n) FROM main_answers), 0), 1)
           AS main_answer_percent
FROM levels l
LEFT JOIN questions q ON q.rating = l.rating
LEFT JOIN main_answers m ON m.rating = l.rating
ORDER BY l.rank DESC
