-- mimic_cxr_vqa_table2: paper 001 table 2 — per CheXpert label value, the label cells of the
-- `chexpert` labeler over all studies, the questions the MIMIC-CXR-VQA flavour asked for them
-- (mimic_cxr_vqa_questions, Heart apart) and the questions per label cell (paper: 3.75 for 1.0,
-- 2.30 for 0.0, 0.42 for NaN, 3.22 for -1.0); the Heart label (1.0 by the report rule) last.
WITH cells AS (
    SELECT unnest(make_array(
                       CAST(atelectasis AS DOUBLE),
                       CAST(cardiomegaly AS DOUBLE),
                       CAST(consolidation AS DOUBLE),
                       CAST(edema AS DOUBLE),
                       CAST(enlarged_cardiomediastinum AS DOUBLE),
                       CAST(fracture AS DOUBLE),
                       CAST(lung_lesion AS DOUBLE),
                       CAST(lung_opacity AS DOUBLE),
                       CAST(no_finding AS DOUBLE),
                       CAST(pleural_effusion AS DOUBLE),
                       CAST(pleural_other AS DOUBLE),
                       CAST(pneumonia AS DOUBLE),
                       CAST(pneumothorax AS DOUBLE),
                       CAST(support_devices AS DOUBLE)
           )) AS value
    FROM chexpert_labels
    WHERE labeler = 'chexpert'
),
label_counts AS (
    SELECT CASE WHEN value IS NULL OR isnan(value) THEN 'NaN'
                WHEN value = 1 THEN '1.0'
                WHEN value = 0 THEN '0.0'
                ELSE '-1.0' END AS value,
           count(*) AS label_count
    FROM cells
    GROUP BY 1
),
question_counts AS (
    SELECT CASE WHEN category = 'heart' THEN 'heart' ELSE label_value END AS value,
           count(*) AS questions,
           count(DISTINCT study_id || '/' || category) AS cells_asked
    FROM mimic_cxr_vqa_questions
    GROUP BY 1
),
heart AS (
    SELECT 'heart' AS value, count(DISTINCT study_id) AS label_count
    FROM mimic_cxr_vqa_questions
    WHERE category = 'heart'
)
SELECT v.value,
       CASE v.value WHEN '1.0' THEN 'Positive Finding'
                    WHEN '0.0' THEN 'Negative Finding'
                    WHEN 'NaN' THEN 'Not mentioned (balancing negative)'
                    WHEN '-1.0' THEN 'Uncertain Finding'
                    ELSE 'Heart (report says "heart")' END AS meaning,
       coalesce(v.label_count, 0) AS label_count,
       coalesce(q.questions, 0) AS questions,
       round(CAST(coalesce(q.questions, 0) AS DOUBLE) / nullif(v.label_count, 0), 2)
           AS questions_per_label
FROM (SELECT * FROM label_counts UNION ALL SELECT * FROM heart) v
LEFT JOIN question_counts q ON q.value = v.value
ORDER BY CASE v.value WHEN '1.0' THEN 0 WHEN '0.0' THEN 1 WHEN 'NaN' THEN 2 WHEN '-1.0' THEN 3
                      ELSE 4 END
