-- finding_counts: a toy stage, defined in a test by this file and one StageDef, that the
-- pipeline runs like its own: positive and negative top-level observations per study.
-- Input: scene_graphs. Output: finding_counts.

-- @step observations
SELECT patient_id, study_id, unnest(observations) AS o
FROM scene_graphs

-- @table finding_counts
SELECT s.patient_id,
       s.study_id,
       count(o.o) FILTER (WHERE o.o['positiveness'] = 'pos' AND o.o['child_level'] = 0) AS positive,
       count(o.o) FILTER (WHERE o.o['positiveness'] = 'neg' AND o.o['child_level'] = 0) AS negative,
       $label AS label
FROM scene_graphs s
LEFT JOIN observations o ON o.study_id = s.study_id
GROUP BY s.patient_id, s.study_id
