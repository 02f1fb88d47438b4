-- mimic_cxr_vqa_questions: the questions of the MIMIC-CXR-VQA flavour (paper 001, section 3.1,
-- table 2): for every study with a FINDINGS (else IMPRESSION) section, its 14 CheXpert labels
-- and the derived Heart label, and per (study, category) the questions the bank's sampling gives
-- the label's value (templates/mimic_cxr_vqa/questions.toml): positives, negatives and uncertain
-- labels ask several of the six phrasings, NaN ("not mentioned") labels a few as the paper's
-- balancing negatives, Heart (the report says "heart") only as 1.0.
-- Inputs: reports (the heart rule reads the whole text), sentences (the sections), chexpert_labels
-- (labeler `chexpert`; a study without a row has every label NaN), images (split, views).
-- Output: mimic_cxr_vqa_reports (the text the answers come from), mimic_cxr_vqa_questions, and a
-- quarantine row per study left out for want of a FINDINGS or IMPRESSION section.
--
-- $bank is the bank's version; mimic_cxr_vqa_sample() draws with cxrlake.seed, so a rerun asks
-- the same questions and a study's questions change only with its own labels.

-- @step report_text
SELECT study_id,
       string_agg(CASE WHEN section_type = 'INDICATION' THEN sentence END, ' ' ORDER BY sent_id)
           AS indication,
       string_agg(CASE WHEN section_type = 'FINDINGS' THEN sentence END, ' ' ORDER BY sent_id)
           AS findings,
       string_agg(CASE WHEN section_type = 'IMPRESSION' THEN sentence END, ' ' ORDER BY sent_id)
           AS impression
FROM sentences
GROUP BY study_id

-- @step study_images
-- A study's images with their view positions (AP, PA, LATERAL, …) and its split (the official
-- split is by patient, so every image of a study has the same).
SELECT study_id,
       min(split) AS split,
       array_agg(named_struct('image_id', image_id, 'view_position', view_position)
                 ORDER BY image_id) AS images
FROM images
GROUP BY study_id

-- @step studies
SELECT r.patient_id,
       r.study_id,
       i.split,
       t.indication,
       coalesce(t.findings, t.impression) AS findings,
       CASE WHEN t.findings IS NOT NULL THEN 'FINDINGS' ELSE 'IMPRESSION' END AS findings_section,
       i.images,
       coalesce(mimic_cxr_vqa_heart(r.text), false) AS heart
FROM reports r
LEFT JOIN report_text t ON t.study_id = r.study_id
LEFT JOIN study_images i ON i.study_id = r.study_id

-- @table mimic_cxr_vqa_reports
SELECT patient_id, study_id, split, indication, findings, findings_section, images
FROM studies
WHERE findings IS NOT NULL

-- @step cells
-- One row per (study, category) with the label's value (NULL: not mentioned).
SELECT patient_id, study_id, split, images, c['category'] AS category, c['value'] AS value
FROM (
    SELECT s.patient_id,
           s.study_id,
           s.split,
           s.images,
           unnest(make_array(
               named_struct('category', 'atelectasis', 'value', CAST(l.atelectasis AS DOUBLE)),
               named_struct('category', 'cardiomegaly', 'value', CAST(l.cardiomegaly AS DOUBLE)),
               named_struct('category', 'consolidation', 'value', CAST(l.consolidation AS DOUBLE)),
               named_struct('category', 'edema', 'value', CAST(l.edema AS DOUBLE)),
               named_struct('category', 'enlarged_cardiomediastinum', 'value', CAST(l.enlarged_cardiomediastinum AS DOUBLE)),
               named_struct('category', 'fracture', 'value', CAST(l.fracture AS DOUBLE)),
               named_struct('category', 'lung_lesion', 'value', CAST(l.lung_lesion AS DOUBLE)),
               named_struct('category', 'lung_opacity', 'value', CAST(l.lung_opacity AS DOUBLE)),
               named_struct('category', 'no_finding', 'value', CAST(l.no_finding AS DOUBLE)),
               named_struct('category', 'pleural_effusion', 'value', CAST(l.pleural_effusion AS DOUBLE)),
               named_struct('category', 'pleural_other', 'value', CAST(l.pleural_other AS DOUBLE)),
               named_struct('category', 'pneumonia', 'value', CAST(l.pneumonia AS DOUBLE)),
               named_struct('category', 'pneumothorax', 'value', CAST(l.pneumothorax AS DOUBLE)),
               named_struct('category', 'support_devices', 'value', CAST(l.support_devices AS DOUBLE)),
               named_struct('category', 'heart',
                            'value', CASE WHEN s.heart THEN CAST(1.0 AS DOUBLE) END)
           )) AS c
    FROM studies s
    LEFT JOIN chexpert_labels l ON l.study_id = s.study_id AND l.labeler = 'chexpert'
    WHERE s.findings IS NOT NULL
)

-- @step sampled
SELECT patient_id,
       study_id,
       split,
       images,
       category,
       value,
       unnest(mimic_cxr_vqa_sample(named_struct('study_id', study_id,
                                                'category', category,
                                                'value', value))) AS q
FROM cells

-- @table mimic_cxr_vqa_questions
SELECT patient_id,
       study_id,
       split,
       study_id || '_' || q['template_id'] AS question_id,
       category,
       CASE WHEN value IS NULL OR isnan(value) THEN 'NaN'
            WHEN value = 1 THEN '1.0'
            WHEN value = 0 THEN '0.0'
            ELSE '-1.0' END AS label_value,
       q['template_id'] AS template_id,
       q['question'] AS question,
       images,
       $bank AS bank
FROM sampled

-- @table quarantine
-- Studies left out (no FINDINGS or IMPRESSION section); earlier rows of this stage for the
-- studies run are replaced, other rows kept.
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'mimic_cxr_vqa_questions'
       OR (NOT $full AND location NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'mimic_cxr_vqa_questions', 'sentences', study_id,
       'the report has no FINDINGS or IMPRESSION section: paper 001 answers from the findings, so the study gets no questions (check the section headers of its report)',
       CAST(NULL AS BYTEA), now()
FROM studies
WHERE findings IS NULL
