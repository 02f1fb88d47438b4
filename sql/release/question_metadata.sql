-- question_metadata (index patient_id, study_id, question_id): type, strategy, text, answer
-- parts, the judged quality (integers) and the rating as <rank>_<grade> plus its numeric rank.
SELECT split,
       question_type AS "question.question_type",
       question_strategy AS "question.question_strategy",
       question AS "question.question",
       CAST(list_length(answers) AS BIGINT) AS "question.num_answers",
       contains_report_answers AS "question.contains_report_answers",
       contains_template_answers AS "question.contains_template_answers",
       release_rating(rating) AS "question.quality.rating",
       rating_rank AS "question.quality.rating_rank",
       quality_value('question_clarity', question_quality['question_clarity']) AS "question.quality.question_clarity",
       quality_value('completeness', question_quality['completeness']) AS "question.quality.completeness",
       quality_value('region_extract_quality', extraction_quality['region_extract_quality']) AS "question.quality.region_extract_quality",
       quality_value('entity_extract_quality', extraction_quality['entity_extract_quality']) AS "question.quality.entity_extract_quality",
       quality_value('sentence_name_quality', extraction_quality['sentence_name_quality']) AS "question.quality.sentence_name_quality",
       quality_value('change_quality', extraction_quality['change_quality']) AS "question.quality.change_quality",
       quality_value('general_issue_level', extraction_quality['general_issue_level']) AS "question.quality.general_issue_level",
       patient_id, study_id, question_id
FROM release_qa
