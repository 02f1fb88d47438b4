-- Answer-part length distribution (words) by answer type and positiveness, and answer parts
-- per question.
WITH parts AS (
    SELECT a['answer_type'] AS answer_type,
           a['positiveness'] AS positiveness,
           a['from_report'] AS from_report,
           array_length(string_to_array(a['text'], ' ')) AS words
    FROM (SELECT unnest(answers) AS a FROM qa)
)
SELECT answer_type,
       positiveness,
       count(*) AS parts,
       round(avg(CASE WHEN from_report THEN 1.0 ELSE 0.0 END), 2) AS from_report_share,
       min(words) AS min_words,
       median(words) AS median_words,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY words) AS p90_words,
       max(words) AS max_words
FROM parts
GROUP BY answer_type, positiveness
ORDER BY answer_type, parts DESC, positiveness
