-- qa: question-answer pairs from each scene graph (paper 000, section 3.2, E.2, D.2).
-- Inputs: scene_graphs (and, held by generate_qa, the templates/ folder and the qa_balance
-- table). Output: qa, one row per question; answers are flat (parent_answer_id,
-- answer_level), the JSON export nests them as sub_answers. Judged columns (question_quality,
-- rating, rating_rank, judge, answer_quality) stay NULL until the judge stage. Rows come in
-- scene-graph order (patients in id order, questions in template order); no sort, as a chunk
-- holds ~280 questions per study.

-- @table qa
-- unnest(q) flattens each generated question into the table's columns.
SELECT patient_id, study_id, extractor, embedder, unnest(q)
FROM (
    SELECT patient_id,
           study_id,
           extractor,
           embedder,
           unnest(generate_qa(named_struct('study_id', study_id,
                                           'observations', observations,
                                           'regions', regions,
                                           'indication', indication,
                                           'located_at_relations', located_at_relations,
                                           'obs_relations', obs_relations))) AS q
    FROM scene_graphs
)
