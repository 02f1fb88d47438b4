-- rexvqa_tasks: the kept ReXVQA MCQs per task type and difficulty tier (paper 003: five task
-- types; easy / medium / hard assigned at generation), with their share and how many of them
-- the stratified QC sample holds (paper: 100 per 1,000, even across the tiers).
SELECT task_type,
       difficulty,
       count(*) AS mcqs,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent,
       sum(CAST(qc_sample AS INT)) AS qc_sample
FROM rexvqa_questions
WHERE kept
GROUP BY task_type, difficulty
ORDER BY task_type, CASE difficulty WHEN 'easy' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END;
