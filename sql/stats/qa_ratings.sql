-- Ratings (paper 000, D.3) per question type: QA pairs per rating, and the fine-tuning
-- (A or better) and pre-training (B or better) shares. Ratings compare in rating order.
SELECT question_type,
       count(*) AS questions,
       sum(CASE WHEN rating = 'A++' THEN 1 ELSE 0 END) AS "A++",
       sum(CASE WHEN rating = 'A+' THEN 1 ELSE 0 END) AS "A+",
       sum(CASE WHEN rating = 'A' THEN 1 ELSE 0 END) AS "A",
       sum(CASE WHEN rating = 'B' THEN 1 ELSE 0 END) AS "B",
       sum(CASE WHEN rating = 'C' THEN 1 ELSE 0 END) AS "C",
       sum(CASE WHEN rating = 'D' THEN 1 ELSE 0 END) AS "D",
       sum(CASE WHEN rating = 'not rated' OR rating IS NULL THEN 1 ELSE 0 END) AS not_rated,
       round(100.0 * sum(CASE WHEN rating >= 'A' THEN 1 ELSE 0 END) / count(*), 1) AS ft_percent,
       round(100.0 * sum(CASE WHEN rating >= 'B' THEN 1 ELSE 0 END) / count(*), 1) AS pt_percent
FROM qa
GROUP BY question_type
ORDER BY question_type
