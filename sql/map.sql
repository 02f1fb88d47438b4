-- map: observation nodes from the extracted observations (paper 000, E.1.3 "Entity Mapping" and
-- "Reference Data and Standardization"). Input: observations_raw. Output: observations.
--
-- map_observations() takes one study's raw observations in id order and
--   * matches regions (distances split off), finding entities (also as (region, entity) pairs,
--     the name, and the summary sentence as a last resort), modifiers and probabilities (one
--     pool: the matched tag decides the type), and changes onto the reference definitions with
--     the stage's embedder: an exact name/synonym match, else cosine top-1 >= the threshold;
--     unmatched regions and findings are kept as non_resolved_*, unmatched changes dropped;
--   * derives certainty and positiveness from the probability, laterality from keywords (else
--     the regions' sides), parents, categories, subcategories and default regions from the
--     findings;
--   * lifts children that split a multi-finding parent, merges duplicates, fills or refines
--     regions with the defaults, drops regions contradicting the laterality, splits or merges
--     bilateral versions, and grades every observation on table 11's extraction aspects.
-- match_concept(text, kind) is the same matcher for one tag, e.g.
--   SELECT match_concept('fluid in the pleural space', 'finding')['tag'].
-- $embedder is the embedder's id, recorded in every row.
--
-- Lists are ordered with array_sort over structs whose first field is the id: DataFusion 55's
-- array_agg(... ORDER BY ...) is ~10x slower on wide structs.

-- @step studies
SELECT patient_id,
       study_id,
       min(extractor) AS extractor,
       array_sort(array_agg(named_struct('obs_id', obs_id,
                              'child_type', child_type,
                              'name', name,
                              'entity', entity,
                              'probability', probability,
                              'change', change,
                              'summary_sentence', summary_sentence,
                              'change_sentence', change_sentence,
                              'regions', regions,
                              'modifiers', modifiers,
                              'sent_ids', sent_ids))) AS raw
FROM observations_raw
GROUP BY patient_id, study_id

-- @table observations
-- unnest(o) flattens each mapped observation into the table's columns.
SELECT patient_id, study_id, extractor, $embedder AS embedder, unnest(o)
FROM (
    SELECT patient_id, study_id, extractor, unnest(map_observations(raw)) AS o
    FROM studies
)
