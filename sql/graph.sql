-- graph: one nested scene graph per study (paper 000, E.1.3 "Graph Construction", D.1).
-- Inputs: sentences, observations, indications, region_boxes, images. Output: scene_graphs.
--
-- graph_regions() lists a study's region nodes (the observations' regions, their bilateral
-- versions, every ancestor in the reference region tree, and the key regions lungs, left lung,
-- right lung, heart, mediastinum), so only those region_boxes rows are read. build_scene_graph()
-- adds per-image localization to every observation and region node, the relations
-- (located_at: direct / sub_region / bilateral; obs; obs_sent; region_region: sub_region /
-- left / right / bilateral), the indication's associated observations and its OIND node, and
-- the study's quality (worst level per aspect) and per-image localization quality.
--
-- Lists are ordered with array_sort over structs whose first field is the id: DataFusion 55's
-- array_agg(... ORDER BY ...) is ~10x slower on wide structs.

-- @step studies
-- Every study with a report, with its sentence nodes.
SELECT patient_id,
       study_id,
       min(extractor) AS extractor,
       array_sort(array_agg(named_struct('sent_id', sent_id,
                              'section', section,
                              'section_type', section_type,
                              'sentence', sentence))) AS sentences
FROM sentences
GROUP BY patient_id, study_id

-- @step study_observations
SELECT s.patient_id,
       s.study_id,
       s.extractor,
       s.sentences,
       o.observations,
       o.embedder
FROM studies s
LEFT JOIN (
    SELECT study_id,
           min(embedder) AS embedder,
           array_sort(array_agg(named_struct('obs_id', obs_id,
                                  'summary_sentence', summary_sentence,
                                  'name', name,
                                  'child_level', child_level,
                                  'child_type', child_type,
                                  'regions', regions,
                                  'non_resolved_regions', non_resolved_regions,
                                  'laterality', laterality,
                                  'default_regions', default_regions,
                                  'obs_entities', obs_entities,
                                  'obs_entities_parents', obs_entities_parents,
                                  'non_resolved_obs_entities', non_resolved_obs_entities,
                                  'obs_categories', obs_categories,
                                  'obs_subcategories', obs_subcategories,
                                  'probability', probability,
                                  'certainty', certainty,
                                  'positiveness', positiveness,
                                  'modifiers', modifiers,
                                  'change_sentence', change_sentence,
                                  'changes', changes,
                                  'from_report', from_report,
                                  'obs_quality', obs_quality,
                                  'sent_ids', sent_ids))) AS observations
    FROM observations
    GROUP BY study_id
) o ON o.study_id = s.study_id

-- @step graph_region_names
SELECT study_id, unnest(graph_regions(observations)) AS region
FROM study_observations

-- @step study_boxes
SELECT g.study_id,
       array_agg(named_struct('image_id', b.image_id,
                              'region', b.region,
                              'bboxes', b.bboxes,
                              'localization_reference_ids', b.localization_reference_ids,
                              'missing_localization', b.missing_localization,
                              'is_fallback', b.is_fallback,
                              'localization_quality', b.localization_quality)) AS boxes
FROM graph_region_names g
JOIN region_boxes b ON b.study_id = g.study_id AND b.region = g.region
GROUP BY g.study_id

-- @step study_images
SELECT study_id, array_agg(image_id ORDER BY image_id) AS images
FROM images
GROUP BY study_id

-- @table scene_graphs
WITH built AS (
    SELECT o.patient_id,
           o.study_id,
           o.extractor,
           o.embedder,
           o.sentences,
           i.study_id IS NOT NULL AS has_indication,
           i.indication_summary,
           i.patient_info,
           i.indication,
           i.evaluation,
           i.associated_sentence_ids,
           build_scene_graph(
               o.observations,
               CASE WHEN i.study_id IS NULL THEN NULL
                    ELSE named_struct('associated_sentence_ids', i.associated_sentence_ids,
                                      'answer_for_indication', i.answer_for_indication,
                                      'evaluation', i.evaluation) END,
               b.boxes,
               im.images) AS g
    FROM study_observations o
    LEFT JOIN (SELECT * FROM indications WHERE parse_error IS NULL) i ON i.study_id = o.study_id
    LEFT JOIN study_boxes b ON b.study_id = o.study_id
    LEFT JOIN study_images im ON im.study_id = o.study_id
)
-- unnest(g) flattens the assembled graph into the table's columns; the indication node joins
-- the indications row with the observations the assembly associated with it.
SELECT patient_id, study_id, sentences, indication, extractor, embedder, unnest(g)
FROM (
    SELECT patient_id,
           study_id,
           sentences,
           CASE WHEN has_indication THEN
               named_struct('indication_summary', indication_summary,
                            'patient_info', patient_info,
                            'indication', indication,
                            'evaluation', evaluation,
                            'associated_sentence_ids', associated_sentence_ids,
                            'associated_obs_ids', g['associated_obs_ids'],
                            'answer_for_indication', g['answer_for_indication'])
           END AS indication,
           extractor,
           coalesce(embedder, $embedder) AS embedder,
           g
    FROM built
)
