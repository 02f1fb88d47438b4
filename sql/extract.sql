-- extract: sentences, raw observations and the indication of every report (paper 000, E.1.2).
-- Input: reports. Outputs: sentences, observations_raw, indications, and quarantine rows for LLM
-- outputs that could not be parsed or calls that failed.
--
-- The stage registers one backend under the names extract_sentences / extract_observations /
-- extract_indication: the rules backend by default, or the LLM backend (--llm-endpoint, --model),
-- whose calls are cached in llm_calls. $extractor is the backend's provenance, e.g. `rules-1` or
-- `llm:<model>@prompts-<version>`.
--
-- Each statement starts with a `-- @step <name>` line (its result is a table of that name for the
-- statements after it) or a `-- @table <name>` line (its result is also written to that lake
-- table; later statements read the new rows under that name).

-- @step extracted_sentences
-- Listing 1 per report: sentences with section, type, merge links and cluster.
SELECT patient_id, study_id, extract_sentences(text) AS r
FROM reports

-- @table sentences
-- unnest(s) flattens each sentence node into the table's columns.
SELECT patient_id, study_id, $extractor AS extractor, unnest(s)
FROM (SELECT patient_id, study_id, unnest(r['sentences']) AS s FROM extracted_sentences)

-- @step clusters
-- The FINDINGS and IMPRESSION sentences of each cluster, the unit of observation extraction.
SELECT patient_id,
       study_id,
       cluster_id,
       array_agg(sentence ORDER BY sent_id) AS sentences,
       array_agg(sent_id ORDER BY sent_id) AS sent_ids
FROM sentences
WHERE section_type IN ('FINDINGS', 'IMPRESSION')
GROUP BY patient_id, study_id, cluster_id

-- @step extracted_observations
-- Listing 3 per cluster.
SELECT patient_id, study_id, cluster_id, sent_ids, extract_observations(sentences) AS r
FROM clusters

-- @table observations_raw
-- Top-level observations are numbered O01, O02, … per study in cluster order; children get
-- their parent's id and their own number (O01.01).
WITH flat AS (
    SELECT patient_id, study_id, cluster_id, sent_ids, unnest(r['observations']) AS o
    FROM extracted_observations
),
numbered AS (
    SELECT *,
           'O' || lpad(CAST(dense_rank() OVER (PARTITION BY study_id
                                               ORDER BY cluster_id, o['index']) AS VARCHAR),
                       2, '0') AS top_id
    FROM flat
)
SELECT patient_id,
       study_id,
       obs_id,
       parent_obs_id,
       cluster_id,
       sent_ids,
       $extractor AS extractor,
       unnest(o)
FROM (
    SELECT *,
           CASE WHEN o['child'] = 0 THEN top_id
                ELSE top_id || '.' || lpad(CAST(o['child'] AS VARCHAR), 2, '0') END AS obs_id,
           CASE WHEN o['child'] = 0 THEN NULL ELSE top_id END AS parent_obs_id
    FROM numbered
)

-- @step indication_inputs
-- The INDICATION text of each study with its FINDINGS/IMPRESSION sentences and their ids.
SELECT patient_id,
       study_id,
       array_to_string(array_agg(sentence ORDER BY sent_id)
                       FILTER (WHERE section_type = 'INDICATION'), ' ') AS indication,
       array_agg(sent_id ORDER BY sent_id)
           FILTER (WHERE section_type IN ('FINDINGS', 'IMPRESSION')) AS finding_ids,
       array_agg(sentence ORDER BY sent_id)
           FILTER (WHERE section_type IN ('FINDINGS', 'IMPRESSION')) AS finding_sentences
FROM sentences
GROUP BY patient_id, study_id
HAVING count(*) FILTER (WHERE section_type = 'INDICATION') > 0

-- @step extracted_indications
-- Listing 5 per study with an indication.
SELECT patient_id,
       study_id,
       extract_indication(indication, finding_ids, finding_sentences) AS r
FROM indication_inputs

-- @table indications
-- unnest(r) flattens the indication node; two fields are named as listing 5 names them.
SELECT patient_id,
       study_id,
       associated_sentence_ids,
       parse_error,
       $extractor AS extractor,
       unnest(r)
FROM (
    SELECT patient_id,
           study_id,
           r,
           r['associated_findings'] AS associated_sentence_ids,
           r['error'] AS parse_error
    FROM extracted_indications
    WHERE r['indication_summary'] IS NOT NULL
       OR r['indication'] IS NOT NULL
       OR r['error'] IS NOT NULL
)

-- @table quarantine
-- Outputs that could not be parsed (with the output) and calls that failed; earlier extract
-- rows are replaced, other stages' rows kept (by the run's first chunk, which overwrites the
-- table). A scoped run ($full false) replaces only the rows of the studies in run_scope (the
-- location starts with the study id).
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'extract'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'extract', 'llm:sentences', study_id, r['error'], CAST(r['raw'] AS BYTEA), now()
FROM extracted_sentences
WHERE r['error'] IS NOT NULL
UNION ALL
SELECT 'extract', 'llm:observations', study_id || '/' || cluster_id, r['error'],
       CAST(r['raw'] AS BYTEA), now()
FROM extracted_observations
WHERE r['error'] IS NOT NULL
UNION ALL
SELECT 'extract', 'llm:indication', study_id, r['error'], CAST(r['raw'] AS BYTEA), now()
FROM extracted_indications
WHERE r['error'] IS NOT NULL
