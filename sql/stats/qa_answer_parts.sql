-- Answer parts per QA pair (main answer, details, related information): how many QA pairs have
-- 1, 2, … parts, and their share.
SELECT CAST(array_length(answers) AS BIGINT) AS answer_parts,
       count(*) AS questions,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent
FROM qa
GROUP BY 1
ORDER BY 1
