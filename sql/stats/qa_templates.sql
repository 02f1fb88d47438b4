-- Questions per template: total, per study (all studies with a scene graph) and share.
-- Compare with the released dataset: C07/C08 ≈ 20 per study, B08–B10 ≈ 11, A ≈ 1 per study
-- with an indication.
SELECT question_type,
       question_strategy,
       count(*) AS questions,
       round(count(*) * 1.0 / (SELECT count(*) FROM scene_graphs), 2) AS per_study,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent
FROM qa
GROUP BY question_type, question_strategy
ORDER BY question_type
