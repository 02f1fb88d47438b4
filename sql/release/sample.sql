-- A reproducible sample of the release's questions (q1M): hash(seed $1, study, question) < p
-- ($2 = sample size / questions), so a rerun gives the same sample and a slightly different p
-- changes few rows. release_population is one per-question metadata table (question,
-- question_image, answer, answer_image): the sample keeps the sampled questions' rows of each.
SELECT * FROM release_population WHERE sample_hash($1, study_id, question_id) < $2
