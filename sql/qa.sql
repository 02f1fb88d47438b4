-- qa: question-answer pairs from each scene graph (paper 000, section 3.2, E.2, D.2).
-- Inputs: scene_graphs (and, held by generate_qa, the templates/ folder and the qa_balance
-- table). Output: qa, one row per question; answers are flat (parent_answer_id,
-- answer_level), the JSON export nests them as sub_answers. Judged columns (question_quality,
-- rating, rating_rank, judge, answer_quality) stay NULL until the judge stage. Rows come in
-- scene-graph order (patients in id order, questions in template order); no sort, as a chunk
-- holds ~280 questions per study.

-- @table qa
SELECT patient_id,
       study_id,
       q['question_id'] AS question_id,
       q['question_type'] AS question_type,
       q['question_strategy'] AS question_strategy,
       q['variables'] AS variables,
       q['obs_ids'] AS obs_ids,
       q['contains_report_answers'] AS contains_report_answers,
       q['contains_template_answers'] AS contains_template_answers,
       q['extraction_quality'] AS extraction_quality,
       q['question_img_localization_quality'] AS question_img_localization_quality,
       q['question'] AS question,
       q['answers'] AS answers,
       extractor,
       embedder
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
