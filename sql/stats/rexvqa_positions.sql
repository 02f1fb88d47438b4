-- rexvqa_positions: where the correct answer of the kept ReXVQA MCQs is (A-D), after the
-- seeded option-position balancing, against the uniform 25 %, with the chi-square statistic of
-- the four counts (3 degrees of freedom: above 11.34 is a departure from uniform at p < 0.01).
WITH counts AS (
    SELECT CASE answer_index WHEN 0 THEN 'A' WHEN 1 THEN 'B' WHEN 2 THEN 'C' ELSE 'D' END
               AS correct_answer,
           count(*) AS mcqs
    FROM rexvqa_questions
    WHERE kept
    GROUP BY 1
),
total AS (SELECT sum(mcqs) / 4.0 AS expected FROM counts)
SELECT correct_answer,
       mcqs,
       round(100.0 * mcqs / (4 * expected), 1) AS percent,
       round(sum(power(mcqs - expected, 2) / expected) OVER (), 2) AS chi_square
FROM counts, total
ORDER BY correct_answer;
