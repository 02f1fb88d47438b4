-- The lake at a glance: patients and studies with a scene graph, images, QA pairs and their
-- answer parts.
SELECT (SELECT count(DISTINCT patient_id) FROM scene_graphs) AS patients,
       (SELECT count(*) FROM scene_graphs) AS studies,
       (SELECT count(*) FROM images) AS images,
       (SELECT count(*) FROM qa) AS qa_pairs,
       (SELECT coalesce(sum(array_length(answers)), 0) FROM qa) AS answer_parts
