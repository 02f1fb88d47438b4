-- givcxr_findings: GIV-CXR's table 2 (paper 002): the exported QA pairs per clinical finding,
-- multi-label as in the paper: a pair counts for every finding present in its region context
-- (`normal` for a context without findings), so the percentages sum to more than 100; with the
-- pairs whose own clinical_finding it is.
WITH labels AS (
    SELECT d.qa_id, d.clinical_finding,
           CASE WHEN r.abnormal THEN r.findings ELSE make_array('normal') END AS findings
    FROM givcxr_dataset d
    JOIN givcxr_regions r ON r.context_id = d.context_id
),
total AS (SELECT count(*) AS n FROM labels)
SELECT finding,
       count(*) AS qa_pairs,
       round(100.0 * count(*) / max(total.n), 1) AS percent,
       sum(CASE WHEN clinical_finding = finding THEN 1 ELSE 0 END) AS as_clinical_finding
FROM (SELECT qa_id, clinical_finding, unnest(findings) AS finding FROM labels)
CROSS JOIN total
GROUP BY finding
ORDER BY qa_pairs DESC, finding;
