-- mimic_cxr_vqa_categories: paper 001 figure 1 — per category, the QA pairs by label value
-- (the "doubly balanced" shape: coverage across categories, positives against negatives), and
-- the linter's hits (answers with a prohibited comparison term or a reference to the report).
SELECT category,
       count(*) AS qa_pairs,
       sum(CASE WHEN label_value = '1.0' THEN 1 ELSE 0 END) AS positive,
       sum(CASE WHEN label_value = '0.0' THEN 1 ELSE 0 END) AS negative,
       sum(CASE WHEN label_value = 'NaN' THEN 1 ELSE 0 END) AS not_mentioned,
       sum(CASE WHEN label_value = '-1.0' THEN 1 ELSE 0 END) AS uncertain,
       sum(CASE WHEN prohibited_count > 0 THEN 1 ELSE 0 END) AS with_prohibited_terms,
       sum(CASE WHEN report_reference_count > 0 THEN 1 ELSE 0 END) AS with_report_references,
       sum(CASE WHEN NOT question_echoed THEN 1 ELSE 0 END) AS echo_mismatches
FROM mimic_cxr_vqa_qa
GROUP BY category
ORDER BY category
