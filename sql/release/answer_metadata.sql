-- answer_metadata (index patient_id, study_id, question_id, answer_id): one row per answer part
-- (sub-answers included: parent_answer_id, answer_level), its tags and judged quality. Answer ids
-- count from 1 as in the release's files (the lake's from 0).
SELECT split,
       a['answer_type'] AS "answer.answer_type",
       a['answer_level'] AS "answer.answer_level",
       a['parent_answer_id'] + 1 AS "answer.parent_answer_id",
       a['text'] AS "answer.text",
       a['name_tag'] AS "answer.name_tag",
       a['laterality'] AS "answer.laterality",
       a['certainty'] AS "answer.certainty",
       a['positiveness'] AS "answer.positiveness",
       a['from_report'] AS "answer.from_report",
       CAST(coalesce(list_length(a['regions']), 0) AS BIGINT) AS "answer.num_regions",
       CAST(coalesce(list_length(a['localization']), 0) AS BIGINT) AS "answer.num_localized_images",
       release_rating(a['answer_quality']['rating']) AS "answer.quality.rating",
       rating_rank(a['answer_quality']['rating']) AS "answer.quality.rating_rank",
       quality_value('entailment', a['answer_quality']['entailment']) AS "answer.quality.entailment",
       quality_value('relevance', a['answer_quality']['relevance']) AS "answer.quality.relevance",
       quality_value('answer_clarity', a['answer_quality']['answer_clarity']) AS "answer.quality.answer_clarity",
       patient_id, study_id, question_id, a['answer_id'] + 1 AS answer_id
FROM (SELECT patient_id, study_id, question_id, split, unnest(answers) AS a FROM release_qa)
