-- Unique question and answer texts and their duplication factors per strategy (paper 000,
-- table 3): questions / unique question texts, answer parts / unique answer-part texts.
WITH parts AS (
    SELECT question_strategy, unnest(answers)['text'] AS text FROM qa
)
SELECT q.question_strategy,
       q.questions,
       q.unique_questions,
       round(1.0 * q.questions / q.unique_questions, 1) AS question_duplication,
       a.answer_parts,
       a.unique_answer_parts,
       round(1.0 * a.answer_parts / a.unique_answer_parts, 1) AS answer_duplication
FROM (SELECT question_strategy, count(*) AS questions, count(DISTINCT question) AS unique_questions
      FROM qa GROUP BY question_strategy) q
JOIN (SELECT question_strategy, count(*) AS answer_parts, count(DISTINCT text) AS unique_answer_parts
      FROM parts GROUP BY question_strategy) a USING (question_strategy)
ORDER BY q.question_strategy
