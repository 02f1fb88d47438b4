-- GEMeX questions (T) and boxes (B) per split and question type, the shape of paper 004's table 2.
SELECT CASE WHEN grouping(split) = 1 THEN 'total' ELSE coalesce(split, '(none)') END AS split,
       count(*) FILTER (WHERE question_type = 'open-ended') AS open_t,
       sum(array_length(location)) FILTER (WHERE question_type = 'open-ended') AS open_b,
       count(*) FILTER (WHERE question_type = 'closed-ended') AS closed_t,
       sum(array_length(location)) FILTER (WHERE question_type = 'closed-ended') AS closed_b,
       count(*) FILTER (WHERE question_type = 'single-choice') AS single_t,
       sum(array_length(location)) FILTER (WHERE question_type = 'single-choice') AS single_b,
       count(*) FILTER (WHERE question_type = 'multi-choice') AS multi_t,
       sum(array_length(location)) FILTER (WHERE question_type = 'multi-choice') AS multi_b,
       count(DISTINCT image_id) AS images,
       round(count(*) * 1.0 / count(DISTINCT image_id), 2) AS questions_per_image
FROM gemex_qa
GROUP BY ROLLUP (split)
ORDER BY split = 'total', split
